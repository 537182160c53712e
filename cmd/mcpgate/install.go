package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/install"
)

func init() {
	commands["install"] = func(ctx context.Context, m *Main, args []string) error {
		return runInstall(ctx, m, args, false)
	}
	commands["uninstall"] = func(ctx context.Context, m *Main, args []string) error {
		return runInstall(ctx, m, args, true)
	}
}

func clientNames() string {
	var names []string
	for _, c := range install.Clients() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// runInstall is `mcpgate install` and `mcpgate uninstall`.
func runInstall(_ context.Context, m *Main, args []string, remove bool) error {
	verb := "install"
	if remove {
		verb = "uninstall"
	}
	fs := pflag.NewFlagSet(verb, pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		if remove {
			fmt.Fprintf(m.Stderr, `Usage: mcpgate uninstall --client NAME [--name mcpgate] [--url URL] [--scope user|project] [--force] [--dry-run]

Removes the server entry NAME that "mcpgate install" wrote from the
client's configuration file, and nothing else (an entry it did not write
only with --force); with --url, only if the entry points at that URL. When
the file is still as install left it, it is given back byte for byte. The
previous contents are kept in a new FILE.bak (FILE.bak.1, … when taken).

Clients: %s

`, clientNames())
		} else {
			fmt.Fprintf(m.Stderr, `Usage: mcpgate install --client NAME --url URL [--name mcpgate] [--scope user|project] [--bridge [--ca-file FILE] [--cache FILE]] [--force] [--dry-run]
       mcpgate install --client NAME --local [--socket PATH [--system]] [--config FILE] [--server NAME] [--name mcpgate] [--scope user|project]
       mcpgate install --list

Writes an entry for the gateway at URL (its MCP endpoint, https://HOST/mcp)
into the client's own configuration file, in the client's format. Clients
that authorize with OAuth themselves get a remote (Streamable HTTP) entry;
Claude Desktop, and any client with --bridge, gets a stdio entry that runs
"mcpgate bridge --url URL" (log in first with "mcpgate login --url URL").
With --local, every client gets a stdio entry that runs "mcpgate bridge
--socket": the gateway on this machine, shared by all of them, started on
first use (docs/local.md).
A second run changes nothing; every other setting, server and comment of the
file is kept; an entry of that name that install did not write is replaced
only with --force; the previous contents are saved in a new FILE.bak
(FILE.bak.1, … when taken) and the file is replaced atomically.

Clients: %s

`, clientNames())
		}
		fs.PrintDefaults()
	}
	client := fs.String("client", "", "the MCP client: "+clientNames())
	gw := fs.String("url", "", "the gateway's MCP endpoint, e.g. https://mcp.example.com/mcp")
	name := fs.String("name", "mcpgate", "the server's name in the client's configuration (default mcpgate-NAME for a URL ending /mcp/NAME)")
	scope := fs.String("scope", "user", "user (the user's own file) or project (the file in --project-dir, shared through version control)")
	projectDir := fs.String("project-dir", "", "the project directory for --scope project (default: the working directory)")
	dryRun := fs.Bool("dry-run", false, "print the change as a diff and write nothing")
	force := fs.Bool("force", false, "replace or remove an entry of that name that mcpgate install did not write")
	var bridge, list, anyPath *bool
	var caFile, cache *string
	lf := addLocalInstallFlags(fs, remove)
	if !remove {
		bridge = fs.Bool("bridge", false, "write a stdio entry running mcpgate bridge even for a client that can reach the URL itself")
		list = fs.Bool("list", false, "list the known clients, whether each is present, and its file")
		anyPath = fs.Bool("any-path", false, "accept a --url whose path does not end in /mcp")
		caFile = fs.String("ca-file", "", "for a bridge entry: PEM file of extra CA certificates the bridge trusts (a private-CA gateway)")
		cache = fs.String("cache", "", "for a bridge entry: the token cache file the bridge uses")
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(m.Stderr, "mcpgate %s: takes no arguments, got %q\n", verb, fs.Args())
		return errUsage
	}
	if s := config.ServerNameOf(*gw); s != "" && !fs.Changed("name") {
		// One entry per server: installing /mcp/github does not replace
		// the entry of /mcp/db.
		*name = "mcpgate-" + s
	}
	env, err := clientEnv(m, *projectDir)
	if err != nil {
		return err
	}
	if list != nil && *list {
		return listClients(m, env, *name)
	}
	c, ok := install.Lookup(*client)
	if !ok {
		fmt.Fprintf(m.Stderr, "mcpgate %s: --client must be one of %s\n", verb, clientNames())
		return errUsage
	}
	if *scope != string(install.User) && *scope != string(install.Project) {
		fmt.Fprintf(m.Stderr, "mcpgate %s: --scope must be user or project\n", verb)
		return errUsage
	}
	entry := install.Entry{Name: *name, URL: *gw, Force: *force}
	var ch *install.Change
	if remove {
		ch, err = install.PlanUninstall(c, env, install.Scope(*scope), entry)
	} else {
		if lf.local {
			if entry, err = lf.entry(m, entry, *gw); err != nil {
				return err
			}
			ch, err = install.Plan(c, env, install.Scope(*scope), entry)
			return reportInstall(m, c, ch, err, *dryRun, *name, "the entry runs mcpgate bridge --socket, which starts the local gateway on first use")
		}
		if *gw == "" {
			fmt.Fprintln(m.Stderr, "mcpgate install: --url is required (the gateway's MCP endpoint), or --local")
			return errUsage
		}
		entry.Bridge, entry.AnyPath = *bridge, *anyPath
		if entry.Command, err = executable(m.Args0); err != nil {
			return err
		}
		for _, f := range []struct{ flag, path string }{{"--ca-file", *caFile}, {"--cache", *cache}} {
			if f.path == "" {
				continue
			}
			if c.Remote() && !entry.Bridge {
				fmt.Fprintf(m.Stderr, "mcpgate install: %s is for a bridge entry (--bridge, or Claude Desktop); %s does OAuth itself\n", f.flag, c.Title)
				return errUsage
			}
			abs, err := filepath.Abs(f.path)
			if err != nil {
				return fmt.Errorf("mcpgate: %s: %w", f.flag, err)
			}
			entry.BridgeArgs = append(entry.BridgeArgs, f.flag, abs)
		}
		ch, err = install.Plan(c, env, install.Scope(*scope), entry)
	}
	if err != nil {
		return err
	}
	switch {
	case !ch.Changed():
		fmt.Fprintf(m.Stdout, "%s: %s already %s; nothing to do\n", c.Title, ch.Path, map[bool]string{false: "has the entry", true: "lacks the entry"}[remove])
	case *dryRun:
		fmt.Fprint(m.Stdout, ch.Diff())
	default:
		if err := ch.Apply(); err != nil {
			return err
		}
		done := "wrote"
		if remove {
			done = "removed"
		}
		fmt.Fprintf(m.Stdout, "%s: %s %q in %s", c.Title, done, *name, ch.Path)
		if ch.Backup != "" {
			fmt.Fprintf(m.Stdout, " (previous contents in %s)", ch.Backup)
		}
		fmt.Fprintln(m.Stdout)
		switch {
		case remove:
		case !c.Remote() || entry.Bridge:
			fmt.Fprintf(m.Stdout, "the entry runs mcpgate bridge: log in once with\n  %s login --url %s\n", entry.Command, *gw)
		case c.Name == "codex":
			// Codex does not start the OAuth flow on its own when a
			// server answers 401; its CLI logs in.
			fmt.Fprintf(m.Stdout, "log in once with\n  codex mcp login %s\n", *name)
		}
	}
	return nil
}

// clientEnv is where the clients' files are for this user.
func clientEnv(m *Main, projectDir string) (install.Env, error) {
	home := m.Getenv("HOME")
	if runtime.GOOS == "windows" || home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return install.Env{}, fmt.Errorf("mcpgate: no home directory: %w", err)
		}
		home = h
	}
	if projectDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return install.Env{}, fmt.Errorf("mcpgate: %w", err)
		}
		projectDir = wd
	}
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return install.Env{}, fmt.Errorf("mcpgate: %w", err)
	}
	return install.Env{Home: home, ProjectDir: abs, GOOS: runtime.GOOS, Getenv: m.Getenv}, nil
}

