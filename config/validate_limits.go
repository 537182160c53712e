package config

import (
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools/db"
)

// validateLimits reports the limits no package's options hold (the
// http.Server's) and the rules between packages; each package's own are
// reported by validateBound.
func (c *Config) validateLimits(v *validator) {
	l := c.Limits
	for _, d := range []struct {
		key string
		val time.Duration
	}{
		{"limits.read_header_timeout", l.ReadHeaderTimeout},
		{"limits.idle_timeout", l.IdleTimeout},
		{"limits.drain_timeout", l.DrainTimeout},
	} {
		if d.val < 0 {
			v.add(d.key, "%v is negative; use a positive duration such as 30s (0 or no key means the default)", d.val)
		}
	}
	if l.DrainMin > 0 && l.DrainTimeout > 0 && l.DrainMin > l.DrainTimeout {
		v.add("limits.drain_min", "%v is longer than limits.drain_timeout %v, which bounds the whole drain; lower drain_min or raise drain_timeout", l.DrainMin, l.DrainTimeout)
	}
	if l.ReadHeaderTimeout > 0 && l.ReadTimeout > 0 && l.ReadHeaderTimeout > l.ReadTimeout {
		v.add("limits.read_header_timeout", "%v is longer than limits.read_timeout %v, which bounds reading the body; lower it", l.ReadHeaderTimeout, l.ReadTimeout)
	}
	if l.MaxDBConnectionsPerUser > 0 && l.MaxDBConnections > 0 && l.MaxDBConnectionsPerUser > l.MaxDBConnections {
		return // gateway.Options.Validate reports it
	}
	if b, ok := c.DBBudget(); ok && l.MaxDBConnections >= 0 && l.MaxDBConnectionsPerUser >= 0 {
		if err := gateway.CheckDBBudget(b); err != nil {
			v.add("limits.max_db_connections_per_user", "%d: %v (a per-user worker holds database.max_transactions %d + 1); raise it or lower max_transactions", l.MaxDBConnectionsPerUser, err, c.Database.MaxTransactions)
		}
	}
}

// DBBudget is the gateway's database connection budget, and whether one
// applies: to the built-in worker on PostgreSQL, whose server has a
// max_connections to share. SQLite has no server; an external worker's
// database is its own business.
func (c *Config) DBBudget() (gateway.DBBudget, bool) {
	if len(c.Worker.Command) > 0 || c.Database.Driver != db.Postgres {
		return gateway.DBBudget{}, false
	}
	return gateway.DBBudget{
		Max:           c.Limits.MaxDBConnections,
		MaxPerUser:    c.Limits.MaxDBConnectionsPerUser,
		PerSession:    1,
		PerUserWorker: db.ConnectionsPerUserWorker(db.Config{MaxTransactions: c.Database.MaxTransactions}),
	}, true
}

func (c *Config) validateWorkerLimits(v *validator) {
	l := c.Worker.Limits
	if l.AddressSpace < 0 || (l.AddressSpace > 0 && l.AddressSpace < 64<<20) {
		v.add("worker.limits.address_space", "%d is below 64MiB, too little for a worker to start; use a size such as 4GiB (0 or no key means no limit)", int64(l.AddressSpace))
	}
	if l.Memory < 0 || (l.Memory > 0 && l.Memory < 16<<20) {
		v.add("worker.limits.memory", "%d is below 16MiB, too little for a worker to start; use a size such as 512MiB (0 or no key means no limit)", int64(l.Memory))
	}
	if l.CPUTime < 0 || (l.CPUTime > 0 && l.CPUTime < time.Second) {
		v.add("worker.limits.cpu_time", "%v is below 1s, the unit of RLIMIT_CPU; use a duration such as 10m (0 or no key means no limit)", l.CPUTime)
	}
	if l.OpenFiles < 0 || (l.OpenFiles > 0 && l.OpenFiles < 16) {
		v.add("worker.limits.open_files", "%d is below 16; a worker needs its pipes, its database and its libraries (0 or no key means no limit)", l.OpenFiles)
	}
	if l.CPU < 0 || (l.CPU > 0 && l.CPU < 0.01) || l.CPU > 4096 {
		v.add("worker.limits.cpu", "%v is outside 0.01 to 4096 cores; use a number of cores such as 0.5 or 2 (0 or no key means no limit)", l.CPU)
	}
	if l.Processes < 0 || (l.Processes > 0 && l.Processes < 8) {
		v.add("worker.limits.processes", "%d is below 8; a worker's runtime needs a few threads (a Go worker about 8) (0 or no key means no limit)", l.Processes)
	}
}
