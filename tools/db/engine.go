package db

import (
	"context"
	"database/sql"
	"time"
)

// Querier runs statements inside the session's transaction. *sql.Conn is one.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Engine is what differs between databases. A Session drives the
// transaction; the engine connects, names the statements and reads the
// catalog.
type Engine interface {
	// Name is the driver name (SQLite, Postgres).
	Name() string

	// Open returns a pool for cfg that the session takes one connection
	// from. A read-only session's database must refuse writes itself (SQLite
	// mode=ro and query_only).
	Open(cfg Config, readOnly bool) (*sql.DB, error)

	// Setup prepares the session's connection: read-only, the user's role,
	// timeouts. It runs outside any transaction.
	Setup(ctx context.Context, c *sql.Conn, cfg Config, user string, readOnly bool) error

	// Begin is the statement that starts the session's transaction.
	Begin(readOnly bool) string

	// Mark records, right after Begin, what Dirty later compares with.
	Mark(ctx context.Context, q Querier) (any, error)

	// Dirty reports whether the transaction has changed anything since
	// Mark.
	Dirty(ctx context.Context, q Querier, mark any) (bool, error)

	// Check runs after every statement the session ran for a tool, before
	// its result is used: an error makes the session roll the statement back
	// and (for a security check) close. PostgreSQL checks the role is still
	// the user's.
	Check(ctx context.Context, q Querier, mark any) error

	// Classify maps an engine error to an *Error, or nil when it does not
	// recognise it.
	Classify(err error) *Error

	Catalog
}

// UserOpener is an Engine that can log in as the session's user (PostgreSQL
// with Config.ConnectAsUser): Open calls OpenAs instead of Engine.Open.
type UserOpener interface {
	OpenAs(cfg Config, user string, readOnly bool) (*sql.DB, error)
}

// CallGuard is an Engine with statements that confine one tool call
// (PostgreSQL), beyond what the call's savepoint undoes.
type CallGuard interface {
	// ReadOnlyCall runs right after a Read's savepoint and makes the rest
	// of the call read-only, even in a read-write session, so that what a
	// rollback cannot undo (setval, nextval) is refused rather than kept.
	// The rollback to the savepoint restores the setting.
	ReadOnlyCall() string

	// EndCall runs after every call and releases what a statement can hold
	// past its transaction (session advisory locks), so that it cannot
	// outlive the call.
	EndCall() string
}

// Reaper is an Engine whose server can go on running a statement after
// the session gave up on its connection (PostgreSQL: a statement that
// catches every cancel keeps its locks until its backend ends).
type Reaper interface {
	// Backend identifies the server side of the session's connection; it
	// runs once, after Setup.
	Backend(ctx context.Context, c *sql.Conn) (any, error)

	// Reap ends that server side from another connection of the pool,
	// when the session closes a connection it could not roll back.
	Reap(ctx context.Context, pool *sql.DB, backend any) error
}

// Execer is an Engine that runs a tool's ExecContext its own way.
// PostgreSQL does: the driver would send an argument-less statement over the
// simple protocol, which runs every command in the string, so one that
// Split cut wrongly would run commands the tools never checked (a COMMIT, a
// role change). Over the extended protocol the server refuses a string of
// several commands.
type Execer interface {
	Exec(ctx context.Context, c *sql.Conn, query string, args ...any) (sql.Result, error)
}

// execQuerier is the session's connection with ExecContext routed to an
// Execer.
type execQuerier struct {
	*sql.Conn
	ex Execer
}

func (q execQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.ex.Exec(ctx, q.Conn, query, args...)
}

// TimeoutGrace is an Engine whose server stops a statement at the statement
// timeout itself (PostgreSQL's statement_timeout): the session's own
// deadline comes that much later, so that the server's clean stop, which
// leaves the connection usable, comes first.
type TimeoutGrace interface {
	TimeoutGrace() time.Duration
}

// ServerRefusal is an Engine that can tell an error the database server
// itself sent (a refused login, say) from one that means no server
// answered; Ping counts the former as an answer.
type ServerRefusal interface {
	ServerRefused(err error) bool
}
