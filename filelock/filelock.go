// Package filelock serializes processes of one user around a shared file
// (the token cache, an MCP client's configuration): an exclusive lock on a
// lock file next to it, held by the kernel (flock on Unix, LockFileEx on
// Windows). The kernel drops a lock when its process ends, however it
// ends, so there is no stale lock to detect or break.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// errBusy is what tryLock returns while another holder has the lock.
var errBusy = errors.New("filelock: held by another process")

// Lock is a held lock; Unlock releases it.
type Lock struct {
	f *os.File
}

// Acquire takes the exclusive lock on path (creating the file, mode
// 0600, and its directory, 0700, when missing), waiting while another
// process or handle holds it, until ctx ends. The lock file is left in
// place: removing it would let a waiter lock a file nobody else sees.
// Should someone else remove or replace it while Acquire waits, Acquire
// locks the file the path names once the holder lets go; a file removed
// while held is not noticed by its holder.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	if testHookOpened != nil {
		testHookOpened()
	}
	wait := time.Millisecond
	for {
		err := tryLock(f)
		if err == nil {
			if same(f, path) {
				return &Lock{f: f}, nil
			}
			// The file was removed or replaced while we waited on it:
			// a lock on it excludes nobody. Lock the one there now.
			unlock(f)
			f.Close()
			if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
				return nil, fmt.Errorf("filelock: %w", err)
			}
			continue
		}
		if !errors.Is(err, errBusy) {
			f.Close()
			return nil, fmt.Errorf("filelock: locking %s: %w", path, err)
		}
		// Polling keeps the wait cancellable on every platform; a holder
		// keeps the lock for one file edit or one token refresh.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, &busyError{path: path, err: ctx.Err()}
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// testHookOpened, when set, runs once Acquire has opened the lock file.
var testHookOpened func()

// same says whether path still names the open file f.
func same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// busyError is Acquire's error when another holder kept the lock until
// the wait ended.
type busyError struct {
	path string
	err  error
}

func (e *busyError) Error() string { return fmt.Sprintf("filelock: waiting for %s: %v", e.path, e.err) }
func (e *busyError) Unwrap() error { return e.err }

// IsBusy says whether err is Acquire's for a lock another process held
// until the wait ended; any other error of Acquire means the lock file
// itself cannot be used (not a file, another user's, a read-only folder),
// and no wait would help.
func IsBusy(err error) bool {
	var b *busyError
	return errors.As(err, &b)
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
