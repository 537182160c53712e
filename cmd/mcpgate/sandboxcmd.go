package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/sandbox"
)

func init() { commands["sandbox"] = runSandbox }

// runSandbox is `mcpgate sandbox check [--config FILE] -- CMD...`: CMD under
// the external worker profile of the configuration (worker.sandbox,
// worker.dir), started by the same helper as the gateway's workers, with
// this command's stdin, stdout and stderr; then the list of what the
// kernel refused it (strace, when installed, watches it) and its exit
// status. An operator fits read_paths, write_paths and connect to a server
// before deploying it.
func runSandbox(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("sandbox check", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate sandbox check [--config FILE] -- CMD [ARG...]

Runs CMD as the gateway would run it as worker.command: confined by the
external worker profile (docs/sandbox.md) widened by the configuration's
worker.sandbox, in worker.dir, with this terminal's stdin and stdout (pipe
MCP messages in). Then lists each system call the kernel refused (with
strace, when installed) and CMD's exit status.

`)
		fs.PrintDefaults()
	}
	cfgFile := fs.String("config", "", "the gateway's configuration file (default: MCPGATE_ variables only)")
	if len(args) == 0 || args[0] != "check" {
		fs.Usage()
		return errUsage
	}
	switch err := fs.Parse(args[1:]); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(m.Stderr, "mcpgate sandbox check: name the command to run after --")
		return errUsage
	}
	cfg, err := config.Loader{Getenv: m.Getenv}.Load(*cfgFile, nil)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return fmt.Errorf("mcpgate sandbox check: the configuration has problems:\n%w", err)
	}
	command := fs.Args()
	prog, err := exec.LookPath(command[0])
	if err != nil {
		return fmt.Errorf("mcpgate sandbox check: %w", err)
	}
	if prog, err = filepath.Abs(prog); err != nil {
		return err
	}
	helper, err := limitHelper()
	if err != nil {
		return err
	}
	spec := sandbox.External(sandboxSpec(cfg.Worker.Sandbox), prog, cfg.Worker.Dir)
	sup := sandbox.Probe()
	fmt.Fprintf(m.Stderr, "mcpgate sandbox check: Landlock ABI %d, seccomp %v; profile %s: read %v, write %v, connect %s\n",
		sup.LandlockABI, sup.Seccomp, spec.Profile, spec.Read, spec.Write, connectText(spec))
	if !sup.Full() {
		fmt.Fprintf(m.Stderr, "mcpgate sandbox check: this kernel enforces less than the whole rule set: %s\n", sup.Missing())
	}
	argv := slices.Concat(helper, []string{sandbox.ArgPrefix + spec.Encode(), "--", prog}, command)
	trace := ""
	if st, err := exec.LookPath("strace"); err == nil {
		f, err := os.CreateTemp("", "mcpgate-sandbox-check-")
		if err != nil {
			return err
		}
		f.Close()
		trace = f.Name()
		defer os.Remove(trace)
		argv = slices.Concat([]string{st, "-f", "-qq", "-Z", "-s", "256", "-o", trace, "--"}, argv)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Dir = m.Stdin, m.Stdout, m.Stderr, cfg.Worker.Dir
	runErr := cmd.Run()
	if trace == "" {
		fmt.Fprintln(m.Stderr, "mcpgate sandbox check: strace is not installed, so refusals are not listed; look for EACCES and EPERM in the command's own errors")
	} else if err := printRefusals(m, trace); err != nil {
		return err
	}
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		fmt.Fprintf(m.Stderr, "mcpgate sandbox check: %s exited: %v\n", command[0], exit.ProcessState)
	case runErr != nil:
		return fmt.Errorf("mcpgate sandbox check: %w", runErr)
	default:
		fmt.Fprintf(m.Stderr, "mcpgate sandbox check: %s exited with status 0\n", command[0])
	}
	return nil
}

// printRefusals lists the refused calls of an strace output file.
func printRefusals(m *Main, trace string) error {
	f, err := os.Open(trace)
	if err != nil {
		return err
	}
	defer f.Close()
	seen, err := sandbox.Refusals(f)
	if err != nil {
		return err
	}
	if len(seen) == 0 {
		fmt.Fprintln(m.Stderr, "mcpgate sandbox check: nothing was refused")
		return nil
	}
	fmt.Fprintf(m.Stderr, "mcpgate sandbox check: %d refused:\n", len(seen))
	for _, l := range seen {
		fmt.Fprintln(m.Stderr, "  refused:", l)
	}
	return nil
}

// connectText says which TCP ports a profile may connect to.
func connectText(s sandbox.Spec) string {
	switch {
	case s.ConnectAny:
		return "any port"
	case len(s.Connect) == 0:
		return "no port"
	}
	return fmt.Sprint(s.Connect)
}
