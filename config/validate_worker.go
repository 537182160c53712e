package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

func (c *Config) validateWorker(v *validator) {
	w := c.Worker
	if len(w.Command) > 0 {
		switch name := w.Command[0]; {
		case strings.TrimSpace(name) == "":
			v.add("worker.command", "the program name (first word) is empty")
		case strings.ContainsRune(name, filepath.Separator):
			if msg := checkExecutable(name); msg != "" {
				v.add("worker.command", "%s", msg)
			}
		default:
			if _, err := exec.LookPath(name); err != nil {
				v.add("worker.command", "%q is not found in PATH; give its absolute path", name)
			}
		}
	} else {
		if len(w.SafeTools) > 0 {
			v.add("worker.safe_tools", "applies to an external worker.command only; the built-in toolsets vouch for their own read-only tools, so remove it")
		}
		if len(w.SafeMethods) > 0 {
			v.add("worker.safe_methods", "applies to an external worker.command only; the built-in worker serves tools alone, so remove it")
		}
	}
	for i, e := range w.Env {
		name, _, ok := strings.Cut(e, "=")
		key := fmt.Sprintf("worker.env[%d]", i)
		switch {
		case !ok || !validEnvName(name):
			v.add(key, "is not NAME=value with NAME made of letters, digits and _ (the value is not shown)")
		case strings.HasPrefix(name, "MCPGATE_WORKER_"):
			v.add(key, "%s is reserved: the gateway sets MCPGATE_WORKER_* to the session's identity, which configuration may not override", name)
		}
	}
	if w.Dir != "" {
		if fi, err := os.Stat(w.Dir); err != nil {
			v.add("worker.dir", "%q: %v; create it or fix the path", w.Dir, errors.Unwrap(err))
		} else if !fi.IsDir() {
			v.add("worker.dir", "%q is not a directory", w.Dir)
		}
	}
	if w.PoolSize < 0 || w.PoolSize > MaxPoolSize {
		v.add("worker.pool_size", "%d is outside 0 (off) to %d; each pre-started worker holds an idle process (about 2 MiB private memory)", w.PoolSize, MaxPoolSize)
	}
	if w.IdentityOnStdin && len(w.Command) == 0 {
		v.add("worker.identity_on_stdin", "applies to an external worker.command only; the built-in worker always takes its identity on stdin when pre-started, so remove it")
	}
	c.validateAccounts(v)
	checkNames(v, "worker.toolsets", w.Toolsets)
	checkNames(v, "worker.safe_tools", w.SafeTools)
	checkNames(v, "worker.safe_methods", w.SafeMethods)
	for _, m := range w.SafeMethods {
		switch {
		case m == "tools/call" || m == "tools/list":
			v.add("worker.safe_methods", "%q is decided per tool; list read-only tools in worker.safe_tools instead", m)
		case m == "initialize" || strings.HasPrefix(m, "notifications/"):
			v.add("worker.safe_methods", "%q is not a request a read-only session is refused; remove it", m)
		}
	}
}

// checkExecutable reports what stops path from being run, or "".
func checkExecutable(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("%q: %v", path, errors.Unwrap(err))
	case fi.IsDir():
		return fmt.Sprintf("%q is a directory, not a program", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Sprintf("%q is not executable (chmod +x)", path)
	}
	return ""
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'))
	}) < 0
}

// checkNames reports empty, oddly spelled or repeated tool and toolset names.
func checkNames(v *validator, key string, names []string) {
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == "" || strings.IndexFunc(n, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			v.add(key, "%q is not a name (no spaces or control characters)", n)
		case seen[n]:
			v.add(key, "%q is listed twice", n)
		}
		seen[n] = true
	}
}

func (c *Config) validateDatabase(v *validator) {
	d := c.Database
	switch d.Driver {
	case "sqlite":
		if d.DSN != "" {
			v.add("database.dsn", "is set but database.driver is sqlite; set driver: postgres or remove the dsn")
		}
		if d.SetRole {
			v.add("database.set_role", "needs database.driver: postgres; SQLite has no roles")
		}
		if d.ConnectAsUser {
			v.add("database.connect_as_user", "needs database.driver: postgres; SQLite has no roles")
		}
	case "postgres":
		if d.DSN == "" {
			v.add("database.dsn", "is required with driver postgres; e.g. postgres://mcpgate@db.example.com/mcp?sslmode=verify-full (or set %s)", EnvName("database.dsn"))
		} else if !plausibleDSN(d.DSN) {
			v.add("database.dsn", "is neither a postgres:// URL nor key=value pairs (its value is not shown)")
		}
	default:
		v.add("database.driver", "%q is not a driver; use sqlite or postgres", d.Driver)
	}
	switch r := d.UserRoleMemberOf; {
	case d.Driver == "postgres" && (d.SetRole || d.ConnectAsUser) && r == "":
		v.add("database.user_role_member_of", "is required with database.set_role or database.connect_as_user: name the role every user's role is a member of (CREATE ROLE mcp_users NOLOGIN; GRANT mcp_users TO alice), so that a user id naming any other role (postgres, the login role) is refused")
	case r != "" && d.Driver == "postgres" && !d.SetRole && !d.ConnectAsUser:
		v.add("database.user_role_member_of", "is set but neither database.set_role nor database.connect_as_user is; remove it or turn one on")
	case len(r) > 63 || strings.IndexFunc(r, unicode.IsControl) >= 0 || !utf8.ValidString(r):
		v.add("database.user_role_member_of", "%q cannot be a PostgreSQL role name (at most 63 bytes, no control characters)", r)
	}
	if d.SetRole && d.ConnectAsUser {
		v.add("database.connect_as_user", "and database.set_role are exclusive: a worker logged in as its user has no other role to set; keep connect_as_user")
	}
	if d.LockTimeout < 0 {
		v.add("database.lock_timeout", "%v is negative; use a duration such as 5s", d.LockTimeout)
	}
	if d.MaxRows < 0 {
		v.add("database.max_rows", "%d is negative; use a row count such as 500", d.MaxRows)
	}
	if d.StatementTimeout < 0 {
		v.add("database.statement_timeout", "%v is negative; use a duration such as 30s", d.StatementTimeout)
	}
	if d.ChecksTimeout < 0 {
		v.add("database.checks_timeout", "%v is negative; use a duration such as 2m", d.ChecksTimeout)
	}
	if d.MaxTransactions < 0 {
		v.add("database.max_transactions", "%d is negative; use a handle count such as 4", d.MaxTransactions)
	}
	if d.IdleRelease < 0 {
		v.add("database.idle_release", "%v is negative; use a duration such as 10s", d.IdleRelease)
	}
	if d.TransactionIdleTimeout < 0 {
		v.add("database.transaction_idle_timeout", "%v is negative; use a duration such as 30m", d.TransactionIdleTimeout)
	}
}

// plausibleDSN accepts the two forms pgx parses: a URL and key=value pairs.
func plausibleDSN(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		_, err := url.Parse(dsn)
		return err == nil
	}
	return strings.Contains(dsn, "=")
}
