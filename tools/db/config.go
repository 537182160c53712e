// Package db is the database side of the built-in worker: one connection and
// one open transaction per MCP session, over an Engine (tools/db/sqlite,
// tools/db/postgres) that supplies what differs between databases — how to
// connect read-only and as the user, the catalog queries, error mapping and
// which objects belong to the system.
package db

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Environment variables through which the gateway hands mcpgate worker its
// database settings, beside the identity variables of package worker. The
// gateway's config builds them with Config.Environ.
const (
	EnvDriver           = "MCPGATE_WORKER_DB_DRIVER"              // sqlite (default) or postgres
	EnvDSN              = "MCPGATE_WORKER_DB_DSN"                 // sqlite: the database file's path; postgres: a connection string
	EnvSetRole          = "MCPGATE_WORKER_DB_SET_ROLE"            // postgres: true to SET ROLE to the session's user
	EnvConnectAsUser    = "MCPGATE_WORKER_DB_CONNECT_AS_USER"     // postgres: true to log in as the session's user
	EnvUserRoleMemberOf = "MCPGATE_WORKER_DB_USER_ROLE_MEMBER_OF" // postgres: the role every user's role must be a member of
	EnvStatementTimeout = "MCPGATE_WORKER_DB_STATEMENT_TIMEOUT"   // a Go duration; default 30s
	EnvLockTimeout      = "MCPGATE_WORKER_DB_LOCK_TIMEOUT"        // a Go duration; default 5s
	EnvMaxRows          = "MCPGATE_WORKER_DB_MAX_ROWS"            // rows per result; default 500
	EnvChecksTimeout    = "MCPGATE_WORKER_DB_CHECKS_TIMEOUT"      // a Go duration; default 2m
	EnvIdleRelease      = "MCPGATE_WORKER_DB_IDLE_RELEASE"        // a Go duration; default 10s

	// A per-user worker's transaction handles (tools.Transactions).
	EnvMaxTransactions        = "MCPGATE_WORKER_DB_MAX_TRANSACTIONS"         // open handles per worker; default 4
	EnvTransactionIdleTimeout = "MCPGATE_WORKER_DB_TRANSACTION_IDLE_TIMEOUT" // a Go duration; default 30m
)

// Driver names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Defaults for the zero Config.
const (
	// DefaultSQLitePath is where a worker given no DSN keeps its SQLite
	// database: the data directory ./data, relative to the worker's working
	// directory (the gateway's), which `make run` uses.
	DefaultSQLitePath = "data/mcpgate.db"

	DefaultStatementTimeout = 30 * time.Second
	DefaultLockTimeout      = 5 * time.Second
	DefaultMaxRows          = 500
	DefaultChecksTimeout    = 2 * time.Minute

	// DefaultMaxTransactions bounds a per-user worker's open transaction
	// handles, each of which holds a database connection.
	DefaultMaxTransactions = 4
	// DefaultTransactionIdleTimeout ends a handle's transaction after this
	// long without a call; the gateway passes its session idle timeout.
	DefaultTransactionIdleTimeout = 30 * time.Minute
	// DefaultIdleRelease is how long an idle session keeps a transaction
	// without changes, and then its connection: long enough for a
	// client's next call in one exchange, short next to vacuum's and a
	// server's connection slots' patience.
	DefaultIdleRelease = 10 * time.Second
)

