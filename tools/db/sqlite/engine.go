// Package sqlite is the SQLite engine of the built-in worker (tools/db): a
// pure-Go driver (modernc.org/sqlite, no cgo), one database file, WAL mode
// and a busy timeout. Every connection carries an authorizer (guard.go)
// that refuses ATTACH, DETACH and any transaction control but the
// session's own, and any write in a read. A read-only session also opens
// the file read-only (mode=ro) with PRAGMA query_only, and its authorizer
// refuses PRAGMA settings, so no statement can write through any path.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

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
	// Bounds a row while the driver reads it (db.MaxRowBytes): SQLite
	// holds every value of the current row, and the driver copies what
	// SQLite holds. A statement can lower the limit, never raise it.
	q.Add("_pragma", fmt.Sprintf("hard_heap_limit(%d)", db.MaxRowBytes))
	// Temporary tables, indexes and sorts (a DISTINCT or ORDER BY over
	// large values) stay in memory, counted against the heap limit above,
	// instead of spilling to temp files: SQLite has no limit of its own on
	// those, and a read-only query could fill the disk. A client's
	// statement cannot change it (guard.go).
	q.Add("_pragma", "temp_store(2)")
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
	if heapErr != nil {
		return nil, heapErr
	}
	mode := "rw"
	if readOnly {
		mode = "ro"
	}
	d, err := dsn(cfg.DSN, mode, cfg.LockTimeout.Milliseconds())
	if err != nil {
		return nil, err
	}
	base, err := sqlite.NewConnector(d)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.DSN, err)
	}
	return sql.OpenDB(connector{base: base, readOnly: readOnly}), nil
}

// MaxLength caps one string, blob or row (SQLITE_LIMIT_LENGTH): a
// statement that would make a larger one fails with "string or blob too
// big" instead of taking the worker's memory (zeroblob(1e9) is a short
// statement). SQLite's default is 1e9.
const MaxLength = 16 << 20

// Setup checks the connection and caps its values' length. Every
// connection already carries the authorizer (guard.go).
func (Engine) Setup(ctx context.Context, c *sql.Conn, cfg db.Config, user string, readOnly bool) error {
	if err := c.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", cfg.DSN, err)
	}
	if _, err := sqlite.Limit(c, sqlite3.SQLITE_LIMIT_LENGTH, MaxLength); err != nil {
		return fmt.Errorf("sqlite: cap the value length: %w", err)
	}
	return nil
}

// beginStatement starts the session's transaction.
const beginStatement = "BEGIN DEFERRED"

// Begin starts a deferred transaction; Mark's read then fixes its snapshot,
// so the session sees other sessions' commits only after a refresh.
func (Engine) Begin(bool) string { return beginStatement }

type mark struct{ changes, schema int64 }

// Mark reads the connection's change counter and the schema version; it is
// also the first read, which starts the transaction's snapshot.
func (Engine) Mark(ctx context.Context, q db.Querier) (any, error) {
	var m mark
	err := q.QueryRowContext(ctx, markQuery).Scan(&m.changes, &m.schema)
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
		// The guard (guard.go) explains its refusals itself; this is the
		// rest, a script's later statement compiled while rows are read.
		return &db.Error{Kind: db.KindRefused, Code: name, Err: err, Message: "sqlite: refused: ATTACH, DETACH and transaction control are never allowed, and query and a read-only session cannot write or change a setting: " + se.Error()}
	case sqlite3.SQLITE_NOMEM:
		return &db.Error{Kind: db.KindRefused, Code: name, Err: err,
			Message: fmt.Sprintf("sqlite: the statement needs more than the worker's %d MiB SQLite memory bound (a row or value too large, or a big sort in memory); select fewer or shorter values", db.MaxRowBytes>>20)}
	case sqlite3.SQLITE_INTERRUPT:
		return &db.Error{Kind: db.KindOther, Code: "cancelled", Err: err, Message: "sqlite: the statement was interrupted"}
	}
	return &db.Error{Kind: db.KindSQLError, Code: name, Err: err, Message: "sqlite: " + se.Error()}
}

// DatabaseName returns the main database file's name, without the
// directories: where the server keeps its files is not the client's
// business (the guard refuses PRAGMA database_list to everyone else).
func (Engine) DatabaseName(ctx context.Context, q db.Querier) (string, error) {
	ds, err := databases(ctx, q)
	if err != nil {
		return "", err
	}
	for _, d := range ds {
		if d.name == "main" {
			return filepath.Base(d.file), nil
		}
	}
	return "", errors.New("sqlite: the connection has no main database")
}

// Warm does, in a private in-memory database, the first-use work of the
// driver and of SQLite that every process pays once (the library's
// initialization, the parser, the schema code), so that a pre-started
// worker pays it before its session's identity rather than in the
// session's first db.Open. It touches no database file.
func Warm(ctx context.Context) error {
	base, err := sqlite.NewConnector(":memory:")
	if err != nil {
		return fmt.Errorf("sqlite: warm up: %w", err)
	}
	pool := sql.OpenDB(base) // no guard: the statements are ours
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)"); err != nil {
		return fmt.Errorf("sqlite: warm up: %w", err)
	}
	var n int
	if err := pool.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return fmt.Errorf("sqlite: warm up: %w", err)
	}
	return nil
}
