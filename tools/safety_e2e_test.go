package tools_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/workerproto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadOnlyCannotWrite tries to write through query in a read-only
// session by every trick we know of (a data-modifying CTE, PRAGMAs, a
// function or sequence that writes); the database itself must refuse.
func TestReadOnlyCannotWrite(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			rw := session(t, cfg, "ada", false)
			tricks := []struct{ name, sql string }{
				{"data-modifying CTE", "WITH x AS (SELECT 99 AS id) INSERT INTO customers (id, name, email) SELECT id, 'x', 'x@example.org' FROM x"},
			}
			if engine == db.SQLite {
				tricks = append(tricks,
					struct{ name, sql string }{"PRAGMA setting", "PRAGMA user_version = 7"},
					struct{ name, sql string }{"PRAGMA query_only off", "PRAGMA query_only = 0"},
					struct{ name, sql string }{"PRAGMA journal mode", "PRAGMA journal_mode = DELETE"},
				)
			} else {
				callOK(t, rw, "execute_sql", map[string]any{"sql": `CREATE SEQUENCE s;
CREATE FUNCTION sneaky() RETURNS int LANGUAGE plpgsql AS $$ BEGIN INSERT INTO customers (id, name, email) VALUES (98, 'f', 'f@example.org'); RETURN 1; END $$`})
				callOK(t, rw, "commit", nil)
				tricks = append(tricks,
					struct{ name, sql string }{"RETURNING in a CTE", "WITH d AS (DELETE FROM customers RETURNING id) SELECT count(*) FROM d"},
					struct{ name, sql string }{"UPDATE RETURNING in a CTE", "WITH u AS (UPDATE products SET stock = 0 RETURNING id) SELECT * FROM u"},
					struct{ name, sql string }{"side-effect function", "SELECT sneaky()"},
					struct{ name, sql string }{"sequence", "SELECT nextval('s')"},
					struct{ name, sql string }{"SELECT INTO", "SELECT * INTO stolen FROM customers"},
				)
			}
			ro := session(t, cfg, "ada", true)
			for _, tt := range tricks {
				t.Run(tt.name, func(t *testing.T) {
					kind, msg := callErr(t, ro, "query", map[string]any{"sql": tt.sql})
					assert.Equal(t, "readOnly", kind, msg)
				})
			}
			t.Run("refused before the database", func(t *testing.T) {
				for _, sql := range []string{"INSERT INTO customers (id, name, email) VALUES (97, 'r', 'r@example.org') RETURNING id", "ATTACH DATABASE 'x.db' AS x", "CREATE TABLE t (x int)"} {
					kind, _ := callErr(t, ro, "query", map[string]any{"sql": sql})
					assert.Equal(t, "refused", kind, sql)
				}
			})
			if engine == db.Postgres {
				t.Run("turning read-only off does not last", func(t *testing.T) {
					_, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT set_config('transaction_read_only', 'off', false)"})
					assert.Contains(t, msg, "read-only transaction")
					callOK(t, ro, "query", map[string]any{"sql": "SELECT set_config('default_transaction_read_only', 'off', false)"})
					callOK(t, ro, "refresh", nil)
					kind, _ := callErr(t, ro, "query", map[string]any{"sql": tricks[0].sql})
					assert.Equal(t, "readOnly", kind)
				})
			}
			t.Run("gated tools do not exist", func(t *testing.T) {
				for _, name := range []string{"execute_sql", "commit", "apply_ddl", "drop_table"} {
					_, err := ro.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
					assert.Error(t, err, name)
				}
			})
			// Nothing changed, seen from a read-write session.
			callOK(t, rw, "refresh", nil)
			assert.Equal(t, float64(3), count(t, rw, "SELECT count(*) FROM customers"))
			assert.Equal(t, float64(3), count(t, rw, "SELECT count(*) FROM products WHERE stock <> 0"))
			if engine == db.SQLite {
				assert.Equal(t, float64(0), count(t, rw, "SELECT user_version FROM pragma_user_version"))
				assert.Equal(t, float64(1), count(t, rw, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"))
			} else {
				assert.Equal(t, float64(0), count(t, rw, "SELECT count(*) FROM s WHERE is_called"))
				assert.Equal(t, float64(0), count(t, rw, "SELECT count(*) FROM pg_class WHERE relname = 'stolen'"))
			}
		})
	}
}

