package config

import (
	"errors"
	"fmt"
	"github.com/mcpgate/mcpgate/tools/db"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
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
	} else if !c.external() {
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
	if w.IdentityOnStdin && !c.external() {
		v.add("worker.identity_on_stdin", "applies to an external worker.command only; the built-in worker always takes its identity on stdin when pre-started, so remove it")
	}
	switch w.Sessions {
	case "", SessionsShared, SessionsPerSession:
	default:
		v.add("worker.sessions", "%q: want %s (a user's sessions share the user's worker) or %s (a process per session)", w.Sessions, SessionsShared, SessionsPerSession)
	}
	if w.Sessions == SessionsShared && len(w.Credentials) > 0 {
		v.add("worker.sessions", "%s cannot be used with worker.credentials: a worker holding a credential is replaced before it expires, which would end every session it hosts; leave worker.sessions unset (a process per session)", SessionsShared)
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

// validateDatabase reports what only configuration can get wrong about
// the database: a DSN beside SQLite, whose file is database.path. The
// rest is db.Config.Validate's (validateBound).
func (c *Config) validateDatabase(v *validator) {
	if c.Database.Driver == db.SQLite && c.Database.DSN != "" {
		v.add("database.dsn", "is set but database.driver is sqlite; set driver: postgres or remove the dsn")
	}
}
