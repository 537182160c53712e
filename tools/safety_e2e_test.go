package tools_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadOnlyCannotWrite tries to write through query in a read-only
// session by every trick issue 4 names; the database itself must refuse.
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
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			// On SQLite a long write, so that the test can see it running:
			// it holds the write lock.
			tool, stmt := "execute_sql", "CREATE TABLE n (x); INSERT INTO n "+longQuery(engine)
			if engine == db.Postgres {
				tool, stmt = "query", longQuery(engine)
			}
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"sql": stmt}})
				done <- err
			}()
			if engine == db.Postgres {
				waitRunning(t, cfg.DSN, "mcpgate-long")
			} else {
				waitWriter(t, cfg.DSN)
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
// write lock.
func waitWriter(t *testing.T, path string) {
	t.Helper()
	pool, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer pool.Close()
	conn, err := pool.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	for {
		if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
			return // busy: the worker is writing
		}
		_, err := conn.ExecContext(t.Context(), "ROLLBACK")
		require.NoError(t, err)
		select {
		case <-t.Context().Done():
			t.Fatal("the statement never started")
		case <-time.After(10 * time.Millisecond): // polling the lock: nothing to await
		}
	}
}

// waitRunning waits until PostgreSQL shows a statement containing marker
// as active.
func waitRunning(t *testing.T, dsn, marker string) {
	t.Helper()
	for {
		n := dbtest.QueryInt(t, "pgx", dsn, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", marker)
		if n > 0 {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the statement never started")
		case <-time.After(10 * time.Millisecond): // polling pg_stat_activity: nothing to await
		}
	}
}

// TestRowLevelSecurity: with SET ROLE, each user's session sees only the
// rows the policy gives that user, cannot switch roles, and a user without
// a role is refused at session start.
func TestRowLevelSecurity(t *testing.T) {
	super := dbtest.Postgres(t)
	dsn := dbtest.PostgresDB(t, `
CREATE TABLE notes (id serial PRIMARY KEY, owner text NOT NULL DEFAULT current_user, body text NOT NULL);
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON notes USING (owner = current_user) WITH CHECK (owner = current_user);
INSERT INTO notes (owner, body) VALUES ('mcp_alice', 'a1'), ('mcp_bob', 'b1'), ('mcp_bob', 'b2');`)
	for _, role := range []string{"mcp_alice", "mcp_bob"} {
		dbtest.ExecNoFail(super, "CREATE ROLE "+role+" NOLOGIN")
		dbtest.Exec(t, dsn, "GRANT SELECT, INSERT ON notes TO "+role+"; GRANT USAGE ON SEQUENCE notes_id_seq TO "+role)
	}
	t.Cleanup(func() {
		for _, role := range []string{"mcp_alice", "mcp_bob"} {
			dbtest.ExecNoFail(dsn, "DROP OWNED BY "+role)
			dbtest.ExecNoFail(super, "DROP ROLE IF EXISTS "+role)
		}
	})
	cfg := db.Config{Driver: db.Postgres, DSN: dsn, SetRole: true}
	alice, bob := session(t, cfg, "mcp_alice", false), session(t, cfg, "mcp_bob", false)
	const n = "SELECT count(*) FROM notes"
	assert.Equal(t, float64(1), count(t, alice, n))
	assert.Equal(t, float64(2), count(t, bob, n))
	kind, msg := callErr(t, alice, "execute_sql", map[string]any{"sql": "INSERT INTO notes (owner, body) VALUES ('mcp_bob', 'forged')"})
	assert.Equal(t, "refused", kind, msg)
	callOK(t, alice, "execute_sql", map[string]any{"sql": "INSERT INTO notes (body) VALUES ('a2')"})
	callOK(t, alice, "commit", nil)
	callOK(t, bob, "refresh", nil)
	assert.Equal(t, float64(2), count(t, bob, n), "bob never sees alice's rows")

	t.Run("a role switch closes the session", func(t *testing.T) {
		kind, msg := callErr(t, alice, "query", map[string]any{"sql": "SELECT set_config('role', 'mcp_bob', false), (SELECT count(*) FROM notes)"})
		assert.Equal(t, "refused", kind, msg)
		assert.Contains(t, msg, "changed the session's role")
		kind, msg = callErr(t, alice, "status", nil)
		assert.Equal(t, "other", kind)
		assert.Contains(t, msg, "closed")
	})
	t.Run("a user without a role", func(t *testing.T) {
		cmd := exec.Command(mcpgateBinary(t), "worker")
		cmd.Env = append(append(os.Environ(), worker.Identity{User: "mcp_nobody"}.Environ()...), cfg.Environ()...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), `user "mcp_nobody" cannot run as a database role`)
		assert.False(t, strings.Contains(string(out), "password"), "no secrets in the error")
	})
}
