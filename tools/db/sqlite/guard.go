package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/tools/db"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The statement splitter (db.SQLiteLexer) and the tools' keyword checks are
// a convenience, not a boundary. modernc runs every statement of a string
// it is given, so a text the splitter misread could hide a COMMIT, an ATTACH
// or a DELETE: every client text is first prepared here statement by
// statement without running (prepare.go; a text seen to be one statement
// is remembered, cached.go), and one that SQLite reads as several is
// refused before any of it runs. The boundary for what a
// statement may do is SQLite's own authorizer, which sees every
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
	modeCatalog             // the engine's own catalog read (catalogRead): a read that may list the files
)

// catalogKey marks a context whose statements are the engine's own catalog
// reads; only this package sets it.
type catalogKey struct{}

// catalogRead returns ctx marked for the engine's own catalog reads.
func catalogRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, catalogKey{}, true)
}

// control holds the texts of the session's own transaction statements
// (tools/db/transaction.go and session.go, and Begin below). A client's text can match one
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
	case ctx.Value(catalogKey{}) != nil:
		return modeCatalog
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
	h, err := handleOf(dc)
	if err != nil {
		dc.Close()
		return nil, err
	}
	g := &guard{Conn: dc, h: h, readOnly: c.readOnly, own: map[ownKey]*ownStmt{}, single: map[string]bool{}}
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
	h           handle
	readOnly    bool
	mode        atomic.Int32
	pragmaValue atomic.Bool              // the statement is a PRAGMA given a value
	denied      atomic.Pointer[db.Error] // why the authorizer last said no

	// Caches, used under database/sql's hold of the connection (one
	// statement at a time). own holds the engine's own statements (the
	// session's transaction control and Mark's read) compiled once per
	// mode and run again without compiling (cached.go); single holds
	// client texts SQLite read as one statement, with their pragmaValue.
	own    map[ownKey]*ownStmt
	single map[string]bool
}

// set records the mode of the statement about to be compiled, and whether
// it is a PRAGMA given a value. It stays set until the next statement, for
// a prepared statement compiled again when run.
func (g *guard) set(m mode, pragmaValue bool) {
	g.mode.Store(int32(m))
	g.pragmaValue.Store(pragmaValue)
	g.denied.Store(nil)
}

// check refuses a client's text that SQLite reads as more than one
// statement, before any of it runs: the tools split a script and run its
// statements one by one, so a text that still holds several is one the
// tools read differently from SQLite, and what they checked is not what
// would run. compiled reports whether its first statement compiled.
func (g *guard) check(m mode, query string) (compiled bool, err error) {
	if m == modeControl {
		return false, nil
	}
	compiled, several, err := g.h.several(query)
	switch {
	case err != nil:
		return false, err
	case several:
		return false, deniedScript
	}
	return compiled, nil
}

// pragmaValue reports whether query is a PRAGMA statement given a value
// ("PRAGMA x = v", "PRAGMA x(v)"), even an empty string: the authorizer is
// given "" both for no value and for an empty string (modernc passes NULL
// as ""), and setting query_only to an empty string turns it off. Any
// PRAGMA keyword counts (EXPLAIN PRAGMA too: a flag pragma is set while it
// compiles).
func pragmaValue(query string) bool {
	t := db.SQLiteLexer.Tokens(query)
	for i := range t {
		if !strings.EqualFold(t[i], "PRAGMA") {
			continue
		}
		rest := t[i+1:]
		if len(rest) >= 2 && rest[1] == "." { // schema.name
			rest = rest[2:]
		}
		if len(rest) > 1 && rest[1] != ";" {
			return true
		}
	}
	return false
}

