package worker

import (
	"syscall"
	"unsafe"
)

// lowerRlimit sets lim, never above the current hard limit (which an
// unprivileged process cannot raise). Raw system calls: nothing is
// allocated once the first limit is set.
func lowerRlimit(res int, lim *syscall.Rlimit) error {
	var cur syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(res), 0, uintptr(unsafe.Pointer(&cur)), 0, 0); e != 0 {
		return e
	}
	lim.Max = min(lim.Max, cur.Max)
	lim.Cur = min(lim.Cur, lim.Max)
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(res), uintptr(unsafe.Pointer(lim)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// rlimitNproc is RLIMIT_NPROC, which package syscall does not name.
const rlimitNproc = 6
