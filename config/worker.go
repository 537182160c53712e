package config

import (
	"time"
)

// The values of worker.sessions.
const (
	SessionsShared     = "shared"
	SessionsPerSession = "per_session"
)

// SharedSessions reports whether 2025-11-25 sessions share their key's
// worker (worker.sessions, and its default). A worker given credentials
// keeps a process per session: the credential is replaced with the
// process, which would end every session it hosts. A remote server's
// worker (mcpgate upstream) does not host sessions.
func (c *Config) SharedSessions() bool {
	if c.RemoteURL() != "" {
		return false
	}
	switch c.Worker.Sessions {
	case SessionsShared:
		return true
	case SessionsPerSession:
		return false
	}
	return !c.external() && len(c.Worker.Credentials) == 0
}

// Worker says which process serves a session.
type Worker struct {
	// Command is the worker's argv. Empty means the built-in worker
	// (`mcpgate worker`, the running executable). Any stdio MCP server may
	// be named instead. In the environment and on the command line it is
	// one string split like a shell would (quotes group, no expansion).
	Command []string `mapstructure:"command"`
	// Env holds NAME=value pairs added to the worker's environment. The
	// YAML may give a list of NAME=value strings or a mapping; names keep
	// their case. Names starting MCPGATE_WORKER_ are reserved for the
	// identity the gateway hands the worker (workerproto.Identity.Environ) and refused.
	Env []string `mapstructure:"env"`
	// Dir is the worker's working directory; empty means the gateway's.
	Dir string `mapstructure:"dir"`
	// Toolsets names the built-in toolsets a session gets; empty means
	// every built-in one.
	Toolsets []string `mapstructure:"toolsets"`
	// SafeTools names the tools of an external worker (Command set) that
	// are safe in a read-only session. Empty means none: fail-closed
	// (docs/design.md, Read-only). The built-in toolsets vouch for their own.
	SafeTools []string `mapstructure:"safe_tools"`
	// SafeMethods names methods of an external worker, beyond MCP's read
	// methods (gateway.ReadMethods), that a read-only request may send.
	// Empty means none: fail-closed, as for tools.
	SafeMethods []string `mapstructure:"safe_methods"`
	// Limits bound each worker process (worker.limits.*).
	Limits WorkerLimits `mapstructure:"limits"`
	// Sandbox confines each worker process (worker.sandbox.*).
	Sandbox WorkerSandbox `mapstructure:"sandbox"`
	// PoolSize is how many built-in workers the gateway keeps started
	// ahead of need, each handed its session's identity on stdin when a
	// session claims it; 0 turns the pool off. Default DefaultPoolSize.
	// Used for an external Command only with IdentityOnStdin.
	PoolSize int `mapstructure:"pool_size"`
	// IdentityOnStdin declares that the external Command takes its
	// identity as the first line on stdin when started with
	// MCPGATE_WORKER_PRESTARTED=true (docs/gateway.md), so that
	// the pool may pre-start it. The built-in worker always does.
	IdentityOnStdin bool `mapstructure:"identity_on_stdin"`
	// Credentials are each user's own credentials for the downstream
	// service the worker reaches (config/credentials.go, docs/credentials.md).
	Credentials []WorkerCredential `mapstructure:"credentials"`
	// Sessions says where a 2025-11-25 session runs: SessionsShared, in
	// the one worker of its user, read-only flag and grant, beside their
	// 2026-07-28 requests (the worker must host sessions: the built-in one
	// does; an external Command must read and write the gateway's session
	// frames, docs/gateway.md); SessionsPerSession, in a process of its
	// own. Empty means shared for the built-in worker, per session for an
	// external Command.
	Sessions string `mapstructure:"sessions"`
	// RunAs, UIDRange, UIDMapFile, DataDir and Group say which OS account
	// a worker runs as (config/accounts.go).
	RunAs      string `mapstructure:"run_as"`
	UIDRange   string `mapstructure:"uid_range"`
	UIDMapFile string `mapstructure:"uid_map_file"`
	DataDir    string `mapstructure:"data_dir"`
	Group      string `mapstructure:"group"`
}

