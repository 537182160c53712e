//go:build unix && !linux

package worker

import "syscall"

// lowerRlimit sets lim, never above the current hard limit (which an
// unprivileged process cannot raise).
func lowerRlimit(res int, lim *syscall.Rlimit) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(res, &cur); err != nil {
		return err
	}
	lim.Max = min(lim.Max, cur.Max)
	lim.Cur = min(lim.Cur, lim.Max)
	return syscall.Setrlimit(res, lim)
}

// rlimitNproc is RLIMIT_NPROC on the BSDs and macOS, which package syscall
// does not name.
const rlimitNproc = 7
