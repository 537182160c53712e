package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/tools/builtin"
	"github.com/mcpgate/mcpgate/tools/db"
)

// readyCheck is one part of the gateway's readiness (gateway.Options.Ready).
type readyCheck func(ctx context.Context) error

// allReady runs every check in order and returns the first failure.
func allReady(checks ...readyCheck) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// keysLoaded is ready once the issuer's signing keys are in: before, every
// token would be refused.
func keysLoaded(a *auth.Authenticator) readyCheck {
	return func(context.Context) error {
		select {
		case <-a.Ready():
			return nil
		default:
			return errors.New("mcpgate: the issuer's signing keys are not loaded yet")
		}
	}
}

// workerStartable is ready while the worker's program can be executed: a
// new session could start one. command empty means the built-in worker,
// this executable (which a package upgrade may have replaced or removed).
// It starts nothing: a probe must not cost a process.
func workerStartable(command []string) readyCheck {
	return func(context.Context) error {
		prog := ""
		if len(command) > 0 {
			prog = command[0]
		} else {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("mcpgate: finding the built-in worker: %w", err)
			}
			prog = exe
		}
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Errorf("mcpgate: the worker cannot start: %w", err)
		}
		return nil
	}
}

// databaseAnswers is ready while the built-in worker's database answers a
// ping (db.Ping).
func databaseAnswers(d db.Config) readyCheck {
	return func(ctx context.Context) error {
		eng, ok := builtin.Engine(d.Driver)
		if !ok {
			return fmt.Errorf("mcpgate: unknown database driver %q", d.Driver)
		}
		return db.Ping(ctx, eng, d)
	}
}
