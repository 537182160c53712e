// Command mcpgate is the MCP gateway: `mcpgate serve` runs the front end,
// `mcpgate worker` is the built-in worker the gateway starts per session (and
// per user, for MCP 2026-07-28).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is the program, so that end-to-end tests can drive it in-process.
type Main struct {
	Stdin  io.Reader           // the protocol input of `mcpgate worker`
	Stdout io.Writer           // command output; the protocol output of `mcpgate worker`
	Stderr io.Writer           // logs and errors
	Getenv func(string) string // the environment; required (os.Getenv in main)
	// Hurry, when closed, cuts short what Run does after ctx ends: serve
	// stops draining and stops its workers at once. main closes it on a
	// second SIGTERM or interrupt; nil means never.
	Hurry <-chan struct{}
	// OpenBrowser sends the user to a login page; nil starts the system
	// browser (tests follow the redirect with an HTTP client instead).
	OpenBrowser func(url string) error
	// Args0 is the name the program was started by (os.Args[0]): the
	// command a bridge entry of install runs, as the user's PATH finds it.
	// "" means os.Executable.
	Args0 string
}

// errUsage marks a command-line mistake; the usage text has been printed.
var errUsage = errors.New("mcpgate: usage")

const usage = `mcpgate — a gateway that puts MCP tools on the network safely

Usage:
  mcpgate serve [flags]    run the gateway (see mcpgate serve --help)
  mcpgate certs [flags]    write a self-signed development certificate into certs/
  mcpgate worker           the built-in worker; the gateway starts it, not people
  mcpgate upstream --name N --url URL  the worker of a remote server; the gateway's, too
  mcpgate exec-limited     confines a worker, sets its rlimits and execs it; the gateway's, too
  mcpgate sandbox check -- CMD  runs CMD under the external worker profile, lists what was refused
  mcpgate version          print the version

Client side (see docs/client.md):
  mcpgate install [flags]    add the gateway to an MCP client's configuration
  mcpgate uninstall [flags]  take it out again
  mcpgate login --url URL    log in to a gateway (OAuth, in your browser)
  mcpgate token --url URL    print a valid access token, for curl and scripts
  mcpgate bridge --url URL   stdio to the gateway, for clients without OAuth
  mcpgate bridge --socket    stdio to the local gateway on a Unix socket, started if needed (docs/local.md)
  mcpgate doctor --url URL   check a gateway from outside (or --config FILE, from inside)
`

// Run runs one sub-command and returns when it is done or ctx is cancelled.
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "mcpgate: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
	return cmd(ctx, m, args[1:])
}

// Close releases what Run opened. Every command releases what it opens
// before Run returns (the gateway stops its workers and its server), so
// there is nothing left; Close stays so that tests and main end a Main the
// same way whatever a command comes to hold.
func (m *Main) Close() error { return nil }

// commands maps a sub-command name to its implementation; each lives in a
// file of its own.
var commands = map[string]func(ctx context.Context, m *Main, args []string) error{
	"version": func(_ context.Context, m *Main, _ []string) error {
		fmt.Fprintln(m.Stdout, "mcpgate", Version)
		return nil
	},
}

// Version is the product version, set at build time with -ldflags.
var Version = "0.1.0-dev"

func main() {
	// The first SIGTERM (or interrupt) ends ctx: serve drains. The second
	// closes hurry: serve stops at once.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		<-sig
		cancel()
		<-sig
		close(hurry)
	}()
	m := &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Hurry: hurry, Args0: os.Args[0]}
	err := m.Run(ctx, os.Args[1:])
	signal.Stop(sig)
	cancel()
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
