package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The ledger is how install marks what it wrote. A mark inside the
// clients' files is not an option for all of them: four of the seven read
// strict JSON (no comments) through schemas of their own, and Codex's
// schema denies unknown keys. So the mark lives in mcpgate's own folder
// (installs.json beside the token cache): for each file and server name,
// the keys install wrote, and how to give the file back byte for byte.

// record is what install wrote into one file under one name.
type record struct {
	File  string         `json:"file"`
	Name  string         `json:"name"`
	Entry map[string]any `json:"entry"` // the owned keys as written
	// Undo gives back the file as it was before install, as long as the
	// file is still exactly what install left (its SHA-256 is After).
	Undo *undo `json:"undo,omitempty"`
}

// undo is the pre-install file as a splice of the post-install one: the
// bytes between Prefix and len-Suffix were Removed. Created: there was no
// file.
type undo struct {
	After   string `json:"after_sha256"`
	Prefix  int    `json:"prefix"`
	Suffix  int    `json:"suffix"`
	Removed string `json:"removed"`
	Created bool   `json:"created,omitempty"`
}

type ledger struct {
	Records []record `json:"records"`
}

func stateDir(env Env) string { return filepath.Join(env.appConfigDir(), "mcpgate") }

func ledgerPath(env Env) string { return filepath.Join(stateDir(env), "installs.json") }

// lockPath is the lock every install and uninstall of this user takes:
// they are rare and quick, so one lock for all files keeps the ledger and
// the files in step.
func lockPath(env Env) string { return filepath.Join(stateDir(env), "install.lock") }

func loadLedger(env Env) (*ledger, error) {
	l := &ledger{}
	b, err := os.ReadFile(ledgerPath(env))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("install: %s is damaged (%v); remove it (install then treats its entries as not its own)", ledgerPath(env), err)
	}
	return l, nil
}

func (l *ledger) find(file, name string) *record {
	for i := range l.Records {
		if l.Records[i].File == file && l.Records[i].Name == name {
			return &l.Records[i]
		}
	}
	return nil
}

func (l *ledger) forget(file, name string) {
	out := l.Records[:0]
	for _, r := range l.Records {
		if r.File != file || r.Name != name {
			out = append(out, r)
		}
	}
	l.Records = out
}

func (l *ledger) put(r record) {
	l.forget(r.File, r.Name)
	l.Records = append(l.Records, r)
}

func (l *ledger) save(env Env) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir(env), 0o700); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return writeAtomic(ledgerPath(env), append(b, '\n'), 0o600, nil)
}

// ours says whether the entry is the one install wrote: the ledger has it,
// with the same keys.
func (l *ledger) ours(file, name string, entry map[string]any) bool {
	r := l.find(file, name)
	return r != nil && sameOwned(entry, r.Entry)
}

// sameOwned compares the keys install writes of two entries.
func sameOwned(a, b map[string]any) bool {
	for _, k := range owned {
		if !equalJSON(normal(a[k]), normal(b[k])) {
			return false
		}
	}
	return true
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// makeUndo records how to get from after back to before.
func makeUndo(before, after []byte, created bool) *undo {
	p := 0
	for p < len(before) && p < len(after) && before[p] == after[p] {
		p++
	}
	s := 0
	for s < len(before)-p && s < len(after)-p && before[len(before)-1-s] == after[len(after)-1-s] {
		s++
	}
	return &undo{After: digest(after), Prefix: p, Suffix: s, Removed: string(before[p : len(before)-s]), Created: created}
}

// apply gives back the file before install, when cur is still what
// install left.
func (u *undo) apply(cur []byte) ([]byte, bool) {
	if u == nil || digest(cur) != u.After || u.Prefix+u.Suffix > len(cur) {
		return nil, false
	}
	var b bytes.Buffer
	b.Write(cur[:u.Prefix])
	b.WriteString(u.Removed)
	b.Write(cur[len(cur)-u.Suffix:])
	return b.Bytes(), true
}