// WorkerLimits bound each worker process, so that one runaway worker cannot
// take the machine. Zero means not set. The rlimits (address_space,
// cpu_time, open_files) hold everywhere; memory, cpu and processes need a
// delegated cgroup v2 (the shipped systemd unit's Delegate=) and are
// skipped, with a warning at start, without one.
type WorkerLimits struct {
	// AddressSpace is RLIMIT_AS: the most virtual memory a worker may map.
	// An allocation beyond it fails and the worker usually exits. Go
	// programs map more than they use: keep it at 1GiB or more.
	AddressSpace ByteSize `mapstructure:"address_space"`
	// CPUTime is RLIMIT_CPU: the CPU time a worker may use over its life;
	// then SIGXCPU, and SIGKILL a second later.
	CPUTime time.Duration `mapstructure:"cpu_time"`
	// OpenFiles is RLIMIT_NOFILE: the most files and sockets a worker may
	// hold open.
	OpenFiles int `mapstructure:"open_files"`
	// Memory is the worker's cgroup memory.max (memory.swap.max is 0):
	// resident memory and page cache; beyond it the kernel kills the
	// worker.
	Memory ByteSize `mapstructure:"memory"`
	// CPU is the worker's cgroup cpu.max in cores (0.5 is half a core):
	// a throttle, not a kill.
	CPU float64 `mapstructure:"cpu"`
	// Processes is the worker's cgroup pids.max: its processes and threads
	// together; beyond it fork and thread creation fail.
	Processes int `mapstructure:"processes"`
	// UserProcesses is RLIMIT_NPROC: the processes and threads of the
	// worker's OS account, all its workers together. Needs worker.run_as
	// other than gateway (the gateway's own account is not limited).
	UserProcesses int `mapstructure:"user_processes"`
}

// Database is the built-in worker's database.
type Database struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string `mapstructure:"driver"`
	// Path is the SQLite file. Default data/mcpgate.db.
	Path string `mapstructure:"path"`
	// DSN is the PostgreSQL connection string (postgres:// URL or
	// key=value). Prefer a DSN without a password plus PGPASSFILE, or set
	// it through MCPGATE_DATABASE_DSN rather than in a file.
	DSN string `mapstructure:"dsn"`
	// SetRole makes each worker run `SET ROLE` to its session's user id on
	// PostgreSQL, so grants and row-level security apply per user. Not a
	// security boundary against a user who can run SQL: the shared login
	// role is a member of every user's role. ConnectAsUser is one.
	SetRole bool `mapstructure:"set_role"`
	// ConnectAsUser makes each worker log in to PostgreSQL as its session's
	// user id (the DSN's user and password are not used; authentication
	// comes from client certificates, pg_hba peer/trust or PGPASSFILE), so
	// the database enforces per-user rights against any SQL.
	ConnectAsUser bool `mapstructure:"connect_as_user"`
	// UserRoleMemberOf names the PostgreSQL role every user's role must be
	// a member of; required with SetRole or ConnectAsUser. A worker refuses
	// at session start a user id whose role is not a member of it, or is
	// privileged (superuser, BYPASSRLS, CREATEROLE, REPLICATION, a member
	// of a predefined pg_ role or of such a role) or is the login role.
	UserRoleMemberOf string `mapstructure:"user_role_member_of"`
	// StatementTimeout bounds one SQL statement. Default 30s.
	StatementTimeout time.Duration `mapstructure:"statement_timeout"`
	// LockTimeout bounds the wait for another session's lock (SQLite's
	// busy timeout, PostgreSQL's lock_timeout); a longer wait fails the
	// statement with kind conflict. Default 5s.
	LockTimeout time.Duration `mapstructure:"lock_timeout"`
	// MaxRows caps the rows of one tool result (the true total is still
	// reported). Default 500.
	MaxRows int `mapstructure:"max_rows"`
	// ChecksTimeout bounds one run of every check (run_checks,
	// list_failing_checks); checks not reached by then are reported as not
	// run. Default 2m.
	ChecksTimeout time.Duration `mapstructure:"checks_timeout"`
	// MaxTransactions bounds the transaction handles (begin) that one
	// per-user worker, serving MCP 2026-07-28, holds open at once; each
	// holds a database connection, and the worker holds at most one more
	// for calls without a handle. Default 4.
	MaxTransactions int `mapstructure:"max_transactions"`
	// IdleRelease is how long a session (or a per-user worker's
	// connection for calls without a handle) may go without a statement
	// before it ends a transaction that has no uncommitted changes and
	// closes its database connection. Default 10s.
	IdleRelease time.Duration `mapstructure:"idle_release"`
	// TransactionIdleTimeout rolls a handle's transaction back after this
	// long without a call on it. Default: limits.session_idle_timeout.
	TransactionIdleTimeout time.Duration `mapstructure:"transaction_idle_timeout"`
}
