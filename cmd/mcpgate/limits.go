package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/worker"
)

// limitHelperCommand is the hidden sub-command that confines itself with
// a worker's sandbox, applies its rlimits and execs the worker
// (execLimited).
const limitHelperCommand = "exec-limited"

func init() {
	commands[limitHelperCommand] = execLimited
}

// limitHelper returns the rlimit helper: this executable's exec-limited.
// Tests built with -race replace it (the race detector's shadow memory
// leaves no room under an address-space limit).
var limitHelper = func() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mcpgate: finding this executable (the worker limit helper): %w", err)
	}
	return []string{exe, limitHelperCommand}, nil
}

// workerLimits maps worker.limits to the launcher's options: the limits,
// this executable as the rlimit helper, and the delegated cgroup when a
// cgroup control is set and the gateway has one (else a warning: those
// controls are skipped, the rlimits still hold).
func workerLimits(cfg *config.Config, log *slog.Logger, wopts *worker.LauncherOptions) error {
	l := cfg.Worker.Limits
	wopts.Limits = worker.Limits{
		AddressSpace: int64(l.AddressSpace), CPUTime: l.CPUTime, OpenFiles: l.OpenFiles,
		Memory: int64(l.Memory), CPU: l.CPU, Processes: l.Processes, UserProcesses: l.UserProcesses,
	}
	helper, err := limitHelper()
	if err != nil {
		return err
	}
	wopts.LimitHelper = helper
	if l.Memory == 0 && l.CPU == 0 && l.Processes == 0 {
		return nil
	}
	cg, err := worker.DelegatedCgroup()
	switch {
	case errors.Is(err, worker.ErrNotDelegated):
		log.Warn("mcpgate: worker.limits.memory, cpu and processes need a delegated cgroup v2 and are NOT applied; see docs/operations.md", "why", err.Error())
		return nil
	case err != nil:
		return err
	}
	log.Info("mcpgate: each worker gets a cgroup leaf", "cgroup", cg.Dir())
	wopts.Cgroup = cg
	return nil
}
