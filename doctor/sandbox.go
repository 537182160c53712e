package doctor

import (
	"fmt"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/sandbox"
)

// probeSandbox asks the kernel what it offers; tests replace it.
var probeSandbox = sandbox.Probe

// checkSandbox reports the kernel's Landlock ABI and seccomp against
// worker.sandbox: whether every worker gets the whole rule set.
func checkSandbox(r *Report, cfg *config.Config) {
	s, sup := cfg.Worker.Sandbox, probeSandbox()
	have := fmt.Sprintf("Landlock ABI %d, seccomp %v", sup.LandlockABI, sup.Seccomp)
	switch {
	case !s.Enabled:
		r.warn("sandbox", "worker.sandbox.enabled is false: workers run unconfined ("+have+" available)",
			"set worker.sandbox.enabled to true (docs/sandbox.md)")
	case sup.Full():
		r.ok("sandbox", have+": every worker gets the whole rule set")
	case s.Require:
		r.fail("sandbox", have+": "+sup.Missing()+", and worker.sandbox.require refuses to start workers without it",
			"run on Linux 6.12 or later with landlock in the lsm= boot list, or drop require")
	default:
		r.warn("sandbox", have+": "+sup.Missing(),
			"run on Linux 6.12 or later with landlock in the lsm= boot list (docs/sandbox.md)")
	}
}
