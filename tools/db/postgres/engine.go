// Package postgres is the PostgreSQL engine of the built-in worker
// (tools/db), over pgx. A session's transactions are REPEATABLE READ, so it
// sees other sessions' commits only after a refresh; a read-only session's
// are READ ONLY in the server. With Config.ConnectAsUser the session logs in
// as the role named by its user, so grants and row-level security apply per
// user whatever SQL the user runs; Config.SetRole does SET ROLE to it from a
// shared login role instead, which a user who can run SQL can switch back
// out of.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mcpgate/mcpgate/tools/db"
)

// Engine is the PostgreSQL db.Engine. Its zero value is ready to use.
type Engine struct{}

var (
	_ db.Engine    = Engine{}
	_ db.Execer    = Engine{}
	_ db.CallGuard = Engine{}
	_ db.Reaper    = Engine{}
)

// Name returns db.Postgres.
func (Engine) Name() string { return db.Postgres }

// Open opens a pool for a session without a user; see OpenAs.
func (e Engine) Open(cfg db.Config, readOnly bool) (*sql.DB, error) {
	return e.OpenAs(cfg, "", readOnly)
}

// OpenAs parses the DSN and opens a pool; with cfg.ConnectAsUser it logs in
// as the role named user instead of the DSN's user (db.UserOpener). A
// cancelled statement is stopped with a cancel request to the server rather
// than by closing the connection, so that the session and its transaction
// survive it.
func (Engine) OpenAs(cfg db.Config, user string, readOnly bool) (*sql.DB, error) {
	dsn := cfg.DSN
	if cfg.ConnectAsUser {
		login, err := dsnUser(cfg.DSN)
		if err != nil {
			return nil, err
		}
		if err := checkUserName(cfg, user, login); err != nil {
			return nil, err
		}
		if dsn, err = asUser(dsn, user); err != nil {
			return nil, err
		}
	}
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: the connection string does not parse: %w", err)
	}
	// Ad hoc SQL, and tables that change shape under it: a cached prepared
	// statement would fail with "cached plan must not change result type"
	// after an ALTER, so every statement is described afresh. It also keeps
	// queries on the extended protocol (one command per statement); Exec
	// does the same for statements without arguments.
	pc.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	// A row is bounded before pgx reads it (a DataRow is one message),
	// where the value cap comes only after the driver's copy.
	pc.MaxProtocolMessageBodyLen = db.MaxRowBytes
	pc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: 5 * time.Second}
	}
	return sql.OpenDB(connector{stdlib.GetConnector(*pc), readOnly}), nil
}

// asUser returns dsn with the user replaced and no password, so that pgx
// makes every choice (the PGPASSFILE entry among them) for that user. In a
// URL the query parameters override the user info; in key=value form a
// later key overrides an earlier one.
func asUser(dsn, user string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("postgres: the connection string does not parse as a URL (its value is not shown)")
		}
		q := u.Query()
		q.Set("user", user)
		q.Set("password", "")
		u.User, u.RawQuery = nil, q.Encode()
		return u.String(), nil
	}
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return dsn + " user='" + quote.Replace(user) + "' password=''", nil
}

// checkRoleName refuses a user id that cannot name a role as written: the
// server cuts a longer name to 63 bytes (NAMEDATALEN - 1), which could name
// another user's role, and a control character has no place in one.
func checkRoleName(user string) error {
	switch {
	case user == "":
		return errors.New("postgres: the session has no user to run as")
	case len(user) > 63:
		return fmt.Errorf("postgres: user %q is longer than a PostgreSQL role name can be (63 bytes)", user)
	case !utf8.ValidString(user) || strings.ContainsFunc(user, unicode.IsControl):
		return fmt.Errorf("postgres: user %q has characters a role name cannot have", user)
	}
	return nil
}

