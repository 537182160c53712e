package tools_test

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

// TestQueryCannotEndSessionsPostgres: pg_terminate_backend and
// pg_cancel_backend act on another backend (or the caller's own), where no
// rollback reaches: every worker connects as the same role unless
// connect_as_user, so another user's read-only query could end a
// read-write session's backend and with it its uncommitted work, and a
// read-only token's query on a read-write session could end that session's
// own. Both are refused in query and in read-only sessions.
func TestQueryCannotEndSessionsPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	rw, ro := session(t, cfg, "ada", false), session(t, cfg, "zed", true)
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE TABLE public.ada_work (a int); INSERT INTO public.ada_work VALUES (1)"})
	for _, sql := range []string{
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND usename = current_user",
		"SELECT pg_catalog.pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND usename = current_user",
	} {
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
	}
	kind, msg := callErr(t, rw, "query", map[string]any{"sql": "SELECT pg_terminate_backend(pg_backend_pid())"})
	assert.Equal(t, "refused", kind, msg)
	_, st := callOK(t, rw, "status", nil)
	assert.Equal(t, true, st["uncommittedChanges"], "ada's session keeps its uncommitted work")
	assert.Equal(t, float64(1), count(t, rw, "SELECT count(*) FROM public.ada_work"))
}

// TestApplyDDLSetSchemaPostgres: ALTER TABLE/VIEW … SET SCHEMA names a
// second schema, the one the object moves into. The system-object guard
// checked only the object moved, so apply_ddl moved a user's table into
// pg_catalog (first on every search_path: it would shadow other users'
// tables of that name) when the role may create there.
func TestApplyDDLSetSchemaPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	rw := session(t, cfg, "ada", false)
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE TABLE public.mover (a int); CREATE VIEW public.vmover AS SELECT 1 AS a"})
	callOK(t, rw, "commit", nil)
	for _, sql := range []string{
		"ALTER TABLE public.mover SET SCHEMA pg_catalog",
		`ALTER TABLE public.mover SET SCHEMA "pg_catalog"`,
		"ALTER TABLE IF EXISTS public.mover SET /* x */ SCHEMA information_schema",
		"alter table public.mover set schema PG_CATALOG",
		"ALTER VIEW public.vmover SET SCHEMA pg_catalog",
		"ALTER TABLE public.mover SET SCHEMA pg_toast",
	} {
		kind, msg := callErr(t, rw, "apply_ddl", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
	}
	assert.Equal(t, float64(2), count(t, rw, "SELECT count(*) FROM pg_catalog.pg_class WHERE relname IN ('mover', 'vmover') AND relnamespace = 'public'::regnamespace"), "both stay in public")
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE SCHEMA ada_s"})
	callOK(t, rw, "commit", nil)
	callOK(t, rw, "apply_ddl", map[string]any{"sql": "ALTER TABLE public.mover SET SCHEMA ada_s"})
}

// TestApplyDDLAllInTablespacePostgres: ALTER TABLE ALL IN TABLESPACE moves
// every table of the database in that tablespace; apply_ddl ran it and
// reported `ran alter table "all"`. It changes no one object, so apply_ddl
// refuses it.
func TestApplyDDLAllInTablespacePostgres(t *testing.T) {
	rw := session(t, dbtest.Config(t, db.Postgres), "ada", false)
	for _, sql := range []string{
		"ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE pg_default",
		"ALTER INDEX /* x */ all IN TABLESPACE pg_default SET TABLESPACE pg_default",
		"ALTER MATERIALIZED VIEW ALL IN TABLESPACE pg_default SET TABLESPACE pg_default",
	} {
		kind, msg := callErr(t, rw, "apply_ddl", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
	}
}

// TestFunctionalNotationSideEffectsPostgres: PostgreSQL reads (x).f as
// f(x), so the side-effect guard's "name followed by (" missed a call
// written that way: another user's read-only query ended a read-write
// session's backend with (pid).pg_terminate_backend, and a read-only
// session wrote WAL through ('SELECT pg_logical_emit' || '_message(…)…'
// ::text).ts_stat. Every spelling is refused in query and read-only
// sessions.
func TestFunctionalNotationSideEffectsPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	rw, ro := session(t, cfg, "ada", false), session(t, cfg, "zed", true)
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE TABLE public.ada_work2 (a int)"})
	for _, sql := range []string{
		"SELECT (pid).pg_terminate_backend FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND usename = current_user",
		"SELECT (1)./* c */pg_cancel_backend",
		"SELECT (1).--c\npg_cancel_backend",
		`SELECT (1) . "pg_cancel_backend"`,
		`SELECT ('SELECT pg_logical_emit' || '_message(false, ''m'', ''x'')::text::tsvector'::text).ts_stat`,
		`SELECT ('SELECT 1'::text).ts_stat`,
		`SELECT E'\'', (1).pg_cancel_backend`,
		`SELECT '\', (1).pg_cancel_backend, '\'`,
	} {
		for _, cs := range []*mcp.ClientSession{ro, rw} {
			kind, msg := callErr(t, cs, "query", map[string]any{"sql": sql})
			assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
		}
	}
	_, st := callOK(t, rw, "status", nil)
	assert.Equal(t, true, st["uncommittedChanges"], "ada's session keeps its uncommitted work")
	callOK(t, ro, "query", map[string]any{"sql": "SELECT (t).a FROM (SELECT 1 AS a) t, pg_catalog.pg_stat_activity s WHERE s.pid = pg_backend_pid()"})
}

// TestApplyDDLBracketIndexNameSQLite: ParseDDL reads only "…" names, and
// looked for ON anywhere after the index name: in CREATE INDEX [ONx] ON t
// it took the ON inside the brackets and checked a table "x", not t. The
// next word after the name must be ON, or apply_ddl refuses.
func TestApplyDDLBracketIndexNameSQLite(t *testing.T) {
	rw := session(t, dbtest.Config(t, db.SQLite), "ada", false)
	for _, sql := range []string{"CREATE INDEX [ONx] ON sqlite_schema (name)", "CREATE INDEX `ONx` ON sqlite_schema (name)"} {
		kind, msg := callErr(t, rw, "apply_ddl", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
		assert.NotContains(t, msg, "may not be indexed", "%s: refused by the tool, not by the engine", sql)
	}
	callOK(t, rw, "apply_ddl", map[string]any{"sql": `CREATE INDEX "ONx" ON customers (id)`})
}

// TestUncancellableReadOnlyStatementPostgres: the session's reaper ends a
// backend whose statement ignores cancels with pg_terminate_backend, which
// the side-effect guard refuses in a read-only session's statements; the
// reaper's own statement is the engine's, not the client's, and must pass.
// A read-only query of a function that holds a lock and ignores cancels
// must not keep the lock once its call has failed.
func TestUncancellableReadOnlyStatementPostgres(t *testing.T) {
	cfg := dbtest.Config(t, db.Postgres)
	cfg.StatementTimeout = 300 * time.Millisecond
	dbtest.Exec(t, cfg.DSN, `CREATE FUNCTION public.stuck() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE customers IN ACCESS SHARE MODE;
  LOOP
    BEGIN
      PERFORM pg_sleep(3600);
    EXCEPTION WHEN query_canceled THEN NULL;
    END;
  END LOOP;
END $$`)
	ro := session(t, cfg, "ada", true)
	kind, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT public.stuck()"})
	assert.Equal(t, "other", kind, msg)
	other := session(t, cfg, "bob", false)
	callOK(t, other, "execute_sql", map[string]any{"sql": "ALTER TABLE customers ADD COLUMN z int"})
}