// TestSQLiteGuardThroughTools: text the statement splitter misreads (it
// lexes as PostgreSQL does, so E'\' opens an escape string for it, where
// SQLite reads the column E and the string '\') cannot smuggle a COMMIT and
// a DELETE through query, nor an ATTACH through execute_sql, in a
// read-write session: SQLite's authorizer refuses them.
func TestSQLiteGuardThroughTools(t *testing.T) {
	// PostgreSQL's reading of E'\' would hide what follows; SQLite's lexer
	// reads it as SQLite does, and the engine refuses a second statement.
	const misread = `SELECT E'\' FROM (SELECT 1 AS E) WHERE 0`
	require.Len(t, db.PostgresLexer.Split(misread+"; COMMIT; --'"), 1, "PostgreSQL's reading sees one statement")
	require.Len(t, db.SQLiteLexer.Split(misread+"; COMMIT; --'"), 2, "SQLite's reading sees two")
	cfg := dbtest.Config(t, db.SQLite)
	rw := session(t, cfg, "ada", false)
	ro := session(t, cfg, "cy", true)
	items := count(t, ro, "SELECT count(*) FROM order_items")
	require.NotZero(t, items)
	t.Run("query", func(t *testing.T) {
		kind, msg := callErr(t, rw, "query", map[string]any{"sql": misread + "; COMMIT; DELETE FROM order_items; --'"})
		assert.Equal(t, "invalidParams", kind, msg)
		kind, msg = callErr(t, rw, "query", map[string]any{"sql": misread + "; DELETE FROM order_items; --'"})
		assert.Equal(t, "invalidParams", kind, msg)
		kind, msg = callErr(t, rw, "query", map[string]any{"sql": "PRAGMA foreign_keys = 0"})
		assert.Equal(t, "readOnly", kind, msg)
	})
	t.Run("execute_sql", func(t *testing.T) {
		dir := t.TempDir()
		for _, sql := range []string{
			"CREATE TABLE t1 (begin int); ATTACH '" + filepath.Join(dir, "a.db") + "' AS e; CREATE TABLE e.t (x)",
			misread + "; ATTACH '" + filepath.Join(dir, "b.db") + "' AS f; CREATE TABLE f.t (x); --'",
			misread + "; COMMIT; --'",
		} {
			kind, msg := callErr(t, rw, "execute_sql", map[string]any{"sql": sql})
			assert.Equal(t, "refused", kind, msg)
		}
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, left, "no database file was created")
	})
	callOK(t, rw, "refresh", nil)
	assert.Equal(t, items, count(t, rw, "SELECT count(*) FROM order_items"))
	assert.Equal(t, float64(1), count(t, rw, "SELECT foreign_keys FROM pragma_foreign_keys"))
	callOK(t, rw, "execute_sql", map[string]any{"sql": "DELETE FROM order_items"})
	callOK(t, rw, "commit", nil)
	callOK(t, ro, "refresh", nil)
	assert.Zero(t, count(t, ro, "SELECT count(*) FROM order_items"), "the session's own commit works")
}

