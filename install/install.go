package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/pelletier/go-toml/v2"
)

// Entry says what to install.
type Entry struct {
	// Name is the server's name in the client's file; default "mcpgate".
	Name string
	// URL is the gateway's MCP endpoint, https://HOST/mcp.
	URL string
	// Bridge makes a stdio entry that runs Command bridge --url URL even
	// for a client that can reach the URL itself (a client whose own OAuth
	// support does not work with the authorization server).
	Bridge bool
	// Command is the mcpgate executable a bridge entry runs; an absolute
	// path, since clients start servers without the user's shell PATH.
	Command string
	// BridgeArgs follow "bridge --url URL" in a bridge entry (--ca-file,
	// --cache, with absolute paths).
	BridgeArgs []string
	// Force replaces (install) or removes (uninstall) an entry of that
	// name that install did not write.
	Force bool
	// AnyPath accepts a URL whose path does not end in /mcp.
	AnyPath bool
	// Local makes a stdio entry that runs Command bridge --socket: the
	// gateway on this machine's Unix socket, started on first use, for
	// every client; URL is not used.
	Local bool
	// Socket is the socket a Local entry names; "" is the default one.
	Socket string
}

// ErrNoProjectFile is returned for a Project scope install into a client
// that has only a user file.
var ErrNoProjectFile = errors.New("install: this client has no project configuration file; use --scope user")

// ErrNotOurs is returned by Uninstall when the entry of that name does not
// point at the given URL: it is someone else's server.
var ErrNotOurs = errors.New("install: the entry of that name is not for this URL; pass the URL it names, or remove it by hand")

// ErrNotWritten is returned when an entry of that name exists that
// install did not write (or that was changed since): a server of the
// user's own, which install neither replaces nor removes without Force.
var ErrNotWritten = errors.New("install: an entry of that name exists that mcpgate install did not write (or it was changed since); choose another --name, or pass --force to replace or remove it")

// Change is a planned edit of one file: Before and After are its whole
// contents (Before nil when the file does not exist yet).
type Change struct {
	Client Client
	Path   string
	Before []byte
	After  []byte
	// Backup is the file Apply saved the previous contents in; "" when
	// it saved none (there was no file, or nothing changed).
	Backup string
	exists bool
	remove bool // uninstall gives back "no file"
	mode   fs.FileMode
	info   fs.FileInfo // the file as load found it (its owner); nil: none
	env    Env
	name   string
	// plan computes After (and the ledger's change) from Before; Apply
	// calls it again when the file changed since.
	plan func(c *Change, l *ledger) error
	rec  *record // to record in the ledger; nil: forget the name
}

// Changed says whether the file would change.
func (c *Change) Changed() bool {
	return c.remove || !c.exists || !bytes.Equal(c.Before, c.After)
}

func (e Entry) name() string {
	if e.Name == "" {
		return "mcpgate"
	}
	return e.Name
}

// body is the entry's value for client c.
func (e Entry) body(c Client) (map[string]any, error) {
	if e.Local {
		if e.Command == "" || !filepath.IsAbs(e.Command) {
			return nil, fmt.Errorf("install: the local entry needs mcpgate's absolute path, got %q", e.Command)
		}
		args := []string{"bridge", "--socket"}
		if e.Socket != "" {
			args = []string{"bridge", "--socket=" + e.Socket}
		}
		return c.stdio(e.Command, append(args, e.BridgeArgs...)), nil
	}
	if err := CheckURL(e.URL, e.AnyPath); err != nil {
		return nil, err
	}
	if c.remote != nil && !e.Bridge {
		return c.remote(e.URL), nil
	}
	if e.Command == "" || !filepath.IsAbs(e.Command) {
		return nil, fmt.Errorf("install: the bridge entry needs mcpgate's absolute path, got %q", e.Command)
	}
	return c.stdio(e.Command, append([]string{"bridge", "--url", e.URL}, e.BridgeArgs...)), nil
}

// resolve follows a symlink (a dotfile manager's link stays a link and
// its target is written); a link whose target does not exist is refused
// rather than replaced by a file.
func resolve(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		target, _ := os.Readlink(path)
		return "", fmt.Errorf("install: %s is a symbolic link to %s, which does not exist; create the file or remove the link", path, target)
	}
	return real, nil
}

// load reads the file into c.Before.
func (c *Change) load() error {
	c.Before, c.exists, c.mode, c.info = nil, false, 0o600, nil
	b, err := os.ReadFile(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("install: %w", err)
	}
	st, err := os.Stat(c.Path)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	c.Before, c.exists, c.mode, c.info = b, true, st.Mode().Perm(), st
	return nil
}