// Setup sets the session's timeouts, its read-only characteristic and, with
// cfg.SetRole, its role.
func (Engine) Setup(ctx context.Context, c *sql.Conn, cfg db.Config, user string, readOnly bool) error {
	if err := c.PingContext(ctx); err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	stmts := []string{
		// The catalog's literals hold either way (Literal); this keeps a
		// user's plain '…' meaning what it says.
		"SET standard_conforming_strings = on",
		fmt.Sprintf("SET statement_timeout = %d", cfg.StatementTimeout.Milliseconds()),
		fmt.Sprintf("SET lock_timeout = %d", cfg.LockTimeout.Milliseconds()),
	}
	if readOnly {
		stmts = append(stmts, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
	}
	switch {
	case cfg.ConnectAsUser:
		login, err := dsnUser(cfg.DSN)
		if err != nil {
			return err
		}
		if err := checkUserRole(ctx, c, cfg, user, login); err != nil {
			return err
		}
	case cfg.SetRole:
		var login string
		if err := c.QueryRowContext(ctx, "SELECT session_user").Scan(&login); err != nil {
			return fmt.Errorf("postgres: set up the session: %w", err)
		}
		if err := checkUserRole(ctx, c, cfg, user, login); err != nil {
			return err
		}
		stmts = append(stmts, "SET ROLE "+pgx.Identifier{user}.Sanitize())
	}
	// A backend whose client is gone ends at the next check instead of
	// running on (and holding its locks) until its statement ends. Since
	// PostgreSQL 14; an older server does not know the setting.
	if _, err := c.ExecContext(ctx, fmt.Sprintf("SET client_connection_check_interval = %d", ClientCheckInterval.Milliseconds())); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42704" {
			return fmt.Errorf("postgres: set up the session: %w", err)
		}
	}
	if err := limitTempFiles(ctx, c); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx, s); err != nil {
			var pe *pgconn.PgError
			if cfg.SetRole && errors.As(err, &pe) && (pe.Code == "22023" || pe.Code == "42704" || pe.Code == "42501") {
				return fmt.Errorf("postgres: user %q cannot run as a database role of that name (%s); ask the operator to create the role and grant it to the gateway's login role", user, pe.Message)
			}
			return fmt.Errorf("postgres: set up the session: %w", err)
		}
	}
	return nil
}

// DefaultTempFileLimit is the temp_file_limit a session sets for itself
// when the server sets none and the login may set it: a statement's sorts
// and hashes beyond work_mem spill to the server's disk, and only this
// bounds them.
const DefaultTempFileLimit = "1GB"

// warnTempFiles warns once per worker that temp files are unbounded.
var warnTempFiles sync.Once

// limitTempFiles makes sure the session's temp files are bounded. The
// operator's temp_file_limit (ALTER DATABASE or ALTER ROLE … SET, which
// only a superuser can do and no user role can undo) is kept; where there
// is none (-1) the session sets DefaultTempFileLimit, which needs a
// superuser login or, on PostgreSQL 15, SET granted on the parameter; else
// the worker warns on its stderr, which the gateway logs.
func limitTempFiles(ctx context.Context, c *sql.Conn) error {
	var limit string
	if err := c.QueryRowContext(ctx, "SELECT pg_catalog.current_setting('temp_file_limit')").Scan(&limit); err != nil {
		return fmt.Errorf("postgres: set up the session: %w", err)
	}
	if limit != "-1" {
		return nil
	}
	_, err := c.ExecContext(ctx, "SET temp_file_limit = '"+DefaultTempFileLimit+"'")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		warnTempFiles.Do(func() {
			slog.Warn("postgres: temp_file_limit is unlimited, so one user's statement can fill the database server's disk with temp files; as a superuser run ALTER DATABASE <db> SET temp_file_limit = '1GB' (docs/tools.md)")
		})
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: set up the session: %w", err)
	}
	return nil
}

// Exec runs a statement over the extended protocol (db.Execer), where the
// server refuses a string that holds several commands. pgx would use the
// simple protocol for a statement without arguments, whatever the query
// exec mode says, so that case goes to the connection itself; the rows of a
// statement that returns some are read and dropped.
func (Engine) Exec(ctx context.Context, c *sql.Conn, query string, args ...any) (sql.Result, error) {
	if len(args) > 0 {
		return c.ExecContext(ctx, query, args...)
	}
	var tag pgconn.CommandTag
	var err error
	if rerr := c.Raw(func(dc any) error {
		pc, gerr := rawConn(ctx, dc, query)
		if gerr != nil {
			return gerr
		}
		rr := pc.ExecParams(ctx, query, nil, nil, nil, nil)
		for rr.NextRow() {
		}
		tag, err = rr.Close()
		return nil
	}); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// TimeoutGrace is how long after the server's statement_timeout the
// session stops waiting and cancels the statement itself (db.TimeoutGrace).
func (Engine) TimeoutGrace() time.Duration { return time.Second }

// ClientCheckInterval is the session's client_connection_check_interval.
const ClientCheckInterval = 2 * time.Second

// Backend is the session's backend process id (db.Reaper).
func (Engine) Backend(ctx context.Context, c *sql.Conn) (any, error) {
	var pid int32
	err := c.QueryRowContext(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid)
	return pid, err
}

// Reap terminates the session's backend from a fresh connection of the
// same login (db.Reaper), waiting up to 5 s for it to end: a role may end
// its own backends, unless EXECUTE on pg_terminate_backend was revoked
// from it (docs/tools.md says what to grant then).
func (Engine) Reap(ctx context.Context, pool *sql.DB, backend any) error {
	ctx = context.WithValue(ctx, ownKey{}, true) // past the side-effect guard, which refuses the name
	_, err := pool.ExecContext(ctx, "SELECT pg_catalog.pg_terminate_backend($1, 5000)", backend)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42883" { // before PostgreSQL 14: no wait
		_, err = pool.ExecContext(ctx, "SELECT pg_catalog.pg_terminate_backend($1)", backend)
	}
	return err
}

