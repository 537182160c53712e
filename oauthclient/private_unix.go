//go:build unix

package oauthclient

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkPrivateDir refuses a cache directory that others may write (they
// could replace the cache, or plant one before it exists) or that belongs
// to another user than this one or root. A missing directory is fine: it
// is made 0700.
func checkPrivateDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("oauthclient: %w", err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("oauthclient: the token cache's folder %s is writable by others (mode %o); keep the cache in a folder of your own, mode 700", dir, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
		return checkOwner(dir, st)
	}
	return nil
}

// checkPrivateFile refuses a cache file others may read, or that belongs
// to another user (who could have planted tokens of their own).
func checkPrivateFile(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("oauthclient: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("oauthclient: the token cache %s is not a regular file; remove it and log in again", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("oauthclient: %s is readable by others (mode %o); chmod 600 it", path, st.Mode().Perm())
	}
	return checkOwner(path, st)
}

func checkOwner(path string, st fs.FileInfo) error {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("oauthclient: %s belongs to another user (uid %d); the token cache must be your own", path, sys.Uid)
	}
	return nil
}