// Config is a worker's database settings. Its zero value (after the DSN is
// set) is a SQLite database with the default limits.
type Config struct {
	Driver string // SQLite (default) or Postgres
	DSN    string // SQLite: file path (default DefaultSQLitePath); Postgres: a pgx connection string

	// SetRole makes a PostgreSQL session SET ROLE to its user, so grants
	// and row-level security apply per user. It is not a security boundary
	// against a user who can run SQL (query, execute_sql): the login role is
	// a member of every user's role, and a statement can switch to another.
	SetRole bool

	// ConnectAsUser makes a PostgreSQL session log in as the role named by
	// its user, with whatever authentication the DSN and the PG environment
	// give that role (client certificates, peer or trust on a unix socket,
	// PGPASSFILE); the DSN's user and password are not used. No role is
	// shared between users, so grants and row-level security hold against
	// any SQL the user runs.
	ConnectAsUser bool

	// UserRoleMemberOf names the PostgreSQL role that every user's role
	// must be a member of, with SetRole or ConnectAsUser (required then):
	// a user id is a role only when it passes this positive rule, so a
	// user id that names another role (postgres, the login role) is
	// refused at session start (see CheckUserRole in tools/db/postgres).
	UserRoleMemberOf string

	// StatementTimeout stops a statement that runs longer (0: the default).
	StatementTimeout time.Duration

	// LockTimeout bounds the wait for another session's lock (SQLite busy
	// timeout, PostgreSQL lock_timeout); a statement that waits longer fails
	// with kind conflict (0: the default).
	LockTimeout time.Duration

	// MaxRows caps the rows of one result (0: the default).
	MaxRows int

	// ChecksTimeout bounds one run of every check (run_checks,
	// list_failing_checks); the checks not reached by then are reported as
	// not run (0: the default).
	ChecksTimeout time.Duration

	// MaxTransactions bounds the transaction handles a per-user worker
	// holds open at once (0: the default). Such a worker holds at most
	// MaxTransactions+1 connections: one per handle and at least one for
	// calls without a handle (ConnectionsPerUserWorker).
	MaxTransactions int

	// IdleRelease is how long a session may go without a statement before
	// it ends a transaction that has no uncommitted changes and closes its
	// connection (idle.go); 0: the default. A transaction handle's
	// transaction is the client's and is kept (TransactionIdleTimeout).
	IdleRelease time.Duration

	// TransactionIdleTimeout rolls back a handle's transaction after this
	// long without a call on it (0: the default).
	TransactionIdleTimeout time.Duration
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Driver == "" {
		c.Driver = SQLite
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	if c.LockTimeout <= 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.MaxRows <= 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.ChecksTimeout <= 0 {
		c.ChecksTimeout = DefaultChecksTimeout
	}
	if c.MaxTransactions <= 0 {
		c.MaxTransactions = DefaultMaxTransactions
	}
	if c.TransactionIdleTimeout <= 0 {
		c.TransactionIdleTimeout = DefaultTransactionIdleTimeout
	}
	if c.IdleRelease <= 0 {
		c.IdleRelease = DefaultIdleRelease
	}
	return c
}

// ConnectionsPerUserWorker is the most database connections a per-user
// worker with cfg holds: one per open handle, and one more, so that calls
// without a handle always have one (they may use every free one).
func ConnectionsPerUserWorker(cfg Config) int {
	return cfg.WithDefaults().MaxTransactions + 1
}

// envField is one worker variable and the Config field it carries.
type envField struct {
	name, field string
	always      bool
}

// envFields ties each worker variable to the Config field it carries, in
// the order Environ writes them. Driver, DSN and the role switches are
// always written; the others only when set, so that the worker applies
// its defaults.
var envFields = []envField{
	{EnvDriver, "Driver", true},
	{EnvDSN, "DSN", true},
	{EnvSetRole, "SetRole", true},
	{EnvConnectAsUser, "ConnectAsUser", true},
	{EnvUserRoleMemberOf, "UserRoleMemberOf", false},
	{EnvStatementTimeout, "StatementTimeout", false},
	{EnvLockTimeout, "LockTimeout", false},
	{EnvMaxRows, "MaxRows", false},
	{EnvChecksTimeout, "ChecksTimeout", false},
	{EnvMaxTransactions, "MaxTransactions", false},
	{EnvTransactionIdleTimeout, "TransactionIdleTimeout", false},
	{EnvIdleRelease, "IdleRelease", false},
}

// Environ returns c as NAME=value pairs for a worker's environment. Zero
// fields are left out, so the worker applies its defaults.
func (c Config) Environ() []string {
	var env []string
	v := reflect.ValueOf(c)
	for _, f := range envFields {
		fv := v.FieldByName(f.field)
		if !f.always && (fv.IsZero() || fv.Kind() == reflect.Int64 && fv.Int() < 0 || fv.Kind() == reflect.Int && fv.Int() < 0) {
			continue
		}
		env = append(env, f.name+"="+fmt.Sprint(fv.Interface()))
	}
	return env
}

// ConfigFromEnv reads a Config written by Environ; getenv is usually
// os.Getenv. It reports every malformed variable at once. Defaults are
// applied.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var problems []string
	v := reflect.ValueOf(&c).Elem()
	for _, f := range envFields {
		s := getenv(f.name)
		if s == "" {
			continue
		}
		switch fv := v.FieldByName(f.field); {
		case fv.Type() == reflect.TypeFor[time.Duration]():
			t, err := time.ParseDuration(s)
			if err != nil || t <= 0 {
				problems = append(problems, fmt.Sprintf("%s=%q: want a positive duration such as 30s", f.name, s))
			}
			fv.SetInt(int64(t))
		case fv.Kind() == reflect.Bool:
			t, err := strconv.ParseBool(s)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s=%q: want true or false", f.name, s))
			}
			fv.SetBool(t)
		case fv.Kind() == reflect.Int:
			i, err := strconv.Atoi(s)
			if err != nil || i <= 0 {
				problems = append(problems, fmt.Sprintf("%s=%q: want a positive integer", f.name, s))
			}
			fv.SetInt(int64(i))
		default:
			fv.SetString(s)
		}
	}
	c.Driver = strings.TrimSpace(c.Driver)
	switch c.Driver {
	case "", SQLite, Postgres:
	default:
		problems = append(problems, fmt.Sprintf("%s=%q: want %s or %s", EnvDriver, c.Driver, SQLite, Postgres))
	}
	c = c.WithDefaults()
	if c.DSN == "" && c.Driver == SQLite {
		c.DSN = DefaultSQLitePath
	}
	if c.DSN == "" {
		problems = append(problems, fmt.Sprintf("%s is empty: set it to a PostgreSQL connection string", EnvDSN))
	}
	if c.SetRole && c.Driver != Postgres {
		problems = append(problems, fmt.Sprintf("%s=true needs %s=%s", EnvSetRole, EnvDriver, Postgres))
	}
	if c.ConnectAsUser && c.Driver != Postgres {
		problems = append(problems, fmt.Sprintf("%s=true needs %s=%s", EnvConnectAsUser, EnvDriver, Postgres))
	}
	if (c.SetRole || c.ConnectAsUser) && c.UserRoleMemberOf == "" {
		problems = append(problems, fmt.Sprintf("%s and %s need %s: the role every user's role must be a member of", EnvSetRole, EnvConnectAsUser, EnvUserRoleMemberOf))
	}
	if c.SetRole && c.ConnectAsUser {
		problems = append(problems, fmt.Sprintf("%s and %s are exclusive: a session logged in as its user has no other role to set", EnvSetRole, EnvConnectAsUser))
	}
	if len(problems) > 0 {
		return c, fmt.Errorf("db: bad worker database settings: %s", strings.Join(problems, "; "))
	}
	return c, nil
}
