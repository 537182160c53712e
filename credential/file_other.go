//go:build !linux

package credential

import "errors"

var errNotLinux = &fileError{ErrUnavailable, "secret files are read with openat2, which needs Linux"}

func readUserSecret(dir, user, name string) ([]byte, *fileError) { return nil, errNotLinux }

func readStatic(path string) ([]byte, *fileError) { return nil, errNotLinux }

// CheckDir fails off Linux: per-user secrets need openat2.
func CheckDir(dir string) error { return errors.New("credential: " + errNotLinux.reason) }

// CheckStatic fails off Linux: secret files need openat2.
func CheckStatic(path string) error { return errors.New("credential: " + errNotLinux.reason) }
