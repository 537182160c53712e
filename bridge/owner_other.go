//go:build !unix

package bridge

import "os"

// fileOwner: files have no owning user id here.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