func TestSystemObjectsRefused(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := session(t, dbtest.Config(t, engine), "ada", false)
			type call struct {
				tool string
				args map[string]any
			}
			var calls []call
			if engine == db.SQLite {
				calls = []call{
					{"drop_table", map[string]any{"table": "sqlite_schema"}},
					{"drop_table", map[string]any{"table": "SQLITE_MASTER"}},
					{"apply_ddl", map[string]any{"sql": "ALTER TABLE sqlite_sequence RENAME TO x"}},
					{"apply_ddl", map[string]any{"sql": `CREATE INDEX i ON "sqlite_master" (name)`}},
					{"apply_ddl", map[string]any{"sql": "CREATE TABLE main.sqlite_mine (a)"}},
				}
			} else {
				calls = []call{
					{"drop_table", map[string]any{"table": "pg_class"}}, // resolves through search_path
					{"drop_table", map[string]any{"table": "pg_class", "schema": "pg_catalog"}},
					{"drop_table", map[string]any{"table": "tables", "schema": "information_schema"}},
					{"apply_ddl", map[string]any{"sql": "ALTER TABLE PG_CATALOG.PG_CLASS ADD COLUMN x int"}},
					{"apply_ddl", map[string]any{"sql": "ALTER TABLE pg_proc ADD COLUMN x int"}},
					{"apply_ddl", map[string]any{"sql": "CREATE TABLE information_schema.mine (a int)"}},
					{"apply_ddl", map[string]any{"sql": `CREATE INDEX ON "pg_catalog"."pg_type" (typname)`}},
					{"drop_schema", map[string]any{"schema": "pg_catalog"}},
					{"drop_schema", map[string]any{"schema": "information_schema"}},
					{"drop_schema", map[string]any{"schema": "pg_toast"}},
					{"create_schema", map[string]any{"schema": "pg_mine"}},
					{"set_comment", map[string]any{"table": "pg_class", "schema": "pg_catalog", "comment": "x"}},
					{"create_or_replace_routine", map[string]any{"sql": "CREATE FUNCTION pg_catalog.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'"}},
					// Unicode escapes that db.ParseDDL does not decode.
					{"apply_ddl", map[string]any{"sql": `CREATE TABLE U&"information\005fschema".mine (a int)`}},
					{"apply_ddl", map[string]any{"sql": `CREATE TABLE public.u&"!0070g_mine" UESCAPE '!' (a int)`}},
					{"apply_ddl", map[string]any{"sql": `CREATE INDEX ON U&"pg\005fcatalog".pg_type (typname)`}},
					{"create_or_replace_routine", map[string]any{"sql": `CREATE FUNCTION U&"pg\005fcatalog".mine() RETURNS int LANGUAGE sql AS 'SELECT 1'`}},
				}
			}
			for _, c := range calls {
				kind, msg := callErr(t, cs, c.tool, c.args)
				assert.Equal(t, "refused", kind, "%s %v: %s", c.tool, c.args, msg)
			}
			if engine == db.Postgres {
				// By identity, not by prefix: a user table named pg_… in
				// public is the user's to drop.
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE TABLE public.pg_notes (a int)"})
				callOK(t, cs, "drop_table", map[string]any{"table": "pg_notes", "schema": "public"})
			}
		})
	}
}

// TestIsolation: one session's uncommitted insert is invisible to another
// until it commits and the other refreshes.
func TestIsolation(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			a, b := session(t, cfg, "ada", false), session(t, cfg, "bob", false)
			const n = "SELECT count(*) FROM customers"
			require.Equal(t, float64(3), count(t, b, n))
			callOK(t, a, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (30, 'Alan Kay', 'alan@example.org')"})
			assert.Equal(t, float64(4), count(t, a, n), "a sees its own insert")
			assert.Equal(t, float64(3), count(t, b, n), "b does not see a's uncommitted insert")
			callOK(t, a, "commit", nil)
			assert.Equal(t, float64(3), count(t, b, n), "b's transaction keeps its snapshot until it refreshes")
			callOK(t, b, "refresh", nil)
			assert.Equal(t, float64(4), count(t, b, n), "after commit and refresh b sees it")
		})
	}
}

// TestHiddenCommandsPostgres: SQL that a careless splitter takes for one
// statement (a column named begin, an escape string, $ inside a name) must
// not run a COMMIT hidden in it: Split cuts it as PostgreSQL does and the
// COMMIT is refused, and a wrong cut would fail in the server, which takes
// one command per statement over the extended protocol.
func TestHiddenCommandsPostgres(t *testing.T) {
	cs := session(t, dbtest.Config(t, db.Postgres), "ada", false)
	hidden := []string{
		"CREATE TABLE t1 (begin int); COMMIT; CREATE TABLE after_commit (x int)",
		`UPDATE customers SET name = name WHERE name = E'\''; COMMIT; CREATE TABLE after_commit (x int) --'`,
		"SELECT 1 AS x$a$; COMMIT; CREATE TABLE after_commit (x int); -- $a$",
	}
	for _, sql := range hidden {
		kind, msg := callErr(t, cs, "execute_sql", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
		kind, msg = callErr(t, cs, "query", map[string]any{"sql": sql})
		assert.Equal(t, "invalidParams", kind, "%s: %s", sql, msg)
	}
	callOK(t, cs, "abort", nil)
	assert.Zero(t, count(t, cs, "SELECT count(*) FROM pg_class WHERE relname IN ('t1', 'after_commit')"))
}

// TestSetCommentLiteralPostgres: set_comment's literal means what it says
// whatever standard_conforming_strings is: a session pins it on (the
// database here defaults to off), and the literal, an escape string, holds
// even after the session turns it off.
func TestSetCommentLiteralPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	dbtest.Exec(t, cfg.DSN, "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database()); END$$")
	cs := session(t, cfg, "ada", false)
	_, sc := callOK(t, cs, "query", map[string]any{"sql": "SHOW standard_conforming_strings"})
	assert.Equal(t, []any{[]any{"on"}}, sc["rows"])
	callOK(t, cs, "execute_sql", map[string]any{"sql": "SET standard_conforming_strings = off"})
	const comment = `\'; CREATE TABLE injected (x int); --`
	callOK(t, cs, "set_comment", map[string]any{"table": "customers", "comment": comment})
	_, sc = callOK(t, cs, "describe_table", map[string]any{"table": "customers"})
	assert.Equal(t, comment, sc["comment"])
	assert.Zero(t, count(t, cs, "SELECT count(*) FROM pg_class WHERE relname = 'injected'"))
}

