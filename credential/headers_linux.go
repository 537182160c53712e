package credential

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteHeaders writes h to path for the remote-upstream worker that reads
// it (mcpgate upstream --headers-file): one "Name: value" line per value,
// names in sorted order. The file is created beside path with mode 0600,
// owned by uid and gid (when uid is not -1; the worker's account), filled,
// and renamed over path, so that the worker reads the old set or the new
// one, never half of one. path's directory must be memory-backed (tmpfs
// or ramfs): an exchanged token is never written to persistent storage.
func WriteHeaders(path string, h http.Header, uid, gid int) error {
	dir := filepath.Dir(path)
	if err := CheckMemoryBacked(dir); err != nil {
		return err
	}
	lines, err := headerLines(h)
	if err != nil {
		return err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("credential: headers file: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("credential: headers file: %w", err)
	}
	if uid != -1 {
		if err := f.Chown(uid, gid); err != nil {
			return fail(err)
		}
	}
	if _, err := f.WriteString(lines); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("credential: headers file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("credential: headers file: %w", err)
	}
	return nil
}

// CheckMemoryBacked refuses a directory that is not on tmpfs or ramfs.
func CheckMemoryBacked(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("credential: %s: %w", dir, err)
	}
	if st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC {
		return errors.New("credential: " + dir + " is not memory-backed (tmpfs or ramfs); credentials are never written to persistent storage")
	}
	return nil
}
