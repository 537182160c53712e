package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// local compares a call through the stdio shim an MCP client starts and
// the gateway daemon it reaches on a Unix socket against the same call to
// mcpgate over TCP (the mcpgate system of the run). Then it counts the
// daemon's processes as two MCP 2026-07-28 clients of the one local user,
// each through a shim of its own, make their first calls: the second
// should find the first's worker.
func (pe pairEnv) local(ctx context.Context) PairResult {
	res := PairResult{A: "TCP", B: "shim + socket"}
	tcp, ok := pe.running[sysMCPGate]
	switch {
	case len(pe.cfg.LocalDaemon) == 0 || len(pe.cfg.LocalShim) == 0:
		res.Skipped = "no -local-daemon and -local-shim given (mcpgate on a Unix socket, and its stdio shim)"
		return res
	case !ok:
		res.Skipped = "needs the mcpgate system (TCP) in the same run"
		return res
	}
	// A directory of its own, 0700, as a daemon expects a socket's to be.
	dir, err := os.MkdirTemp("", "mcpbench-local-")
	if err != nil {
		res.fail(err)
		return res
	}
	defer os.RemoveAll(dir)
	v := vars{"socket": filepath.Join(dir, "mcpgate.sock")}
	p, err := startProc("mcpgate-local", v.expand(pe.cfg.LocalDaemon), sessionEnv(os.Environ(), pe.cfg.MCPGateEnv),
		filepath.Join(pe.logDir, "mcpgate-local.log"))
	if err == nil {
		defer p.stop(10 * time.Second)
		err = waitDial(ctx, p, "unix", v["socket"], 30*time.Second)
	}
	if err != nil {
		res.fail(err)
		return res
	}
	shim := v.expand(pe.cfg.LocalShim)
	a, b, ok := pe.openBoth(ctx, &res, tcp.open, func(ctx context.Context) (*session, error) {
		return pe.openShim(ctx, shim, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	})
	if !ok {
		return res
	}
	pe.measure(ctx, &res, a, b, pe.cfg.Trivial.Name)
	steps, err := pe.secondClient(ctx, p, shim)
	res.SecondClient = steps
	if err != nil {
		res.fail(err)
	}
	return res
}

// secondClient opens two MCP 2026-07-28 clients through shims, each making
// one call, and counts the daemon's processes before, after the first
// client's call and after the second's.
func (pe pairEnv) secondClient(ctx context.Context, daemon *proc, shim []string) (*ProcessSteps, error) {
	count := func() int {
		pids, _ := pfs().Tree(daemon.pid())
		return len(pids)
	}
	steps := &ProcessSteps{Before: count()}
	for i, into := range []*int{&steps.First, &steps.Second} {
		s, err := pe.openShim(ctx, shim, nil)
		if err == nil {
			defer s.Close()
			err = call(ctx, s, pe.cfg.Trivial, pe.cfg.CallTimeout)
		}
		if err != nil {
			return nil, fmt.Errorf("mcpbench: 2026-07-28 client %d through the shim: %w", i+1, err)
		}
		*into = count()
	}
	return steps, nil
}

// openShim starts the shim as an MCP client would and connects through
// its stdio (opts nil: the go-sdk client's defaults, 2026-07-28 first).
func (pe pairEnv) openShim(ctx context.Context, argv []string, opts *mcp.ClientSessionOptions) (*session, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = sessionEnv(os.Environ(), pe.cfg.MCPGateEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.OpenFile(filepath.Join(pe.logDir, "mcpgate-shim.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	cs, err := pe.client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, opts)
	if err != nil {
		logf.Close()
		return nil, err
	}
	return &session{ClientSession: cs, release: func() { logf.Close() }}, nil
}