// newChange reads the file and the ledger and plans the change.
func newChange(c Client, env Env, scope Scope, name string, plan func(*Change, *ledger) error) (*Change, error) {
	path := c.Path(env, scope)
	if path == "" {
		return nil, ErrNoProjectFile
	}
	path, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	ch := &Change{Client: c, Path: path, env: env, name: name, plan: plan}
	if err := ch.load(); err != nil {
		return nil, err
	}
	l, err := loadLedger(env)
	if err != nil {
		return nil, err
	}
	if err := plan(ch, l); err != nil {
		return nil, err
	}
	return ch, nil
}

// Plan computes the installation of entry into client's file of scope,
// without writing anything. An entry of that name that install did not
// write is refused (ErrNotWritten) unless entry.Force.
func Plan(c Client, env Env, scope Scope, entry Entry) (*Change, error) {
	body, err := entry.body(c)
	if err != nil {
		return nil, err
	}
	name := entry.name()
	return newChange(c, env, scope, name, func(ch *Change, l *ledger) error {
		cur, err := decode(c, ch.Before)
		if err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		got, ok := serverEntry(cur, c.servers, name)
		if ok && !sameOwned(got, body) && !l.ours(ch.Path, name, got) && !entry.Force {
			return fmt.Errorf("%w (%q in %s)", ErrNotWritten, name, ch.Path)
		}
		if c.format == formatTOML {
			var drop []string
			for _, k := range owned {
				if _, ok := body[k]; !ok {
					drop = append(drop, k)
				}
			}
			tbody := map[string]any{}
			for k, v := range body {
				tbody[k] = v
			}
			if err = refuseInlineTOML(ch.Before, c.servers, name); err == nil {
				ch.After, err = setTOMLTable(ch.Before, []string{c.servers, name}, tbody, drop)
			}
		} else {
			ch.After, err = setJSONEntry(ch.Before, c.servers, name, body)
		}
		if err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		if err := verify(c, ch, name, body); err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		rec := record{File: ch.Path, Name: name, Entry: body}
		switch prev := l.find(ch.Path, name); {
		case prev == nil && !ok:
			rec.Undo = makeUndo(ch.Before, ch.After, !ch.exists)
		case prev != nil && l.ours(ch.Path, name, got):
			// Updating our own entry: the undo still leads to the file
			// before the first install, if the file is as we left it.
			if orig, ok := prev.Undo.apply(ch.Before); ok {
				rec.Undo = makeUndo(orig, ch.After, prev.Undo.Created)
			}
		}
		ch.rec = &rec
		return nil
	})
}

// PlanUninstall computes the removal of the entry named entry.Name: only
// one install wrote (ErrNotWritten otherwise, unless entry.Force), and when
// entry.URL is set, only one that points at it (ErrNotOurs). The file is
// given back byte for byte when it is still as install left it.
func PlanUninstall(c Client, env Env, scope Scope, entry Entry) (*Change, error) {
	name := entry.name()
	return newChange(c, env, scope, name, func(ch *Change, l *ledger) error {
		ch.After, ch.remove, ch.rec = ch.Before, false, nil
		if !ch.exists {
			ch.exists = true // nothing to do
			return nil
		}
		cur, err := decode(c, ch.Before)
		if err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		got, ok := serverEntry(cur, c.servers, name)
		if !ok {
			return nil
		}
		if entry.URL != "" && !pointsAt(got, entry.URL) {
			return fmt.Errorf("%w (%s in %s)", ErrNotOurs, name, ch.Path)
		}
		if !l.ours(ch.Path, name, got) && !entry.Force {
			return fmt.Errorf("%w (%q in %s)", ErrNotWritten, name, ch.Path)
		}
		if rec := l.find(ch.Path, name); rec != nil && l.ours(ch.Path, name, got) {
			if orig, ok := rec.Undo.apply(ch.Before); ok {
				ch.After, ch.remove = orig, rec.Undo.Created
				return nil
			}
		}
		if c.format == formatTOML {
			if err = refuseInlineTOML(ch.Before, c.servers, name); err == nil {
				ch.After, _, err = removeTOMLTable(ch.Before, []string{c.servers, name})
			}
		} else {
			ch.After, err = removeJSONEntry(ch.Before, c.servers, name)
		}
		if err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		if err := verify(c, ch, name, nil); err != nil {
			return fmt.Errorf("install: %s: %w", ch.Path, err)
		}
		return nil
	})
}

// pointsAt says whether an entry names url, directly or through a bridge.
func pointsAt(entry map[string]any, u string) bool {
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if entry[k] == u {
			return true
		}
	}
	if args, ok := entry["args"].([]any); ok {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--url" && args[i+1] == u {
				return true
			}
		}
	}
	return false
}

