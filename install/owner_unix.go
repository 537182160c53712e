//go:build unix

package install

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of like, the file it replaces or
// backs up: run as root ("sudo mcpgate install", which keeps HOME on
// macOS), install would otherwise hand the client's own file to root. Only
// root may give a file away; anyone else's file stays theirs, as before.
func keepOwner(f *os.File, like fs.FileInfo) {
	if like == nil {
		return
	}
	sys, ok := like.Sys().(*syscall.Stat_t)
	if !ok || (int(sys.Uid) == os.Geteuid() && int(sys.Gid) == os.Getegid()) {
		return
	}
	_ = f.Chown(int(sys.Uid), int(sys.Gid))
}
