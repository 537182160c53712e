package sandbox

import (
	"fmt"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probe is Probe; tests replace it.
var probe = Probe

// Report says what Apply enforced.
type Report struct {
	Support
	// LandlockApplied and SeccompApplied report the parts that were
	// applied.
	LandlockApplied, SeccompApplied bool
}

// String is the report for a log line.
func (r Report) String() string {
	s := fmt.Sprintf("landlock ABI %d", r.LandlockABI)
	if !r.LandlockApplied {
		s += " (not applied)"
	}
	if r.SeccompApplied {
		s += ", seccomp deny list"
	} else {
		s += ", no seccomp"
	}
	return s + ", no_new_privs"
}

// Apply confines the calling process, every thread of it, and whatever it
// later execs or forks: no_new_privs, then the Landlock rule set, then the
// seccomp filter (assembled by Prepare, or here). With s.Require it refuses, changing nothing, when the
// kernel cannot enforce the whole rule set (ErrUnsupported); otherwise it
// applies what the kernel offers and the Report says what that was.
// Nothing undoes it.
func Apply(s Spec) (Report, error) {
	r := Report{Support: probe()}
	if s.Require && !r.Full() {
		return r, fmt.Errorf("%w: %s (worker.sandbox.require is set)", ErrUnsupported, r.Missing())
	}
	// Before the file rules: the time zone is read on first use, which
	// may come after the rules forbid /etc/localtime.
	_, _ = time.Now().Zone()
	if r.LandlockABI == 0 && !r.Seccomp {
		// Otherwise each sets it on every thread itself, before its rules
		// (go-landlock, and seccomp's TSYNC from the calling thread).
		if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return r, fmt.Errorf("sandbox: no_new_privs: %w", err)
		}
	}
	if r.LandlockABI > 0 {
		if err := restrictLandlock(s); err != nil {
			return r, err
		}
		r.LandlockApplied = true
	}
	if r.Seccomp {
		if err := loadFilter(); err != nil {
			return r, err
		}
		r.SeccompApplied = true
	}
	return r, nil
}
