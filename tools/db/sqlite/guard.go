package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/tools/db"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The statement splitter (db.Split) and the tools' keyword checks are a
// convenience, not a boundary: modernc runs every statement of a string it
// is given, so a text the splitter misreads could hide a COMMIT, an ATTACH
// or a DELETE. The boundary is SQLite's own authorizer, which sees every
// action of every statement as SQLite compiles it
// (https://www.sqlite.org/c3ref/set_authorizer.html). Every connection the
// engine opens carries one, and the connection wrapper below tells it what
// kind of statement is being compiled:
//
//   - the session's own transaction control (the exact statements of
//     db.Session and Engine.Begin, outside a read): BEGIN, COMMIT, ROLLBACK
//     and the savepoints may run;
//   - a read (db.ReadContext: query and the checks): only reading is
//     allowed, even in a read-write session;
//   - anything else: what the session allows, but never transaction
//     control, ATTACH or DETACH (the latter also stops VACUUM INTO, which
//     attaches its target).

// mode is what the statement being compiled may do.
type mode int32

const (
	modeClient  mode = iota // a client's statement in the session's transaction
	modeControl             // the session's own transaction control
	modeRead                // a read: nothing may be written
)

// control holds the texts of the session's own transaction statements
// (tools/db/session.go, and Begin below). A client's text can match one
// only by being exactly that statement, which the tools refuse by keyword
// before it reaches the engine, and never inside a read.
var control = map[string]bool{
	beginStatement:                       true,
	"COMMIT":                             true,
	"ROLLBACK":                           true,
	"SAVEPOINT mcpgate_call":             true,
	"RELEASE SAVEPOINT mcpgate_call":     true,
	"ROLLBACK TO SAVEPOINT mcpgate_call": true,
}

// modeOf is the mode of query, run with ctx and args.
func modeOf(ctx context.Context, query string, args int) mode {
	switch {
	case db.Reading(ctx):
		return modeRead
	case args == 0 && control[query]:
		return modeControl
	}
	return modeClient
}

// connector opens the driver's connections and wraps each in a guard.
type connector struct {
	base     driver.Connector
	readOnly bool
}

// Connect opens a connection and installs its authorizer.
func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reg, ok := dc.(sqlite.AuthorizerRegisterer)
	if !ok {
		dc.Close()
		return nil, errors.New("sqlite: the driver cannot install an authorizer, so a session cannot be made safe")
	}
	g := &guard{Conn: dc, readOnly: c.readOnly}
	if err := reg.RegisterAuthorizer(g.authorize); err != nil {
		dc.Close()
		return nil, err
	}
	return g, nil
}

// Driver returns the wrapped driver.
func (c connector) Driver() driver.Driver { return c.base.Driver() }

// guard is a connection whose statements its authorizer judges by mode.
// It forwards the optional interfaces modernc's connection implements (see
// sqlite.NewConnector) and unwraps for sqlite.Limit.
type guard struct {
	driver.Conn
	readOnly bool
	mode     atomic.Int32
	denied   atomic.Pointer[db.Error] // why the authorizer last said no
}

// set records the mode of the statement about to be compiled. It stays set
// until the next statement: modernc compiles a script's later statements
// while its rows are read.
func (g *guard) set(m mode) {
	g.mode.Store(int32(m))
	g.denied.Store(nil)
}

// Why the authorizer refuses, as the client is told.
var (
	deniedAttach   = &db.Error{Kind: db.KindRefused, Message: "sqlite: ATTACH, DETACH and VACUUM INTO are refused: a session works on its one database file"}
	deniedAttachRO = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: this session is read-only: ATTACH, DETACH and VACUUM INTO are refused"}
	deniedControl  = &db.Error{Kind: db.KindRefused, Message: "sqlite: transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is the session's own: use the commit and abort tools"}
	deniedSetting  = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: a read-only session, and query in any session, cannot change a PRAGMA setting"}
	deniedWrite    = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: query only reads, and this statement would change something; use execute_sql to change data"}
)

// deny records why and refuses.
func (g *guard) deny(why *db.Error) sqlite.AuthorizerReturnCode {
	g.denied.CompareAndSwap(nil, why)
	return sqlite.AuthorizerDeny
}

