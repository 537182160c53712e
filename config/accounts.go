package config

import (
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/worker"
)

// DefaultRunAs is worker.run_as when no key sets it: every worker runs
// under the gateway's own account.
const DefaultRunAs = worker.RunAsGateway

// UIDs parses worker.uid_range, "first-last" (inclusive); 0, 0 when the
// key is empty.
func (w Worker) UIDs() (first, last uint32, err error) {
	if w.UIDRange == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(w.UIDRange, "-")
	f, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	l, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%q is not first-last, such as 200000-299999", w.UIDRange)
	case f < worker.MinAccountUID || f > l || l >= 1<<32-2:
		return 0, 0, fmt.Errorf("%q must run upwards from %d at least, below 4294967294", w.UIDRange, worker.MinAccountUID)
	}
	return uint32(f), uint32(l), nil
}

// WorkerGroup resolves worker.group, a group name or number; ok is false
// when the key is empty.
func (w Worker) WorkerGroup() (gid uint32, ok bool, err error) {
	if w.Group == "" {
		return 0, false, nil
	}
	if n, err := strconv.ParseUint(w.Group, 10, 32); err == nil {
		return uint32(n), true, nil
	}
	g, err := user.LookupGroup(w.Group)
	if err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	return uint32(n), err == nil, err
}

// AccountsOptions maps worker.run_as and the keys beside it to the
// launcher's; nil for run_as gateway.
func (w Worker) AccountsOptions() (*worker.AccountsOptions, error) {
	if w.RunAs == "" || w.RunAs == worker.RunAsGateway {
		return nil, nil
	}
	first, last, err := w.UIDs()
	if err != nil {
		return nil, fmt.Errorf("worker.uid_range: %w", err)
	}
	gid, hasGroup, err := w.WorkerGroup()
	if err != nil {
		return nil, fmt.Errorf("worker.group: %w", err)
	}
	o := &worker.AccountsOptions{RunAs: w.RunAs, First: first, Last: last, Group: gid, HasGroup: hasGroup}
	if w.UIDMapFile != "" {
		if o.MapFile, err = filepath.Abs(w.UIDMapFile); err != nil {
			return nil, fmt.Errorf("worker.uid_map_file: %w", err)
		}
	}
	if w.DataDir != "" {
		if o.DataDir, err = filepath.Abs(w.DataDir); err != nil {
			return nil, fmt.Errorf("worker.data_dir: %w", err)
		}
	}
	return o, nil
}

// validateAccounts checks worker.run_as and the keys that only it uses.
func (c *Config) validateAccounts(v *validator) {
	w := c.Worker
	gateway := w.RunAs == "" || w.RunAs == worker.RunAsGateway
	if gateway {
		for key, set := range map[string]bool{"worker.uid_range": w.UIDRange != "", "worker.uid_map_file": w.UIDMapFile != "",
			"worker.data_dir": w.DataDir != "", "worker.group": w.Group != "", "worker.limits.user_processes": w.Limits.UserProcesses != 0} {
			if set {
				v.add(key, "applies only with worker.run_as user or an account name; remove it or set worker.run_as")
			}
		}
		return
	}
	if len(w.Command) == 0 && c.Database.Driver != "postgres" && w.Group == "" {
		v.add("worker.group", "is required with worker.run_as other than gateway and the built-in worker on SQLite: the workers' accounts share the database file through this group (the gateway hands the file and its directory to it); or use PostgreSQL")
	}
	if len(w.Command) == 0 && c.Database.Driver != "postgres" && w.Group != "" {
		c.validateBesideSQLite(v)
	}
	if w.DataDir != "" {
		c.validateInsideDataDir(v)
	}
	if w.RunAs == worker.RunAsUser {
		if w.DataDir == "" {
			v.add("worker.data_dir", "is required with worker.run_as user: each user's worker gets <data_dir>/<user id>, its own HOME, working and temp directory, e.g. /var/lib/mcpgate/users")
		}
	} else if strings.IndexFunc(w.RunAs, func(r rune) bool { return r <= ' ' || r == '/' || r == ':' }) >= 0 {
		v.add("worker.run_as", "%q is not gateway, user or an account name", w.RunAs)
	}
	if _, _, err := w.UIDs(); err != nil {
		v.add("worker.uid_range", "%v", err)
	}
	switch {
	case w.UIDRange != "" && w.RunAs != worker.RunAsUser:
		v.add("worker.uid_range", "applies only with worker.run_as user")
	case w.UIDRange != "" && w.UIDMapFile == "":
		v.add("worker.uid_map_file", "is required with worker.uid_range: it keeps the uid given to each user id, so that a user keeps theirs across restarts and replicas agree, e.g. /var/lib/mcpgate/uids.json")
	case w.UIDRange == "" && w.UIDMapFile != "":
		v.add("worker.uid_map_file", "is set but worker.uid_range is not; set the range the uids come from, or remove it")
	}
	if _, _, err := w.WorkerGroup(); err != nil {
		v.add("worker.group", "%q: %v", w.Group, err)
	}
	if w.Limits.UserProcesses < 0 || (w.Limits.UserProcesses > 0 && w.Limits.UserProcesses < 16) {
		v.add("worker.limits.user_processes", "%d is below 16; a worker's runtime needs a few threads, and every worker of the account counts (0 or no key means no limit)", w.Limits.UserProcesses)
	}
	if w.PoolSize > 0 && w.PoolSize != DefaultPoolSize {
		v.add("worker.pool_size", "must be 0 with worker.run_as other than gateway: a pre-started worker runs as no user in particular, so none is kept; remove the key")
	}
}

// validateBesideSQLite refuses a mapping file or data directory inside the
// SQLite database's directory, which the gateway makes writable by
// worker.group, and so by every worker: one could replace the mapping file
// (taking another user's uid) or plant another user's data directory.
func (c *Config) validateBesideSQLite(v *validator) {
	db, err := filepath.Abs(c.Database.Path)
	if err != nil {
		return
	}
	shared := filepath.Dir(db)
	for _, k := range []struct{ key, path string }{{"worker.uid_map_file", c.Worker.UIDMapFile}, {"worker.data_dir", c.Worker.DataDir}} {
		p, err := filepath.Abs(k.path)
		if k.path == "" || err != nil {
			continue
		}
		if inside(shared, p) {
			v.add(k.key, "%s is inside database.path's directory %s, which worker.group (every worker) may write: keep it apart, e.g. the database in /var/lib/mcpgate/data", k.path, shared)
		}
	}
}

// validateInsideDataDir refuses the mapping file or the SQLite database
// inside worker.data_dir: a user id names a directory there that the
// gateway hands to its account, so a user called after the directory
// holding either would own it.
func (c *Config) validateInsideDataDir(v *validator) {
	dataDir, err := filepath.Abs(c.Worker.DataDir)
	if err != nil {
		return
	}
	for _, k := range []struct {
		key, path string
		on        bool
	}{{"worker.uid_map_file", c.Worker.UIDMapFile, true}, {"database.path", c.Database.Path, c.Database.Driver != "postgres"}} {
		p, err := filepath.Abs(k.path)
		if k.on && k.path != "" && err == nil && inside(dataDir, p) {
			v.add(k.key, "%s is inside worker.data_dir %s, where a user named after its directory would be given it: keep it apart", k.path, dataDir)
		}
	}
}

// inside reports whether path is dir or lies below it (both absolute).
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
