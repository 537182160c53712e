package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/install"
)

// localInstallFlags are install's flags for an entry that runs the shim.
type localInstallFlags struct {
	local, system          bool
	socket, config, server string
}

func addLocalInstallFlags(fs *pflag.FlagSet, remove bool) *localInstallFlags {
	lf := &localInstallFlags{}
	if remove {
		return lf
	}
	fs.BoolVar(&lf.local, "local", false, "write a stdio entry running mcpgate bridge --socket: the local gateway, shared by every client, started on first use")
	fs.StringVar(&lf.socket, "socket", "", "with --local: the gateway's socket (default: the per-user one)")
	fs.StringVar(&lf.config, "config", "", "with --local: the configuration the gateway starts with")
	fs.BoolVar(&lf.system, "system", false, "with --local: --socket is a system socket, another account's (the shim never starts it)")
	fs.StringVar(&lf.server, "server", "", "with --local: the server to reach, one of the configuration's servers (default: the built-in worker)")
	return lf
}

// entry completes e as a local entry.
func (lf *localInstallFlags) entry(m *Main, e install.Entry, url string) (install.Entry, error) {
	if url != "" {
		fmt.Fprintln(m.Stderr, "mcpgate install: --local and --url exclude each other: the local entry reaches the gateway on this machine's socket")
		return e, errUsage
	}
	if strings.ContainsAny(lf.server, "/?#% ") {
		fmt.Fprintln(m.Stderr, "mcpgate install: --server takes a server's name")
		return e, errUsage
	}
	var err error
	if e.Command, err = executable(m.Args0); err != nil {
		return e, err
	}
	e.Local = true
	if lf.socket != "" {
		if e.Socket, err = filepath.Abs(lf.socket); err != nil {
			return e, fmt.Errorf("mcpgate: --socket: %w", err)
		}
	}
	if lf.config != "" {
		abs, err := filepath.Abs(lf.config)
		if err != nil {
			return e, fmt.Errorf("mcpgate: --config: %w", err)
		}
		e.BridgeArgs = append(e.BridgeArgs, "--config", abs)
	}
	if lf.system {
		if lf.socket == "" {
			fmt.Fprintln(m.Stderr, "mcpgate install: --system needs the system socket's --socket PATH")
			return e, errUsage
		}
		e.BridgeArgs = append(e.BridgeArgs, "--system")
	}
	if lf.server != "" {
		e.BridgeArgs = append(e.BridgeArgs, "--server", lf.server)
	}
	return e, nil
}

// reportInstall applies (or, dry, shows) an install's change and says
// what it did; note follows a written entry.
func reportInstall(m *Main, c install.Client, ch *install.Change, err error, dry bool, name, note string) error {
	if err != nil {
		return err
	}
	switch {
	case !ch.Changed():
		fmt.Fprintf(m.Stdout, "%s: %s already has the entry; nothing to do\n", c.Title, ch.Path)
	case dry:
		fmt.Fprint(m.Stdout, ch.Diff())
	default:
		if err := ch.Apply(); err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "%s: wrote %q in %s", c.Title, name, ch.Path)
		if ch.Backup != "" {
			fmt.Fprintf(m.Stdout, " (previous contents in %s)", ch.Backup)
		}
		fmt.Fprintf(m.Stdout, "\n%s\n", note)
	}
	return nil
}
