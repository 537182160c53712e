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
// database or reads another byte of input. No variable: no sandbox.
func confine(getenv func(string) string) error {
	v := getenv(sandbox.EnvSpec)
	if v == "" {
		return nil
	}
	base, err := sandbox.Decode(v)
	if err != nil {
		return fmt.Errorf("mcpgate worker: %w", err)
	}
	cfg, err := db.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	need, err := databaseNeeds(cfg, getenv)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcpgate worker: finding this executable for the sandbox: %w", err)
	}
	if _, err := sandbox.Apply(sandbox.Builtin(base, exe, need)); err != nil {
		return fmt.Errorf("mcpgate worker: %w", err)
	}
	return nil
}

// prepareConfinement does, for a pre-started worker, the part of confine
// that needs no identity: assembling the seccomp filter.
func prepareConfinement(getenv func(string) string) error {
	if getenv(sandbox.EnvSpec) == "" {
		return nil
	}
	return sandbox.Prepare()
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