// TestQueryLeavesNothingPostgres: what query's statement does outside the
// transaction does not outlive the call: a session advisory lock (which no
// rollback releases) is released after every call, and in a read-write
// session query runs read-only, so setval is refused rather than kept;
// the session's next writes still work.
func TestQueryLeavesNothingPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	rw, ro, other := session(t, cfg, "ada", false), session(t, cfg, "ro", true), session(t, cfg, "zed", false)
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE SEQUENCE s2"})
	callOK(t, rw, "commit", nil)
	tryLock := func() any {
		_, sc := callOK(t, other, "query", map[string]any{"sql": "SELECT pg_try_advisory_lock(42)"})
		return sc["rows"].([]any)[0].([]any)[0]
	}

	callOK(t, ro, "query", map[string]any{"sql": "SELECT pg_advisory_lock(42)"})
	assert.Equal(t, true, tryLock(), "a read-only session's lock outlived its call")
	kind, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT pg_advisory_lock(42), 1/0"})
	assert.Equal(t, "sqlError", kind, msg)
	assert.Equal(t, true, tryLock(), "a failed call's lock outlived it")
	callOK(t, rw, "execute_sql", map[string]any{"sql": "SELECT pg_advisory_lock(42)"})
	assert.Equal(t, true, tryLock(), "execute_sql's session lock outlived its call")

	kind, msg = callErr(t, rw, "query", map[string]any{"sql": "SELECT setval('s2', 1000)"})
	assert.Equal(t, "readOnly", kind, msg)
	kind, msg = callErr(t, rw, "query", map[string]any{"sql": "WITH d AS (DELETE FROM customers RETURNING id) SELECT count(*) FROM d"})
	assert.Equal(t, "readOnly", kind, msg)
	_, sc := callOK(t, rw, "query", map[string]any{"sql": "SELECT current_setting('transaction_read_only')"})
	assert.Equal(t, []any{[]any{"on"}}, sc["rows"], "inside query")

	// The rollback to the savepoint restored read-write.
	_, sc = callOK(t, rw, "execute_sql", map[string]any{"sql": "SELECT current_setting('transaction_read_only')"})
	assert.Equal(t, []any{[]any{"off"}}, sc["result"].(map[string]any)["rows"])
	callOK(t, rw, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (50, 'Later', 'later@example.org'); SELECT setval('s2', 7)"})
	assert.Equal(t, float64(4), count(t, rw, "SELECT count(*) FROM customers"), "query sees the session's own write")
	callOK(t, rw, "commit", nil)
	callOK(t, other, "refresh", nil)
	assert.Equal(t, float64(4), count(t, other, "SELECT count(*) FROM customers"))
	assert.Equal(t, float64(7), count(t, other, "SELECT last_value FROM s2"), "only execute_sql moved the sequence")
}

