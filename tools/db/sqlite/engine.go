// Package sqlite is the SQLite engine of the built-in worker (tools/db): a
// pure-Go driver (modernc.org/sqlite, no cgo), one database file, WAL mode
// and a busy timeout. A read-only session opens the file read-only
// (mode=ro) with PRAGMA query_only and an authorizer that refuses ATTACH,
// so no statement can write through any path.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Engine is the SQLite db.Engine. Its zero value is ready to use.
type Engine struct{}

var _ db.Engine = Engine{}

// Name returns db.SQLite.
func (Engine) Name() string { return db.SQLite }

// dsn is the driver's connection string for path.
// mode is SQLite's open mode: ro, rw or rwc.
func dsn(path, mode string, busy int64) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite: database path %q: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy))
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("mode", mode)
	if mode == "ro" {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}
	return u.String(), nil
}

// Open opens the database file named by cfg.DSN, which must exist (Ensure
// creates it).
func (Engine) Open(cfg db.Config, readOnly bool) (*sql.DB, error) {
	mode := "rw"
	if readOnly {
		mode = "ro"
	}
	d, err := dsn(cfg.DSN, mode, cfg.LockTimeout.Milliseconds())
	if err != nil {
		return nil, err
	}
	pool, err := sql.Open("sqlite", d)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.DSN, err)
	}
	return pool, nil
}

// Setup installs, on a read-only session's connection, an authorizer that
// refuses ATTACH and DETACH: mode=ro binds only the main file, and an
// attached file would be opened read-write.
func (Engine) Setup(ctx context.Context, c *sql.Conn, cfg db.Config, user string, readOnly bool) error {
	if err := c.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", cfg.DSN, err)
	}
	if !readOnly {
		return nil
	}
	return c.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("sqlite: the driver cannot install an authorizer, so a read-only session cannot be made safe")
		}
		return r.RegisterAuthorizer(readOnlyAuthorizer)
	})
}

// readPragmas take an argument that names what to read, not a new value.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true, "quick_check": true,
}

// readOnlyAuthorizer denies what query_only does not cover: ATTACH (an
// attached file would open read-write), DETACH, and any PRAGMA given a value
// (query_only = 0 among them) except those whose argument names what to
// read. (SQLite authorizer: https://www.sqlite.org/c3ref/set_authorizer.html;
// for SQLITE_PRAGMA, arg1 is the pragma and arg2 its argument.)
func readOnlyAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthAttach, sqlite.AuthDetach:
		return sqlite.AuthorizerDeny
	case sqlite.AuthPragma:
		if arg2 != "" && !readPragmas[strings.ToLower(arg1)] {
			return sqlite.AuthorizerDeny
		}
	}
	return sqlite.AuthorizerOK
}

// Begin starts a deferred transaction; Mark's read then fixes its snapshot,
// so the session sees other sessions' commits only after a refresh.
func (Engine) Begin(bool) string { return "BEGIN DEFERRED" }

type mark struct{ changes, schema int64 }

// Mark reads the connection's change counter and the schema version; it is
// also the first read, which starts the transaction's snapshot.
func (Engine) Mark(ctx context.Context, q db.Querier) (any, error) {
	var m mark
	err := q.QueryRowContext(ctx, "SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version)").Scan(&m.changes, &m.schema)
	return m, err
}

// Dirty reports whether rows were changed or the schema altered since Mark.
func (e Engine) Dirty(ctx context.Context, q db.Querier, m any) (bool, error) {
	now, err := e.Mark(ctx, q)
	if err != nil {
		return false, err
	}
	return now != m, nil
}

// Check has nothing to check: SQLite has no roles.
func (Engine) Check(context.Context, db.Querier, any) error { return nil }

// Classify maps SQLite result codes to kinds.
func (Engine) Classify(err error) *db.Error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	code := se.Code()
	name := sqlite.ErrorCodeString[code]
	if code == sqlite3.SQLITE_BUSY_SNAPSHOT {
		return &db.Error{Kind: db.KindConflict, Code: name, Err: err,
			Message: "sqlite: another session committed since this transaction began, so it cannot write (SQLite allows writes only from the newest snapshot); abort, then retry"}
	}
	switch code & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return &db.Error{Kind: db.KindConflict, Code: name, Err: err,
			Message: "sqlite: another session holds the database's write lock (SQLite allows one writer at a time); abort, or wait for the other session to commit, and retry"}
	case sqlite3.SQLITE_READONLY:
		return &db.Error{Kind: db.KindReadOnly, Code: name, Err: err, Message: "sqlite: this session is read-only: " + se.Error()}
	case sqlite3.SQLITE_AUTH:
		return &db.Error{Kind: db.KindReadOnly, Code: name, Err: err, Message: "sqlite: not allowed in a read-only session (ATTACH, DETACH and PRAGMA settings are refused): " + se.Error()}
	case sqlite3.SQLITE_INTERRUPT:
		return &db.Error{Kind: db.KindOther, Code: "cancelled", Err: err, Message: "sqlite: the statement was interrupted"}
	}
	return &db.Error{Kind: db.KindSQLError, Code: name, Err: err, Message: "sqlite: " + se.Error()}
}

// DatabaseName returns the main database file's name, without the
// directories: where the server keeps its files is not the client's
// business.
func (Engine) DatabaseName(ctx context.Context, q db.Querier) (string, error) {
	var name string
	err := q.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&name)
	return filepath.Base(name), err
}
