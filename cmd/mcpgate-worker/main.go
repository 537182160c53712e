// Command mcpgate-worker is the built-in worker alone: the program of
// `mcpgate worker` (package builtin) linked without the gateway, its
// configuration loader or its token verification, so that the process the
// gateway starts per session maps and touches less memory. `mcpgate serve`
// starts it instead of `mcpgate worker` when it sits beside the mcpgate
// executable (make build puts both in bin/). It takes no arguments: the
// gateway configures it through the environment.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/mcpgate/mcpgate/tools/builtin"
)

// Version is the product version, set at build time with -ldflags like
// mcpgate's; the gateway passes its own to the worker, so this one shows
// only when the worker runs by hand.
var Version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "mcpgate-worker takes no arguments (got %q); the gateway configures it through the environment\n", os.Args[1:])
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stdin := builtin.PollableStdin(os.Stdin)
	err := builtin.Run(ctx, builtin.Program{Stdin: stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: Version})
	stop()
	runtime.KeepAlive(stdin) // it shares os.Stdin's descriptor: never collected (and closed) early
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