// Why the authorizer refuses, as the client is told.
var (
	deniedAttach   = &db.Error{Kind: db.KindRefused, Message: "sqlite: ATTACH, DETACH and VACUUM INTO are refused: a session works on its one database file"}
	deniedAttachRO = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: this session is read-only: ATTACH, DETACH and VACUUM INTO are refused"}
	deniedControl  = &db.Error{Kind: db.KindRefused, Message: "sqlite: transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is the session's own: use the commit and abort tools"}
	deniedSetting  = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: a read-only session, and query in any session, cannot change a PRAGMA setting"}
	deniedWrite    = &db.Error{Kind: db.KindReadOnly, Message: "sqlite: query only reads, and this statement would change something; use execute_sql to change data"}
	deniedFiles    = &db.Error{Kind: db.KindRefused, Message: "sqlite: PRAGMA database_list is refused: where the server keeps its files is not shown; status names the database"}
	deniedScript   = &db.Error{Kind: db.KindRefused, Message: "sqlite: SQLite reads this text as more than one statement, and a call runs one; nothing was run. Send the statements one at a time (execute_sql takes a script and runs its statements one by one)"}
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

// The PRAGMAs a client's statement may use. Everything else is refused
// (kind refused), since many change the shared file or every other
// connection's access to it for good: writable_schema (a corrupt schema
// that stops every new worker at open), schema_version, locking_mode
// (EXCLUSIVE locks every other session out), journal_mode, synchronous,
// cell_size_check, trusted_schema, temp_store (temp files on the disk),
// the heap limits, cache_size, mmap_size, busy_timeout, and the pragmas
// that act when read (wal_checkpoint, optimize, incremental_vacuum,
// shrink_memory).
var (
	// argPragmas take an argument that names what to read, not a new
	// value; they may be read in any session.
	argPragmas = map[string]bool{
		"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
		"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true, "quick_check": true,
	}
	// setPragmas may be given a value by a read-write session's own
	// statements (execute_sql, never query): each acts only on this
	// connection's own statements, or (user_version) is a header field
	// the transaction writes and a rollback undoes. foreign_keys is a
	// no-op inside a transaction, where every statement runs.
	setPragmas = map[string]bool{
		"defer_foreign_keys": true, "foreign_keys": true, "user_version": true,
		"case_sensitive_like": true, "reverse_unordered_selects": true, "recursive_triggers": true,
	}
	// readPragmas may be read (without a value) in any session: their
	// reading has no effect.
	readPragmas = map[string]bool{
		"application_id": true, "auto_vacuum": true, "automatic_index": true, "busy_timeout": true, "cache_size": true,
		"cache_spill": true, "cell_size_check": true, "collation_list": true, "compile_options": true, "data_version": true,
		"encoding": true, "freelist_count": true, "function_list": true, "hard_heap_limit": true, "journal_mode": true,
		"journal_size_limit": true, "legacy_alter_table": true, "locking_mode": true, "max_page_count": true, "mmap_size": true,
		"module_list": true, "page_count": true, "page_size": true, "pragma_list": true, "query_only": true,
		"schema_version": true, "secure_delete": true, "soft_heap_limit": true, "synchronous": true, "temp_store": true,
		"threads": true, "trusted_schema": true, "wal_autocheckpoint": true, "writable_schema": true,
		"ignore_check_constraints": true, "analysis_limit": true,
	}
)

// pragmaAllowed reports whether a client may use PRAGMA name at all.
func pragmaAllowed(name string) bool {
	return argPragmas[name] || setPragmas[name] || readPragmas[name]
}

// deniedPragma explains a refused PRAGMA.
func deniedPragma(name string) *db.Error {
	return &db.Error{Kind: db.KindRefused, Message: fmt.Sprintf("sqlite: PRAGMA %s is refused here: a session may read the catalog pragmas (table_info, index_list, foreign_key_list, …) and most settings, and set only %s in execute_sql; a setting that changes the shared database file or other sessions' access to it is never allowed", clipName(name), strings.Join(slices.Sorted(maps.Keys(setPragmas)), ", "))}
}

// clipName bounds a name echoed in an error.
func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// authorize is the connection's authorizer. For SQLITE_PRAGMA, arg1 is the
// pragma and arg2 its argument. A client's statement may use only the
// pragmas above (pragmaAllowed), a pragma function in a SELECT
// (pragma_table_info(…)) too, since SQLite asks about it the same way. A
// PRAGMA given a value (query_only = 0 among them, and query_only set to
// an empty string, which the authorizer sees as no value, so the
// statement's text decides: pragmaValue) is refused in a read-only session
// and in a read, since a setting outlives the savepoint that undoes a
// read; elsewhere only setPragmas take one.
// PRAGMA database_list (and pragma_database_list) would show the file's path
// and is refused but to the engine's own catalog reads (catalogRead).
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
		name := strings.ToLower(arg1)
		valued := (arg2 != "" || g.pragmaValue.Load()) && !argPragmas[name]
		switch {
		case name == "database_list" && m != modeCatalog:
			return g.deny(deniedFiles)
		case m == modeCatalog:
			if valued {
				return g.deny(deniedSetting)
			}
		case !pragmaAllowed(name):
			return g.deny(deniedPragma(name))
		case valued && (g.readOnly || m == modeRead):
			return g.deny(deniedSetting)
		case valued && !setPragmas[name]:
			return g.deny(deniedPragma(name))
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	}
	if m == modeRead || m == modeCatalog {
		return g.deny(deniedWrite)
	}
	return sqlite.AuthorizerOK
}

// Unwrap returns the driver's connection (sqlite.Limit looks for it).
func (g *guard) Unwrap() driver.Conn { return g.Conn }

// ExecContext runs query under its mode.
func (g *guard) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	m := modeOf(ctx, query, len(args))
	if os := g.ownStmt(ctx, m, query, args); os != nil {
		return os.exec(ctx)
	}
	if err := g.prepareCheck(m, query); err != nil {
		return nil, err
	}
	r, err := g.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, g.explain(err)
}

// QueryContext runs query under its mode.
func (g *guard) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	m := modeOf(ctx, query, len(args))
	if os := g.ownStmt(ctx, m, query, args); os != nil {
		return os.query(ctx)
	}
	if err := g.prepareCheck(m, query); err != nil {
		return nil, err
	}
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
	pv := pragmaValue(query)
	g.set(m, pv)
	if _, err := g.check(m, query); err != nil {
		return nil, err
	}
	s, err := g.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, g.explain(err)
	}
	return &stmt{Stmt: s, g: g, mode: m, pragmaValue: pv}, nil
}

// Prepare is PrepareContext without a context.
func (g *guard) Prepare(query string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), query)
}

// BeginTx starts a driver transaction as the session's own control. The
// session does not use it (it runs its own BEGIN), but the pool may.
func (g *guard) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	g.set(modeControl, false)
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

// Close closes the cached statements, then the connection.
func (g *guard) Close() error {
	for k, os := range g.own {
		os.s.Close() //nolint:errcheck // the connection's close finalizes what is left
		delete(g.own, k)
	}
	return g.Conn.Close()
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

func (t tx) Commit() error   { t.g.set(modeControl, false); return t.Tx.Commit() }
func (t tx) Rollback() error { t.g.set(modeControl, false); return t.Tx.Rollback() }

// stmt runs a prepared statement under the mode it was prepared with.
type stmt struct {
	driver.Stmt
	g           *guard
	mode        mode
	pragmaValue bool
}

// ExecContext runs the statement.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.g.set(s.mode, s.pragmaValue)
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return r, s.g.explain(err)
}

// QueryContext runs the statement.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.g.set(s.mode, s.pragmaValue)
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