// TestSignalOtherSessionsPostgres: one user's query, even read-only,
// cannot end other sessions: with a shared login role once
// pg_terminate_backend and pg_cancel_backend are revoked from PUBLIC (as
// docs/tools.md tells the operator), and with connect_as_user because
// another user's backend belongs to another role.
func TestSignalOtherSessionsPostgres(t *testing.T) {
	super := dbtest.Postgres(t)
	cfg := dbtest.Config(t, db.Postgres)
	roles := []string{"mcp_login", "mcp_eve", "mcp_victim"}
	for _, role := range roles {
		dbtest.ExecNoFail(super, "CREATE ROLE "+role+" LOGIN")
	}
	dbtest.JoinUserGroup(t, "mcp_eve", "mcp_victim")
	t.Cleanup(func() {
		for _, role := range roles {
			dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		}
	})
	const kill = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()"
	const signals = "FUNCTION pg_terminate_backend(integer, bigint), pg_cancel_backend(integer)"
	t.Run("shared login role, revoked", func(t *testing.T) {
		dbtest.Exec(t, cfg.DSN, "REVOKE EXECUTE ON "+signals+" FROM PUBLIC")
		shared := cfg
		shared.DSN += " user=mcp_login"
		victim, ro, rw := session(t, shared, "bob", false), session(t, shared, "eve", true), session(t, shared, "mallory", false)
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": kill})
		assert.Equal(t, "refused", kind, msg) // by name, before the server
		// execute_sql in a read-write session names it too; the server's
		// REVOKE stops it (and a function that wraps it).
		kind, msg = callErr(t, rw, "execute_sql", map[string]any{"sql": kill})
		assert.Equal(t, "refused", kind, msg)
		assert.Contains(t, msg, "permission denied for function")
		callOK(t, victim, "status", nil)
	})
	t.Run("connect_as_user", func(t *testing.T) {
		dbtest.Exec(t, cfg.DSN, "GRANT EXECUTE ON "+signals+" TO PUBLIC") // PostgreSQL's default
		as := cfg
		as.ConnectAsUser, as.UserRoleMemberOf = true, dbtest.UserGroup
		victim, ro := session(t, as, "mcp_victim", false), session(t, as, "mcp_eve", true)
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": kill})
		assert.Equal(t, "refused", kind, msg)
		callOK(t, victim, "status", nil)
	})
}

// TestConflict: two sessions update the same row; one gets conflict, and
// after it aborts and retries both updates are in.
func TestConflict(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cfg.LockTimeout = 300 * time.Millisecond
			a, b := session(t, cfg, "ada", false), session(t, cfg, "bob", false)
			count(t, b, "SELECT count(*) FROM products") // b's snapshot starts now
			callOK(t, a, "execute_sql", map[string]any{"sql": "UPDATE products SET stock = stock + 1 WHERE id = 1"})
			kind, msg := callErr(t, b, "execute_sql", map[string]any{"sql": "UPDATE products SET stock = stock + 10 WHERE id = 1"})
			assert.Equal(t, "conflict", kind, msg)
			callOK(t, a, "commit", nil)
			kind, msg = callErr(t, b, "execute_sql", map[string]any{"sql": "UPDATE products SET stock = stock + 10 WHERE id = 1"})
			assert.Equal(t, "conflict", kind, "b's snapshot predates a's commit: %s", msg)
			callOK(t, b, "abort", nil)
			callOK(t, b, "execute_sql", map[string]any{"sql": "UPDATE products SET stock = stock + 10 WHERE id = 1"})
			callOK(t, b, "commit", nil)
			c := session(t, cfg, "cy", true)
			assert.Equal(t, float64(12+1+10), count(t, c, "SELECT stock FROM products WHERE id = 1"), "nothing lost")
		})
	}
}

// longQuery runs until stopped.
func longQuery(engine string) string {
	if engine == db.Postgres {
		return "SELECT pg_sleep(3600) /* mcpgate-long */"
	}
	return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
}

// TestStatementTimeout: a statement past the timeout is stopped, and the
// session's earlier uncommitted work survives it.
func TestStatementTimeout(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cfg.StatementTimeout = 500 * time.Millisecond
			cs := session(t, cfg, "ada", false)
			callOK(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (40, 'Kept', 'kept@example.org')"})
			kind, msg := callErr(t, cs, "query", map[string]any{"sql": longQuery(engine)})
			assert.Equal(t, "other", kind)
			assert.Contains(t, msg, "timeout")
			_, st := callOK(t, cs, "status", nil)
			assert.Equal(t, true, st["uncommittedChanges"])
			assert.Equal(t, float64(4), count(t, cs, "SELECT count(*) FROM customers"))
		})
	}
}