// explain turns a refusal by the authorizer into an *db.Error that says
// why; other errors pass unchanged.
func (g *guard) explain(err error) error {
	var se *sqlite.Error
	why := g.denied.Load()
	if err == nil || why == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_AUTH {
		return err
	}
	return &db.Error{Kind: why.Kind, Code: sqlite.ErrorCodeString[se.Code()], Message: why.Message, Err: err}
}

// readPragmas take an argument that names what to read, not a new value.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true, "quick_check": true,
}

// authorize is the connection's authorizer. For SQLITE_PRAGMA, arg1 is the
// pragma and arg2 its argument; a PRAGMA given a value (query_only = 0 among
// them) is refused in a read-only session and in a read, since a setting
// outlives the savepoint that undoes a read.
func (g *guard) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	m := mode(g.mode.Load())
	switch action {
	case sqlite.AuthAttach, sqlite.AuthDetach:
		if g.readOnly {
			return g.deny(deniedAttachRO)
		}
		return g.deny(deniedAttach)
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		if m == modeControl {
			return sqlite.AuthorizerOK
		}
		return g.deny(deniedControl)
	case sqlite.AuthPragma:
		if (g.readOnly || m == modeRead) && arg2 != "" && !readPragmas[strings.ToLower(arg1)] {
			return g.deny(deniedSetting)
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	}
	if m == modeRead {
		return g.deny(deniedWrite)
	}
	return sqlite.AuthorizerOK
}

// Unwrap returns the driver's connection (sqlite.Limit looks for it).
func (g *guard) Unwrap() driver.Conn { return g.Conn }

// ExecContext runs query under its mode.
func (g *guard) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	g.set(modeOf(ctx, query, len(args)))
	r, err := g.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, g.explain(err)
}

// QueryContext runs query under its mode.
func (g *guard) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	g.set(modeOf(ctx, query, len(args)))
	r, err := g.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return bound(r, g.explain(err))
}

// PrepareContext prepares query under its mode, which the statement keeps:
// it is compiled again when run (a script, or after a schema change).
func (g *guard) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	m := modeOf(ctx, query, 0)
	if m == modeControl {
		m = modeClient // a prepared statement has arguments to come; control never does
	}
	g.set(m)
	s, err := g.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, g.explain(err)
	}
	return &stmt{Stmt: s, g: g, mode: m}, nil
}

// Prepare is PrepareContext without a context.
func (g *guard) Prepare(query string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), query)
}

// BeginTx starts a driver transaction as the session's own control. The
// session does not use it (it runs its own BEGIN), but the pool may.
func (g *guard) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	g.set(modeControl)
	t, err := g.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tx{Tx: t, g: g}, nil
}

// Begin is BeginTx with default options.
func (g *guard) Begin() (driver.Tx, error) {
	return g.BeginTx(context.Background(), driver.TxOptions{})
}

// Ping checks the connection.
func (g *guard) Ping(ctx context.Context) error { return g.Conn.(driver.Pinger).Ping(ctx) }

// ResetSession is called before the pool reuses the connection.
func (g *guard) ResetSession(ctx context.Context) error {
	return g.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid reports whether the pool may keep the connection.
func (g *guard) IsValid() bool { return g.Conn.(driver.Validator).IsValid() }

// tx ends a driver transaction as control.
type tx struct {
	driver.Tx
	g *guard
}

func (t tx) Commit() error   { t.g.set(modeControl); return t.Tx.Commit() }
func (t tx) Rollback() error { t.g.set(modeControl); return t.Tx.Rollback() }

// stmt runs a prepared statement under the mode it was prepared with.
type stmt struct {
	driver.Stmt
	g    *guard
	mode mode
}

// ExecContext runs the statement.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.g.set(s.mode)
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return r, s.g.explain(err)
}

// QueryContext runs the statement.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.g.set(s.mode)
	r, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return bound(r, s.g.explain(err))
}

var (
	_ driver.ExecerContext      = (*guard)(nil)
	_ driver.QueryerContext     = (*guard)(nil)
	_ driver.ConnPrepareContext = (*guard)(nil)
	_ driver.ConnBeginTx        = (*guard)(nil)
	_ driver.Pinger             = (*guard)(nil)
	_ driver.SessionResetter    = (*guard)(nil)
	_ driver.Validator          = (*guard)(nil)
	_ driver.StmtExecContext    = (*stmt)(nil)
	_ driver.StmtQueryContext   = (*stmt)(nil)
)
