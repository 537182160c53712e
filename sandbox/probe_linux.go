package sandbox

import (
	"golang.org/x/sys/unix"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// FullABI is the Landlock ABI that enforces the whole rule set: file
// access (ABI 1–3, truncate from 3, device ioctl from 5), TCP bind and
// connect (4) and the scopes for signals and abstract Unix sockets (6).
const FullABI = 6

// Support is what the running kernel offers.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 when Landlock is
	// missing or not enabled at boot (lsm=).
	LandlockABI int
	// Seccomp reports seccomp filters with the errno action.
	Seccomp bool
}

// Probe asks the kernel what it offers: landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION, and SECCOMP_GET_ACTION_AVAIL for
// SECCOMP_RET_ERRNO.
func Probe() Support {
	var s Support
	if v, err := llsys.LandlockGetABIVersion(); err == nil {
		s.LandlockABI = v
	}
	act := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptrOf(&act))
	s.Seccomp = e == 0
	return s
}

// Full reports whether the kernel enforces the whole rule set.
func (s Support) Full() bool { return s.LandlockABI >= FullABI && s.Seccomp }

// Missing says what the kernel lacks for the whole rule set, or "".
func (s Support) Missing() string {
	switch {
	case s.LandlockABI == 0 && !s.Seccomp:
		return "no Landlock and no seccomp: only no_new_privs holds"
	case s.LandlockABI == 0:
		return "no Landlock (kernel older than 5.13, or not in the lsm= boot list): no file or TCP rules"
	case s.LandlockABI < 4:
		return "Landlock ABI below 4: no TCP rules; below 6: no signal or abstract Unix socket scoping"
	case s.LandlockABI < FullABI:
		return "Landlock ABI below 6: no signal or abstract Unix socket scoping"
	case !s.Seccomp:
		return "no seccomp filters: the system call deny list does not hold"
	}
	return ""
}
