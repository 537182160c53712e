//go:build !linux

package sandbox

import "fmt"

// FullABI is the Landlock ABI that enforces the whole rule set.
const FullABI = 6

// Support is what the running kernel offers: nothing, off Linux.
type Support struct {
	LandlockABI int
	Seccomp     bool
}

// Probe reports no support off Linux.
func Probe() Support { return Support{} }

// Full reports whether the kernel enforces the whole rule set.
func (s Support) Full() bool { return false }

// Missing says what the kernel lacks.
func (s Support) Missing() string { return "not Linux: no Landlock, seccomp or no_new_privs" }

// Report says what Apply enforced.
type Report struct {
	Support
	LandlockApplied, SeccompApplied bool
}

func (r Report) String() string { return "no sandbox (not Linux)" }

// Apply refuses a Spec with Require and does nothing otherwise.
func Apply(s Spec) (Report, error) {
	if s.Require {
		return Report{}, fmt.Errorf("%w: %s", ErrUnsupported, Support{}.Missing())
	}
	return Report{}, nil
}

// Prepare does nothing off Linux.
func Prepare() error { return nil }

// Pending is a confinement made ready: nothing, off Linux.
type Pending struct{ report Report }

// Ready refuses a Spec with Require and does nothing otherwise.
func Ready(s Spec) (*Pending, error) {
	if _, err := Apply(s); err != nil {
		return nil, err
	}
	return &Pending{}, nil
}

// Enforce does nothing off Linux.
func (p *Pending) Enforce() (Report, error) { return p.report, nil }

// Close does nothing off Linux.
func (p *Pending) Close() {}
