package builtin

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate/sandbox"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
)

// confine applies the sandbox the gateway asked for (sandbox.EnvSpec) to
// this process, widened by the built-in profile: this executable and the
// database of the worker's settings. Nothing is exec'd: the worker
// confines itself, once its identity is known and before it opens its
// database or reads another byte of input. No variable: no sandbox. A
// pre-started worker made it ready before its identity came (pending):
// then only the enforcing is left.
func confine(getenv func(string) string, pending *sandbox.Pending) error {
	if pending == nil {
		var err error
		if pending, err = readyConfinement(getenv); err != nil || pending == nil {
			return err
		}
	}
	if _, err := pending.Enforce(); err != nil {
		return fmt.Errorf("mcpgate worker: %w", err)
	}
	return nil
}

// readyConfinement does the part of confine that needs no identity: the
// rules resolved, the Landlock rule set and the seccomp filter made.
// No variable: nil.
func readyConfinement(getenv func(string) string) (*sandbox.Pending, error) {
	v := getenv(sandbox.EnvSpec)
	if v == "" {
		return nil, nil
	}
	base, err := sandbox.Decode(v)
	if err != nil {
		return nil, fmt.Errorf("mcpgate worker: %w", err)
	}
	cfg, err := db.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	need, err := databaseNeeds(cfg, getenv)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mcpgate worker: finding this executable for the sandbox: %w", err)
	}
	p, err := sandbox.Ready(sandbox.Builtin(base, exe, need))
	if err != nil {
		return nil, fmt.Errorf("mcpgate worker: %w", err)
	}
	return p, nil
}

// databaseNeeds is what the worker's database needs under the sandbox:
// SQLite's directory (the database, its journal, WAL and shared-memory
// files; made when missing), or PostgreSQL's client files and server ports.
func databaseNeeds(cfg db.Config, getenv func(string) string) (sandbox.DB, error) {
	if cfg.Driver == db.Postgres {
		files, ports := postgres.SandboxNeeds(cfg.DSN, getenv)
		return sandbox.DB{Read: append(files, postgres.SandboxSystemFiles...), Connect: ports}, nil
	}
	path := cfg.DSN
	if path == "" {
		path = db.DefaultSQLitePath
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return sandbox.DB{}, fmt.Errorf("mcpgate worker: database path: %w", err)
	}
	// The directory must exist for a rule to name it: made now, as the
	// worker would make it when it creates the database.
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return sandbox.DB{}, fmt.Errorf("mcpgate worker: database directory: %w", err)
	}
	return sandbox.DB{Write: []string{dir}}, nil
}
