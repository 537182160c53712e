package config

import (
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools/db"
)

func (c *Config) validateLimits(v *validator) {
	l := c.Limits
	for _, d := range []struct {
		key string
		val time.Duration
	}{
		{"limits.read_header_timeout", l.ReadHeaderTimeout},
		{"limits.read_timeout", l.ReadTimeout},
		{"limits.idle_timeout", l.IdleTimeout},
		{"limits.session_idle_timeout", l.SessionIdleTimeout},
		{"limits.worker_start_timeout", l.WorkerStartTimeout},
		{"limits.worker_stop_grace", l.WorkerStopGrace},
		{"limits.write_timeout", l.WriteTimeout},
		{"limits.unauthenticated_idle_timeout", l.UnauthenticatedIdleTimeout},
		{"limits.drain_timeout", l.DrainTimeout},
		{"limits.drain_min", l.DrainMin},
		{"limits.max_stream_lifetime", l.MaxStreamLifetime},
	} {
		if d.val < 0 {
			v.add(d.key, "%v is negative; use a positive duration such as 30s (0 or no key means the default)", d.val)
		}
	}
	for _, n := range []struct {
		key string
		val int
	}{
		{"limits.max_connections", l.MaxConnections},
		{"limits.max_connections_per_principal", l.MaxConnectionsPerPrincipal},
		{"limits.max_sessions", l.MaxSessions},
		{"limits.max_sessions_per_user", l.MaxSessionsPerUser},
		{"limits.max_db_connections", l.MaxDBConnections},
		{"limits.max_db_connections_per_user", l.MaxDBConnectionsPerUser},
		{"limits.max_unauthenticated_per_address", l.MaxUnauthenticatedPerAddress},
	} {
		if n.val < 0 {
			v.add(n.key, "%d is negative; use a positive number (0 or no key means the default)", n.val)
		}
	}
	if l.MaxBodyBytes < 0 || l.MaxBodyBytes > 1<<30 {
		v.add("limits.max_body_bytes", "%d is outside 1 byte to 1GiB; use a size such as 8MiB (0 or no key means the default)", int64(l.MaxBodyBytes))
	}
	if l.MaxWorkerMessageBytes < 0 || l.MaxWorkerMessageBytes > 1<<30 || l.MaxWorkerMessageBytes > 0 && l.MaxWorkerMessageBytes < 1<<20 {
		v.add("limits.max_worker_message_bytes", "%d is outside 1MiB to 1GiB; use a size such as 64MiB, above the worker's largest answer (0 or no key means the default)", int64(l.MaxWorkerMessageBytes))
	}
	if l.DrainMin > 0 && l.DrainTimeout > 0 && l.DrainMin > l.DrainTimeout {
		v.add("limits.drain_min", "%v is longer than limits.drain_timeout %v, which bounds the whole drain; lower drain_min or raise drain_timeout", l.DrainMin, l.DrainTimeout)
	}
	if l.ReadHeaderTimeout > 0 && l.ReadTimeout > 0 && l.ReadHeaderTimeout > l.ReadTimeout {
		v.add("limits.read_header_timeout", "%v is longer than limits.read_timeout %v, which bounds reading the body; lower it", l.ReadHeaderTimeout, l.ReadTimeout)
	}
	bufs := []struct {
		key string
		val ByteSize
	}{
		{"limits.max_stream_buffer_bytes", l.MaxStreamBufferBytes},
		{"limits.max_session_buffer_bytes", l.MaxSessionBufferBytes},
		{"limits.max_user_buffer_bytes", l.MaxUserBufferBytes},
	}
	for i, b := range bufs {
		switch {
		case b.val < 0 || b.val > 1<<40:
			v.add(b.key, "%d is outside 1 byte to 1TiB; use a size such as 64MiB (0 or no key means the default)", int64(b.val))
		case i > 0 && b.val > 0 && bufs[i-1].val > b.val:
			v.add(bufs[i-1].key, "%d is more than %s %d; a smaller share cannot hold more than the larger one", int64(bufs[i-1].val), b.key, int64(b.val))
		}
	}
	if l.MaxConnectionsPerPrincipal > 0 && l.MaxConnections > 0 && l.MaxConnectionsPerPrincipal >= l.MaxConnections {
		v.add("limits.max_connections_per_principal", "%d is not below limits.max_connections %d, so one user could hold every connection; lower it (the default is a quarter of max_connections)", l.MaxConnectionsPerPrincipal, l.MaxConnections)
	}
	if l.MaxStreamLifetime > 0 && l.MaxStreamLifetime < time.Second {
		v.add("limits.max_stream_lifetime", "%v is below 1s; clients would reopen their streams without pause; use a duration such as 1h", l.MaxStreamLifetime)
	}
	if l.MaxSessionsPerUser > 0 && l.MaxSessions > 0 && l.MaxSessionsPerUser > l.MaxSessions {
		v.add("limits.max_sessions_per_user", "%d is more than limits.max_sessions %d; lower it or raise max_sessions", l.MaxSessionsPerUser, l.MaxSessions)
	}
	if l.MaxDBConnectionsPerUser > 0 && l.MaxDBConnections > 0 && l.MaxDBConnectionsPerUser > l.MaxDBConnections {
		v.add("limits.max_db_connections_per_user", "%d is more than limits.max_db_connections %d; lower it or raise max_db_connections", l.MaxDBConnectionsPerUser, l.MaxDBConnections)
	} else if b, ok := c.DBBudget(); ok && l.MaxDBConnections >= 0 && l.MaxDBConnectionsPerUser >= 0 {
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
