package sqlite

import (
	"context"
	"database/sql/driver"
)

// Work saved per call: the session runs the same few statements of its own
// around every call (SAVEPOINT, RELEASE, Mark's read for status), and a
// client sends the same text again and again. Compiling is most of what
// such a statement costs SQLite, and a client text was compiled twice:
// once to see that it is one statement (check), once to run.

// markQuery is Mark's read.
const markQuery = "SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version)"

// ownTexts are the statements compiled once per connection and mode and run
// again without compiling: the session's transaction control and Mark's
// read, fixed texts that are each one statement and are not PRAGMA
// settings. The authorizer judges a statement when it is compiled, from
// its text, the mode and the connection's read-only flag; a cached
// statement is run only in the mode it was compiled in, so it is judged as
// it would be if compiled again. SQLite compiles a prepared statement again
// after a schema change, under the mode set for the run.
var ownTexts = func() map[string]bool {
	t := map[string]bool{markQuery: true}
	for q := range control {
		t[q] = true
	}
	return t
}()

// maxSingle bounds the cache of client texts known to be one statement;
// it is emptied when full. maxSingleLen is the longest text it keeps.
// maxReads bounds the client reads kept compiled.
const (
	maxSingle    = 64
	maxSingleLen = 4 << 10
	maxReads     = 16
)

type ownKey struct {
	m mode
	q string
}

// ownStmt is a cached statement: one of ownTexts, or a client's read.
type ownStmt struct {
	g      *guard
	m      mode
	pv     bool // pragmaValue of its text
	client bool
	s      driver.Stmt
	busy   bool // its rows are open
}

// ownStmt returns the cached statement for query run in mode m, preparing
// it the first time; nil when query has arguments, is in use, does not
// prepare (the caller then runs it as any other text, which reports the
// error), or is neither one of ownTexts nor a client's read (modeRead: the
// query tool and the checks) already seen to be one statement (single).
// A client's read is kept compiled as the engine's own statements are:
// run only in the mode it was compiled in, its pragmaValue set for a
// recompile; a PRAGMA setting and an authorizer change expire it in SQLite.
func (g *guard) ownStmt(ctx context.Context, m mode, query string, args []driver.NamedValue) *ownStmt {
	if len(args) != 0 {
		return nil
	}
	client, pv := !ownTexts[query], false
	if client {
		var ok bool
		if pv, ok = g.single[query]; !ok || m != modeRead {
			return nil
		}
	}
	k := ownKey{m, query}
	if os := g.own[k]; os != nil {
		if os.busy {
			return nil
		}
		return os
	}
	if client && !g.roomForRead() {
		return nil
	}
	g.set(m, pv)
	if !client {
		if _, err := g.check(m, query); err != nil {
			return nil
		}
	}
	s, err := g.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	os := &ownStmt{g: g, m: m, pv: pv, client: client, s: s}
	g.own[k] = os
	return os
}

// roomForRead makes room for one more client read, closing those not in
// use when maxReads are kept.
func (g *guard) roomForRead() bool {
	n := 0
	for _, os := range g.own {
		if os.client {
			n++
		}
	}
	if n < maxReads {
		return true
	}
	for k, os := range g.own {
		if os.client && !os.busy {
			os.s.Close() //nolint:errcheck // finalizing a statement that is not running
			delete(g.own, k)
			n--
		}
	}
	return n < maxReads
}

func (os *ownStmt) exec(ctx context.Context) (driver.Result, error) {
	os.g.set(os.m, os.pv)
	r, err := os.s.(driver.StmtExecContext).ExecContext(ctx, nil)
	return r, os.g.explain(err)
}

func (os *ownStmt) query(ctx context.Context) (driver.Rows, error) {
	os.g.set(os.m, os.pv)
	r, err := os.s.(driver.StmtQueryContext).QueryContext(ctx, nil)
	if err != nil {
		return bound(r, os.g.explain(err))
	}
	os.busy = true
	return bound(ownRows{r, os}, nil)
}

// ownRows frees its statement for the next run when closed.
type ownRows struct {
	driver.Rows
	os *ownStmt
}

func (r ownRows) Close() error {
	r.os.busy = false
	return r.Rows.Close()
}

// prepareCheck sets the mode for query and refuses a text SQLite reads as
// several statements (check). A text found to be one statement is
// remembered, with its pragmaValue: where the first statement ends is a
// matter of the text alone, once it compiles. A text whose first statement
// did not compile is not remembered (it may compile later, and its tail
// then counts).
func (g *guard) prepareCheck(m mode, query string) error {
	if m != modeControl {
		if pv, ok := g.single[query]; ok {
			g.set(m, pv)
			return nil
		}
	}
	pv := pragmaValue(query)
	g.set(m, pv)
	compiled, err := g.check(m, query)
	if err != nil {
		return err
	}
	if compiled && len(query) <= maxSingleLen {
		if len(g.single) >= maxSingle {
			clear(g.single)
		}
		g.single[query] = pv
	}
	return nil
}
