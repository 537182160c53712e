package main

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/tools/builtin"
)

func init() {
	commands["worker"] = runWorker
}

// runWorker is `mcpgate worker`: the built-in worker (package builtin), for
// operators who start it by hand or as worker.command. The gateway itself
// prefers the worker-only binary mcpgate-worker when it sits beside this
// executable (builtinWorkerCommand): the same program without the gateway's
// dependencies, so a lighter process per session.
func runWorker(ctx context.Context, m *Main, args []string) error {
	if len(args) > 0 {
		fmt.Fprintf(m.Stderr, "mcpgate worker takes no arguments (got %q); the gateway configures it through the environment\n", args)
		return errUsage
	}
	return builtin.Run(ctx, builtin.Program{Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr, Getenv: m.Getenv, Version: Version})
}