// ReadOnlyCall makes the rest of a read-write session's query call
// read-only (db.CallGuard); SET LOCAL ends with the savepoint's rollback.
func (Engine) ReadOnlyCall() string { return "SET LOCAL transaction_read_only = on" }

// EndCall releases the session advisory locks a call's statement took
// (db.CallGuard): no rollback releases them, and a read-only session could
// otherwise hold them for as long as it lives.
func (Engine) EndCall() string { return "SELECT pg_catalog.pg_advisory_unlock_all()" }

// Begin starts a REPEATABLE READ transaction, READ ONLY in a read-only
// session whatever its settings say.
func (Engine) Begin(readOnly bool) string {
	if readOnly {
		return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	}
	return "BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE"
}

// Mark takes the transaction's snapshot (its first statement) and records
// the role the session runs as.
func (Engine) Mark(ctx context.Context, q db.Querier) (any, error) {
	var role string
	err := q.QueryRowContext(ctx, "SELECT current_user").Scan(&role)
	return role, err
}

// Dirty reports whether the transaction has written: it has a transaction
// id only once it has.
func (Engine) Dirty(ctx context.Context, q db.Querier, _ any) (bool, error) {
	var dirty bool
	err := q.QueryRowContext(ctx, "SELECT pg_catalog.pg_current_xact_id_if_assigned() IS NOT NULL").Scan(&dirty)
	return dirty, err
}

// Check makes sure the session still runs as the role it began with. The
// gateway's login role is a member of every user's role (it must be, to SET
// ROLE), so a statement that changes the role (SET ROLE, RESET ROLE,
// set_config('role', …), SET SESSION AUTHORIZATION) could act as another
// user: the session then rolls back everything and closes, before any
// result of that statement is returned.
func (Engine) Check(ctx context.Context, q db.Querier, mark any) error {
	var role string
	if err := q.QueryRowContext(ctx, "SELECT current_user").Scan(&role); err != nil {
		return err
	}
	if role != mark.(string) {
		return db.Errorf(db.KindRefused, "postgres: a statement changed the session's role from %q to %q; the transaction was rolled back and the session closed: start a new session, and do not change roles", mark, role)
	}
	return nil
}

// Classify maps SQLSTATEs to kinds.
func (Engine) Classify(err error) *db.Error {
	var big *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &big) {
		return &db.Error{Kind: db.KindOther, Code: "rowTooLarge", Err: err,
			Message: fmt.Sprintf("postgres: the server sent a row of %d bytes, over the worker's %d MiB row bound, so the worker stopped reading it (select fewer or shorter columns)", big.ActualBodyLen, db.MaxRowBytes>>20)}
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	msg := "postgres: " + pe.Message
	if pe.Detail != "" {
		msg += " (" + pe.Detail + ")"
	}
	switch {
	case pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "55P03":
		return &db.Error{Kind: db.KindConflict, Code: pe.Code, Err: err, Message: msg + "; another session changed or locked the same rows: abort and retry"}
	case pe.Code == "25006":
		return &db.Error{Kind: db.KindReadOnly, Code: pe.Code, Err: err, Message: msg + "; read-only here: the session is read-only, or this is query, which never writes (execute_sql does, in a read-write session)"}
	case pe.Code == "57014":
		return &db.Error{Kind: db.KindOther, Code: pe.Code, Err: err, Message: msg + "; the statement was stopped (statement timeout or cancel)"}
	case pe.Code == "42P01" || pe.Code == "3F000" || pe.Code == "42883":
		return &db.Error{Kind: db.KindNotFound, Code: pe.Code, Err: err, Message: msg}
	case pe.Code == "42501":
		return &db.Error{Kind: db.KindRefused, Code: pe.Code, Err: err, Message: msg + "; the session's role lacks the privilege"}
	}
	return &db.Error{Kind: db.KindSQLError, Code: pe.Code, Err: err, Message: msg}
}

// DatabaseName returns the current database's name.
func (Engine) DatabaseName(ctx context.Context, q db.Querier) (string, error) {
	var name string
	err := q.QueryRowContext(ctx, "SELECT pg_catalog.current_database()").Scan(&name)
	return name, err
}

// ServerRefused reports an error the server sent (db.ServerRefusal): the
// server is up, whatever it thought of the login.
func (Engine) ServerRefused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}
