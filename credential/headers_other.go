//go:build !linux

package credential

import (
	"errors"
	"net/http"
)

// WriteHeaders needs Linux (a memory-backed directory, checked by statfs).
func WriteHeaders(path string, h http.Header, uid, gid int) error {
	return errors.New("credential: headers files need Linux")
}

// CheckMemoryBacked needs Linux.
func CheckMemoryBacked(dir string) error { return errors.New("credential: needs Linux") }
