package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
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
// Nothing undoes it. It is Ready and then Enforce.
func Apply(s Spec) (Report, error) {
	p, err := Ready(s)
	if err != nil {
		return p.report, err
	}
	return p.Enforce()
}

// Pending is a confinement made ready and not yet enforced: the rules
// resolved (their paths opened) into a Landlock rule set, no_new_privs set
// on every thread and the seccomp filter assembled. A pre-started worker
// makes it ready before its identity comes; Enforce is what a session
// then waits for.
type Pending struct {
	report  Report
	fd      int // the Landlock rule set, or -1
	flags   uint32
	enforce bool
}

// Ready does everything of Apply that confines nothing yet, but
// no_new_privs (which only stops privilege gained through exec). With
// s.Require it refuses, changing nothing, when the kernel cannot enforce
// the whole rule set (ErrUnsupported). The rules are resolved now: a path
// made after Ready is not covered.
func Ready(s Spec) (*Pending, error) {
	p := &Pending{report: Report{Support: probe()}, fd: -1}
	r := p.report
	if s.Require && !r.Full() {
		return p, fmt.Errorf("%w: %s (worker.sandbox.require is set)", ErrUnsupported, r.Missing())
	}
	// Before the file rules: the time zone is read on first use, which
	// may come after the rules forbid /etc/localtime.
	_, _ = time.Now().Zone()
	if r.Seccomp {
		if err := Prepare(); err != nil {
			return p, err
		}
	}
	if r.LandlockABI > 0 {
		fd, flags, err := landlockRuleset(s)
		if err != nil {
			return p, err
		}
		p.fd, p.flags = fd, flags
	}
	// Every thread needs it for Landlock's restrict_self; seccomp's TSYNC
	// carries it too. Set here, while nobody waits: it stops the world.
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		p.close()
		return p, fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	p.enforce = true
	return p, nil
}

// Enforce confines the process with what Ready made ready: the Landlock
// rule set on every thread, then the seccomp filter. Once only.
func (p *Pending) Enforce() (Report, error) {
	r := p.report
	if !p.enforce {
		return r, errors.New("sandbox: enforced twice, or not ready")
	}
	p.enforce = false
	if r.LandlockABI > 0 {
		err := restrictSelf(p.fd, p.flags, r.LandlockABI)
		p.close()
		if err != nil {
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

// Close releases a Pending never enforced.
func (p *Pending) Close() {
	p.enforce = false
	p.close()
}

func (p *Pending) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// restrictSelf enforces the rule set fd on every thread: in the kernel
// from ABI 8 (TSYNC), else through the Go runtime on each thread.
func restrictSelf(fd int, flags uint32, abi int) error {
	if fd < 0 {
		return nil // nothing to restrict
	}
	var err error
	if abi >= 8 {
		runtime.LockOSThread()
		err = llsys.LandlockRestrictSelf(fd, flags|llsys.FlagRestrictSelfTSync)
		runtime.UnlockOSThread()
	} else {
		err = llsys.AllThreadsLandlockRestrictSelf(fd, flags)
	}
	if err != nil {
		return fmt.Errorf("sandbox: landlock: landlock_restrict_self: %w", err)
	}
	return nil
}

// pidTaskDir is this process's thread list, which libpsx (the cgo build's
// all-threads system call) lists after enforcing on each thread.
func pidTaskDir() string { return fmt.Sprintf("/proc/%d/task", os.Getpid()) }