// executable is the path a bridge entry runs: the one the user started
// mcpgate by (arg0, looked up in PATH when it has no directory), not the
// file a symlink leads to: a package manager's link (Homebrew's
// /opt/homebrew/bin/mcpgate) stays valid across upgrades, its target
// does not. It falls back to os.Executable when arg0 does not lead to
// this very program.
func executable(arg0 string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("mcpgate: cannot find its own path for the bridge entry: %w", err)
	}
	if arg0 == "" {
		return exe, nil
	}
	p := arg0
	if !strings.ContainsAny(arg0, `/\`) {
		if p, err = exec.LookPath(arg0); err != nil {
			return exe, nil
		}
	}
	if p, err = filepath.Abs(p); err != nil {
		return exe, nil
	}
	a, errA := os.Stat(p)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return exe, nil
	}
	return p, nil
}

func listClients(m *Main, env install.Env, name string) error {
	fmt.Fprintf(m.Stdout, "%-15s %-8s %-9s %s\n", "CLIENT", "PRESENT", "ENTRY", "FILE (user scope)")
	for _, c := range install.Clients() {
		present := "no"
		if c.Present(env) {
			present = "yes"
		}
		state := "-"
		// Force: --list only looks, and shows an entry of that name
		// whoever wrote it.
		if ch, err := install.PlanUninstall(c, env, install.User, install.Entry{Name: name, Force: true}); err != nil {
			state = "unreadable"
		} else if ch.Changed() {
			state = name
		}
		fmt.Fprintf(m.Stdout, "%-15s %-8s %-9s %s\n", c.Name, present, state, c.Path(env, install.User))
	}
	return nil
}
