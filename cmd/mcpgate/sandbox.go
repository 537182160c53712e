package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/metrics"
	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/worker"
)

// execLimited is mcpgate exec-limited: it confines itself when its first
// argument carries a sandbox (sandbox.ArgPrefix), then sets the rlimits
// and execs the worker (worker.ExecLimited). The confinement comes first:
// it allocates, which an address-space limit might no longer allow, and
// the worker inherits it across the exec with no instruction of its own
// run before.
func execLimited(_ context.Context, _ *Main, args []string) error {
	args, err := sandbox.ApplyArg(args)
	if err != nil {
		return err
	}
	return worker.ExecLimited(args, os.Environ())
}

// probeSandbox asks the kernel what it offers; tests replace it.
var probeSandbox = sandbox.Probe

// sandboxSpec is worker.sandbox as the base of both profiles.
func sandboxSpec(s config.WorkerSandbox) sandbox.Spec {
	ports, any := s.ConnectPorts()
	return sandbox.Spec{Require: s.Require, Read: s.ReadPaths, Write: s.WritePaths, Connect: ports, ConnectAny: any}
}

// sandboxProfile names the profile the gateway's workers start under, for
// the metrics: none with worker.sandbox off, else the built-in worker's or
// an external worker.command's.
func sandboxProfile(cfg *config.Config) string {
	switch {
	case !cfg.Worker.Sandbox.Enabled:
		return metrics.SandboxNone
	case len(cfg.Worker.Command) == 0:
		return metrics.SandboxBuiltin
	}
	return metrics.SandboxExternal
}

// workerSandbox maps worker.sandbox to the launcher's options. The
// built-in worker (builtin) gets its rule set in its environment and
// confines itself; an external command starts through the exec-limited
// helper, which confines itself with the external profile and execs it.
// What the kernel cannot enforce is logged here, once, as a warning; with
// require it is an error and the gateway does not start.
func workerSandbox(cfg *config.Config, log *slog.Logger, command []string, builtin bool, wopts *worker.LauncherOptions) error {
	s := cfg.Worker.Sandbox
	if !s.Enabled {
		log.Warn("mcpgate: worker.sandbox.enabled is false: workers run unconfined, able to read and reach whatever the gateway's account can")
		return nil
	}
	sup := probeSandbox()
	switch {
	case !sup.Full() && s.Require:
		return fmt.Errorf("mcpgate: worker.sandbox.require is set, but this kernel has Landlock ABI %d and seccomp %v: %s", sup.LandlockABI, sup.Seccomp, sup.Missing())
	case !sup.Full():
		log.Warn("mcpgate: THE WORKER SANDBOX IS INCOMPLETE on this kernel; workers get what it offers", "landlock_abi", sup.LandlockABI, "seccomp", sup.Seccomp, "missing", sup.Missing())
	default:
		log.Info("mcpgate: workers are confined", "landlock_abi", sup.LandlockABI, "seccomp", sup.Seccomp)
	}
	spec := sandboxSpec(s)
	// Under an account switch each worker starts in its user's data
	// directory (its HOME and TMPDIR): that one, and no other user's, is
	// writable to it.
	spec.WorkDir = cfg.Worker.RunAs != "" && cfg.Worker.RunAs != worker.RunAsGateway
	if builtin {
		spec.Profile = sandbox.ProfileBuiltin
		wopts.Env = append(wopts.Env, sandbox.EnvSpec+"="+spec.Encode())
		return nil
	}
	prog, err := exec.LookPath(command[0])
	if err != nil {
		return fmt.Errorf("mcpgate: worker.command: %w", err)
	}
	spec = sandbox.External(spec, prog, cfg.Worker.Dir)
	if len(wopts.LimitHelper) == 0 {
		helper, err := limitHelper()
		if err != nil {
			return err
		}
		wopts.LimitHelper = helper
	}
	wopts.LimitHelper = append(append([]string(nil), wopts.LimitHelper...), sandbox.ArgPrefix+spec.Encode())
	wopts.Confine = true
	return nil
}
