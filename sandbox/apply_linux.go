package sandbox

import (
	"fmt"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Report says what Apply enforced.
type Report struct {
	Support
	// Landlock and Seccomp report the parts that were applied.
	Landlock, Seccomp bool
}

// String is the report for a log line.
func (r Report) String() string {
	s := fmt.Sprintf("landlock ABI %d", r.LandlockABI)
	if !r.Landlock {
		s += " (not applied)"
	}
	if r.Seccomp {
		s += ", seccomp deny list"
	} else {
		s += ", no seccomp"
	}
	return s + ", no_new_privs"
}

// Apply confines the calling process, every thread of it, and whatever it
// later execs or forks: no_new_privs, then the Landlock rule set, then the
// seccomp filter. With s.Require it refuses, changing nothing, when the
// kernel cannot enforce the whole rule set (ErrUnsupported); otherwise it
// applies what the kernel offers and the Report says what that was.
// Nothing undoes it.
func Apply(s Spec) (Report, error) {
	r := Report{Support: Probe()}
	if s.Require && !r.Full() {
		return r, fmt.Errorf("%w: %s (worker.sandbox.require is set)", ErrUnsupported, r.Missing())
	}
	// Before the file rules: the time zone is read on first use, which
	// may come after the rules forbid /etc/localtime.
	_ = time.Now().Local()
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return r, fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if r.LandlockABI > 0 {
		if err := restrictLandlock(s); err != nil {
			return r, err
		}
		r.Landlock = true
	}
	if r.Seccomp {
		if err := loadFilter(); err != nil {
			return r, err
		}
		r.Seccomp = true
	}
	return r, nil
}
