// Command mcpbench measures what mcpgate costs: it drives real MCP sessions
// (the go-sdk client over Streamable HTTP or stdio) against several systems
// serving the same tools in one run, and reports every figure next to the
// floor (the worker driven directly over stdio) measured in the same run.
//
//	mcpbench run [flags]          run the benchmark (see mcpbench run -h)
//	mcpbench sdk-server [flags]   the go-sdk's StreamableHTTPHandler serving the tools (-stateless: its stateless mode)
//	mcpbench stdio-server         the tools over stdio: a stand-in worker
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `mcpbench — load generator for mcpgate and its peers

Usage:
  mcpbench run [flags]          run every system and write bench/results/ (run -h for flags)
  mcpbench sdk-server [flags]   serve the benchmark tools with the go-sdk StreamableHTTPHandler
                                (-stateless: its stateless mode, which serves MCP 2026-07-28)
  mcpbench stdio-server         serve the benchmark tools over stdio (a stand-in worker)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return runBench(ctx, args[1:], stdout, stderr)
	case "sdk-server":
		return runSDKServer(ctx, args[1:], stdout, stderr)
	case "stdio-server":
		return runStdioServer(ctx, args[1:])
	default:
		fmt.Fprintf(stderr, "mcpbench: unknown command %q\n\n%s", args[0], usage)
		return flag.ErrHelp
	}
}