// TestCancelStopsStatement: notifications/cancelled (sent by the go-sdk
// client when a call's context ends) stops the running statement; the
// session then answers at once instead of waiting behind it.
func TestCancelStopsStatement(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cfg.StatementTimeout = time.Hour
			cs := session(t, cfg, "ada", false)
			// On SQLite a long write, so that the test can see it running:
			// it holds the write lock. The test's probe for that lock can
			// meet the worker's first write, which SQLite then refuses at
			// once (a read transaction upgrading does not wait); such a
			// call is tried again with the probe's back turned.
			tool, stmt := "execute_sql", "CREATE TABLE n (x); INSERT INTO n "+longQuery(engine)
			if engine == db.Postgres {
				tool, stmt = "query", longQuery(engine)
			}
			var (
				cancel context.CancelFunc
				done   chan error
			)
			for attempt := 1; ; attempt++ {
				var ctx context.Context
				ctx, cancel = context.WithCancel(t.Context())
				done = make(chan error, 1)
				ended := make(chan *mcp.CallToolResult, 1)
				go func() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"sql": stmt}})
					done <- err
					ended <- res
				}()
				var running bool
				if engine == db.Postgres {
					running = waitRunning(t, cfg.DSN, "mcpgate-long", ended)
				} else {
					running = waitWriter(t, cfg.DSN, ended)
				}
				if running {
					break
				}
				cancel()
				err := <-done
				res := <-ended
				require.NoError(t, err)
				text := resultText(res)
				if engine == db.Postgres || attempt == 5 || !strings.Contains(text, "write lock") {
					t.Fatalf("the call ended before it was cancelled: %s", text)
				}
			}
			cancel()
			require.Error(t, <-done)
			sctx, scancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer scancel()
			res, err := cs.CallTool(sctx, &mcp.CallToolParams{Name: "status"})
			require.NoError(t, err, "the session must answer once the statement is stopped")
			assert.False(t, res.IsError, resultText(res))
		})
	}
}

// waitWriter waits until another connection holds the SQLite database's
// write lock. It returns false when the call it waits for ends first (its
// result is put back on ended): polling on would hang.
func waitWriter(t *testing.T, path string, ended chan *mcp.CallToolResult) bool {
	t.Helper()
	pool, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer pool.Close()
	conn, err := pool.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	for {
		if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
			return true // busy: the worker is writing
		}
		_, err := conn.ExecContext(t.Context(), "ROLLBACK")
		require.NoError(t, err)
		select {
		case <-t.Context().Done():
			t.Fatal("the statement never started")
		case res := <-ended:
			ended <- res // for the caller, which reads why
			return false
		case <-time.After(10 * time.Millisecond): // polling the lock: nothing to await
		}
	}
}

