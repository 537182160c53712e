package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// executionToolset runs SQL: query (one read-only statement, safe) and
// execute_sql (anything, in the session's transaction, gated).
func executionToolset() *Toolset {
	return &Toolset{
		Name:        "execution",
		Description: "Run SQL in the session's transaction.",
		Tools: dbTools([]Tool{
			{
				Name: "query",
				Description: "Run one read-only statement (SELECT, WITH, VALUES, TABLE, EXPLAIN, SHOW, or a PRAGMA that reads) and return its rows as a text table and as structuredContent rows, capped with the true total. " +
					"Whatever the statement does is undone afterwards, so query never changes anything; use execute_sql to change data.",
				Params:   []Param{{Name: "sql", Type: String, Required: true, Description: "One SQL statement."}, limitParam},
				Safe:     true,
				ReadOnly: true,
				Handler:  query,
			},
			{
				Name: "execute_sql",
				Description: "Run one or more SQL statements in the session's transaction (changes stay uncommitted and invisible to other sessions until commit). " +
					"Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) and role changes are refused: use the commit and abort tools. If the last statement returns rows, they are shown.",
				Params:      []Param{{Name: "sql", Type: String, Required: true, Description: "SQL statements separated by semicolons."}},
				Destructive: true,
				Handler:     executeSQL,
			},
		}),
	}
}

// readKeywords may start a statement that query runs.
var readKeywords = []string{"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW", "PRAGMA"}

func query(ctx context.Context, env *Env, a Args) (*Result, error) {
	lx := db.LexerFor(env.DB.Engine())
	stmts := lx.Split(a.String("sql"))
	switch {
	case len(stmts) == 0:
		return nil, Errorf(KindInvalidParams, "argument \"sql\" holds no statement")
	case len(stmts) > 1:
		return nil, Errorf(KindInvalidParams, "query runs one statement, and \"sql\" holds %d; run them one at a time (or use execute_sql to change data)", len(stmts))
	}
	stmt := stmts[0]
	kw := lx.Keywords(stmt, 1)
	if len(kw) == 0 || !slices.Contains(readKeywords, kw[0]) {
		return nil, Errorf(KindRefused, "query runs only read-only statements (%s); use execute_sql for %s", strings.Join(readKeywords, ", "), firstWord(kw))
	}
	var rows *db.Rows
	err := read(ctx, env, func(ctx context.Context, q db.Querier, _ db.Catalog) error {
		r, err := q.QueryContext(ctx, stmt)
		if err != nil {
			return err
		}
		rows, err = db.Collect(r, rowLimit(env, a), db.DefaultMaxCell)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Result{Text: rows.Text(), Structured: rows}, nil
}

// controlKeywords start statements that would break the session's own
// transaction or identity.
var controlKeywords = []string{"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "START", "ABORT", "ATTACH", "DETACH", "VACUUM"}

func executeSQL(ctx context.Context, env *Env, a Args) (*Result, error) {
	lx := db.LexerFor(env.DB.Engine())
	stmts := lx.Split(a.String("sql"))
	if len(stmts) == 0 {
		return nil, Errorf(KindInvalidParams, "argument \"sql\" holds no statement")
	}
	for i, s := range stmts {
		kw := lx.Keywords(s, 3)
		if len(kw) > 0 && slices.Contains(controlKeywords, kw[0]) {
			return nil, Errorf(KindRefused, "statement %d (%s) would break the session's transaction; nothing was run. The session keeps one transaction: use the commit and abort tools, and run ATTACH/VACUUM outside mcpgate", i+1, kw[0])
		}
		if roleChange(kw) {
			return nil, Errorf(KindRefused, "statement %d changes the session's role or authorization; nothing was run. The session runs as its user", i+1)
		}
	}
	var affected int64
	var rows *db.Rows
	// A call without a transaction handle in a per-user worker commits
	// when it succeeds (docs/tools.md, "Transactions without sessions").
	run := env.DB.Do
	if env.Autocommit {
		run = env.DB.CommitAfter
	}
	err := run(ctx, func(ctx context.Context, q db.Querier) error {
		for i, s := range stmts {
			last := i == len(stmts)-1
			if kw := lx.Keywords(s, 1); last && slices.Contains(readKeywords, kw[0]) || last && returning(s) {
				r, err := q.QueryContext(ctx, s)
				if err != nil {
					return stmtError(ctx, env, i+1, len(stmts), err)
				}
				if rows, err = db.Collect(r, env.DB.Config().MaxRows, db.DefaultMaxCell); err != nil {
					return err
				}
				continue
			}
			res, err := q.ExecContext(ctx, s)
			if err != nil {
				return stmtError(ctx, env, i+1, len(stmts), err)
			}
			if n, err := res.RowsAffected(); err == nil && n > 0 {
				affected += n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("ran %d statement(s); %d row(s) affected. The changes are uncommitted: commit to make them visible to other sessions, abort to discard them.", len(stmts), affected)
	out := map[string]any{"statements": len(stmts), "rowsAffected": affected}
	switch {
	case env.Autocommit:
		text = fmt.Sprintf("ran %d statement(s); %d row(s) affected; committed (no transaction handle was given).", len(stmts), affected)
		out["committed"] = true
	case env.Transaction != "":
		text = fmt.Sprintf("ran %d statement(s); %d row(s) affected. The changes are uncommitted in the transaction: commit it to make them visible to others, abort it to discard them.", len(stmts), affected)
	}
	if rows != nil {
		text = rows.Text() + "\n" + text
		out["result"] = rows
	}
	return &Result{Text: text, Structured: out}, nil
}

// stmtError says which statement of several failed, keeping the kind.
func stmtError(ctx context.Context, env *Env, i, n int, err error) error {
	if n == 1 {
		return err
	}
	de := *env.DB.Classify(ctx, err)
	de.Message = fmt.Sprintf("statement %d of %d: %s (the whole call was undone)", i, n, de.Message)
	return &de
}

// returning reports whether a statement has a RETURNING clause, so that its
// rows are read rather than discarded.
func returning(stmt string) bool {
	return strings.Contains(strings.ToUpper(stmt), "RETURNING")
}

// roleChange reports whether a statement's first words change the role:
// SET ROLE, RESET ROLE, SET SESSION AUTHORIZATION and their LOCAL forms.
func roleChange(kw []string) bool {
	if len(kw) < 2 {
		return false
	}
	rest := kw[1:]
	if kw[0] != "SET" && kw[0] != "RESET" {
		return false
	}
	if rest[0] == "LOCAL" || rest[0] == "SESSION" {
		rest = rest[1:]
	}
	return len(rest) > 0 && (rest[0] == "ROLE" || rest[0] == "AUTHORIZATION" || rest[0] == "ALL")
}

func firstWord(kw []string) string {
	if len(kw) == 0 {
		return "this statement"
	}
	return kw[0]
}