func setJSONEntry(doc []byte, servers, name string, body map[string]any) ([]byte, error) {
	e := newJSONEdit(append([]byte(nil), doc...))
	root, err := e.root()
	if err != nil {
		return nil, err
	}
	if _, m := root.member(servers); m == nil {
		if err := e.set(root, servers, map[string]any{name: body}); err != nil {
			return nil, err
		}
		return e.doc, nil
	}
	obj, err := e.lookup([]string{servers})
	if err != nil {
		return nil, err
	}
	if obj.kind != '{' {
		return nil, fmt.Errorf("%q is not an object; fix the file by hand", servers)
	}
	if _, m := obj.member(name); m == nil || m.value.kind != '{' {
		return e.doc, e.set(obj, name, body)
	}
	// The entry exists: set the keys we own, keep the user's others.
	for _, k := range owned {
		obj, _ = e.lookup([]string{servers, name})
		if v, ok := body[k]; ok {
			if err := e.set(obj, k, v); err != nil {
				return nil, err
			}
		} else {
			e.remove(obj, k)
		}
	}
	return e.doc, nil
}

func removeJSONEntry(doc []byte, servers, name string) ([]byte, error) {
	e := newJSONEdit(append([]byte(nil), doc...))
	obj, err := e.lookup([]string{servers})
	if err != nil || obj == nil || obj.kind != '{' {
		return doc, err
	}
	e.remove(obj, name)
	return e.doc, nil
}

// refuseInlineTOML refuses a Codex file whose entry is written in another
// form than its own [mcp_servers.NAME] table (an inline table or dotted
// keys): the line editor would not find it, and a second definition would
// make the file invalid.
func refuseInlineTOML(doc []byte, servers, name string) error {
	cur, err := decodeTOML(doc)
	if err != nil {
		return err
	}
	if _, ok := serverEntry(cur, servers, name); !ok {
		return nil
	}
	lines, err := scanTOML(doc)
	if err != nil {
		return err
	}
	if findTable(lines, []string{servers, name}).header < 0 {
		return fmt.Errorf("%s.%s is not written as its own [%s.%s] table; edit it by hand", servers, name, servers, name)
	}
	return nil
}

func decodeTOML(doc []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := toml.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	return m, nil
}

func decode(c Client, doc []byte) (map[string]any, error) {
	if c.format == formatTOML {
		return decodeTOML(doc)
	}
	v, err := decodeJSONC(doc)
	if err != nil || v == nil {
		return map[string]any{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the document is not an object", errSyntax)
	}
	return m, nil
}

func serverEntry(doc map[string]any, servers, name string) (map[string]any, bool) {
	s, ok := doc[servers].(map[string]any)
	if !ok {
		return nil, false
	}
	e, ok := s[name].(map[string]any)
	return e, ok
}

// verify parses Before and After and checks that they differ in our entry
// only, and that the entry holds body (or is gone when body is nil). It is
// the editors' safety net: a file they misread is refused, not damaged.
func verify(c Client, ch *Change, name string, body map[string]any) error {
	before, err := decode(c, ch.Before)
	if err != nil {
		return err
	}
	after, err := decode(c, ch.After)
	if err != nil {
		return fmt.Errorf("the edit would break the file (%v); nothing written", err)
	}
	got, ok := serverEntry(after, c.servers, name)
	if body == nil && ok {
		return errors.New("the entry is still there after removing it; edit the file by hand")
	}
	for k, v := range body {
		if !ok || !equalJSON(got[k], v) {
			return fmt.Errorf("the edit did not produce the entry (%s); edit the file by hand", k)
		}
	}
	strip := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		if s, ok := out[c.servers].(map[string]any); ok {
			s2 := map[string]any{}
			for k, v := range s {
				if k != name {
					s2[k] = v
				}
			}
			out[c.servers] = s2
			if len(s2) == 0 {
				delete(out, c.servers)
			}
		}
		return out
	}
	b, a := strip(before), strip(after)
	if !reflect.DeepEqual(normal(b), normal(a)) {
		return errors.New("the edit would change other settings of the file; nothing written, edit it by hand")
	}
	if eb, _ := serverEntry(before, c.servers, name); eb != nil && got != nil {
		for k, v := range eb {
			if !contains(owned, k) && !equalJSON(v, got[k]) {
				return fmt.Errorf("the edit would change the entry's own %q; edit it by hand", k)
			}
		}
	}
	return nil
}

// normal makes decoded TOML and JSON comparable (TOML decodes integers as
// int64 and may hold times; JSON has float64 only).
func normal(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = normal(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normal(x)
		}
		return out
	default:
		return fmt.Sprint(v)
	}
}
