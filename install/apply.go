package install

// Writing a planned change: under the lock every install of one user
// takes, re-read and re-plan, back up, then replace the file atomically.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpgate/mcpgate/filelock"
)

// lockWait bounds the wait for another install of this user.
const lockWait = time.Minute

// Apply writes the change under the lock every install of this user
// takes: it reads the file again and plans once more when it changed since
// Plan (another install, or the client itself, wrote it); saves the
// previous contents in a new backup (FILE.bak, else FILE.bak.1, …: no
// backup is overwritten); looks at the file a last time (a client that
// does not take the lock may have rewritten it) and then replaces it
// atomically (a temporary file in the same directory, synced, renamed
// over it), keeping its mode. A read-only file is refused.
func (c *Change) Apply() error {
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	lk, err := filelock.Acquire(ctx, lockPath(c.env))
	switch {
	case filelock.IsBusy(err):
		return fmt.Errorf("install: another mcpgate install is running: %w", err)
	case err != nil:
		return fmt.Errorf("install: the install lock file cannot be used (remove it if another user, e.g. root, owns it): %w", err)
	}
	defer lk.Unlock()
	for range 3 {
		planned, exists := c.Before, c.exists
		if err := c.load(); err != nil {
			return err
		}
		l, err := loadLedger(c.env)
		if err != nil {
			return err
		}
		if !bytes.Equal(planned, c.Before) || exists != c.exists {
			if err := c.plan(c, l); err != nil {
				return err
			}
		}
		if !c.Changed() {
			return nil
		}
		if c.exists && c.mode&0o200 == 0 {
			return fmt.Errorf("install: %s is read-only (mode %o); make it writable to let mcpgate change it, or edit it by hand", c.Path, c.mode)
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		c.Backup = ""
		if c.exists {
			if c.Backup, err = backup(c.Path, c.Before, c.mode, c.info); err != nil {
				return err
			}
		}
		if now, err := os.ReadFile(c.Path); !bytes.Equal(now, c.Before) || (err == nil) != c.exists {
			continue // written meanwhile: plan again from what is there now
		}
		if c.remove {
			err = os.Remove(c.Path)
		} else {
			err = writeAtomic(c.Path, c.After, c.mode, c.info)
		}
		if err != nil {
			return fmt.Errorf("install: %w", err)
		}
		if c.rec != nil {
			l.put(*c.rec)
		} else {
			l.forget(c.Path, c.name)
		}
		if err := l.save(c.env); err != nil {
			return err
		}
		c.Before, c.exists = c.After, !c.remove
		return nil
	}
	return fmt.Errorf("install: %s keeps changing (another program is writing it); try again", c.Path)
}

// backup saves data in the first free name of FILE.bak, FILE.bak.1, …
func backup(path string, data []byte, mode fs.FileMode, like fs.FileInfo) (string, error) {
	for i := 0; ; i++ {
		name := path + ".bak"
		if i > 0 {
			name = fmt.Sprintf("%s.bak.%d", path, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o200)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("install: saving the previous contents: %w", err)
		}
		keepOwner(f, like)
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("install: saving the previous contents: %w", err)
		}
		return name, nil
	}
}

// writeAtomic replaces path with data, mode and the owner of like (nil:
// this process's).
func writeAtomic(path string, data []byte, mode fs.FileMode, like fs.FileInfo) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("install: writing %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	keepOwner(f, like)
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install: writing %s: %w", path, err)
	}
	return nil
}