// waitRunning waits until PostgreSQL shows a statement containing marker
// as active. It returns false when the call ends first, as waitWriter.
func waitRunning(t *testing.T, dsn, marker string, ended chan *mcp.CallToolResult) bool {
	t.Helper()
	for {
		n := dbtest.QueryInt(t, "pgx", dsn, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", marker)
		if n > 0 {
			return true
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the statement never started")
		case res := <-ended:
			ended <- res
			return false
		case <-time.After(10 * time.Millisecond): // polling pg_stat_activity: nothing to await
		}
	}
}

// TestRowLevelSecurity: each user's session sees and writes only the rows
// the policy gives that user, and a user without a role is refused at
// session start. With connect_as_user the session logs in as the user, so
// no statement can act as another user; with set_role a role switch that
// is still in force after the call closes the session (one that switches
// back within a statement is not caught: set_role is not a boundary).
func TestRowLevelSecurity(t *testing.T) {
	super := dbtest.Postgres(t)
	dsn := dbtest.PostgresDB(t, `
CREATE TABLE notes (id serial PRIMARY KEY, owner text NOT NULL DEFAULT current_user, body text NOT NULL);
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON notes USING (owner = current_user) WITH CHECK (owner = current_user);
INSERT INTO notes (owner, body) VALUES ('mcp_alice', 'a1'), ('mcp_bob', 'b1'), ('mcp_bob', 'b2');`)
	// LOGIN, for connect_as_user: the test server trusts every role on its
	// unix socket.
	for _, role := range []string{"mcp_alice", "mcp_bob"} {
		dbtest.ExecNoFail(super, "CREATE ROLE "+role+" LOGIN")
		dbtest.Exec(t, dsn, "GRANT SELECT, INSERT ON notes TO "+role+"; GRANT USAGE ON SEQUENCE notes_id_seq TO "+role)
	}
	dbtest.JoinUserGroup(t, "mcp_alice", "mcp_bob")
	t.Cleanup(func() {
		for _, role := range []string{"mcp_alice", "mcp_bob"} {
			dbtest.ExecNoFail(dsn, "DROP OWNED BY "+role)
			dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		}
	})
	const n = "SELECT count(*) FROM notes"
	for _, cfg := range []db.Config{
		{Driver: db.Postgres, DSN: dsn, SetRole: true, UserRoleMemberOf: dbtest.UserGroup},
		{Driver: db.Postgres, DSN: dsn, ConnectAsUser: true, UserRoleMemberOf: dbtest.UserGroup},
	} {
		mode := "set_role"
		if cfg.ConnectAsUser {
			mode = "connect_as_user"
		}
		t.Run(mode, func(t *testing.T) {
			dbtest.Exec(t, dsn, "DELETE FROM notes WHERE id > 3") // the rows an earlier mode added
			alice, bob := session(t, cfg, "mcp_alice", false), session(t, cfg, "mcp_bob", false)
			assert.Equal(t, float64(1), count(t, alice, n))
			assert.Equal(t, float64(2), count(t, bob, n))
			kind, msg := callErr(t, alice, "execute_sql", map[string]any{"sql": "INSERT INTO notes (owner, body) VALUES ('mcp_bob', 'forged')"})
			assert.Equal(t, "refused", kind, msg)
			callOK(t, alice, "execute_sql", map[string]any{"sql": "INSERT INTO notes (body) VALUES ('a2')"})
			callOK(t, alice, "commit", nil)
			callOK(t, bob, "refresh", nil)
			assert.Equal(t, float64(2), count(t, bob, n), "bob never sees alice's rows")

			if cfg.SetRole {
				t.Run("a role switch closes the session", func(t *testing.T) {
					kind, msg := callErr(t, alice, "query", map[string]any{"sql": "SELECT set_config('role', 'mcp_bob', false), (SELECT count(*) FROM notes)"})
					assert.Equal(t, "refused", kind, msg)
					assert.Contains(t, msg, "changed the session's role")
					kind, msg = callErr(t, alice, "status", nil)
					assert.Equal(t, "other", kind)
					assert.Contains(t, msg, "closed")
				})
				return
			}
			t.Run("no switch to another user's role", func(t *testing.T) {
				ro := session(t, cfg, "mcp_alice", true)
				kind, msg := callErr(t, ro, "query", map[string]any{"sql": `SELECT set_config('role', 'mcp_bob', false),
  (SELECT string_agg(body, ',') FROM notes), set_config('role', 'mcp_alice', false)`})
				assert.Equal(t, "refused", kind, msg)
				assert.Contains(t, msg, "permission denied to set role")
				kind, msg = callErr(t, alice, "execute_sql", map[string]any{"sql": `SELECT set_config('role', 'mcp_bob', false);
INSERT INTO notes (owner, body) VALUES ('mcp_bob', 'forged by alice');
SELECT set_config('role', 'mcp_alice', false)`})
				assert.Contains(t, msg, "permission denied to set role", kind)
				callOK(t, alice, "commit", nil)
				callOK(t, bob, "refresh", nil)
				assert.Equal(t, float64(0), count(t, bob, "SELECT count(*) FROM notes WHERE body LIKE 'forged%'"))
				_, sc := callOK(t, alice, "query", map[string]any{"sql": "SELECT current_user, session_user"})
				assert.Equal(t, []any{[]any{"mcp_alice", "mcp_alice"}}, sc["rows"], "logged in as the user")
			})
		})
	}
	t.Run("a user without a role", func(t *testing.T) {
		for _, cfg := range []db.Config{
			{Driver: db.Postgres, DSN: dsn, SetRole: true, UserRoleMemberOf: dbtest.UserGroup},
			{Driver: db.Postgres, DSN: dsn, ConnectAsUser: true, UserRoleMemberOf: dbtest.UserGroup},
		} {
			cmd := exec.Command(mcpgateBinary(t), "worker")
			cmd.Env = append(append(os.Environ(), workerproto.Identity{User: "mcp_nobody"}.Environ()...), cfg.Environ()...)
			out, err := cmd.CombinedOutput()
			require.Error(t, err)
			if cfg.SetRole {
				assert.Contains(t, string(out), `user "mcp_nobody" cannot run as a database role`)
			} else {
				assert.Contains(t, string(out), `role "mcp_nobody" does not exist`)
			}
			assert.False(t, strings.Contains(string(out), "password"), "no secrets in the error")
		}
	})
}
