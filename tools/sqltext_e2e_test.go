package tools_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDDLRunsWhatItReports: apply_ddl and create_or_replace_routine run the
// statement they parsed and report, as the engine reads it, or refuse.
// PostgreSQL's comments nest and SQLite's do not; SQLite has no E'…'.
func TestDDLRunsWhatItReports(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := session(t, dbtest.Config(t, engine), "ada", false)
			if engine == db.Postgres {
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE TABLE public.victim (a int)"})
				const wrap = "/* /* */ CREATE TABLE public.t (a int) */ "
				for _, c := range []struct{ tool, sql string }{
					{"apply_ddl", wrap + "DROP TABLE public.victim"},
					{"apply_ddl", wrap + "CREATE TABLE information_schema.mine (a int)"},
					{"apply_ddl", wrap + "ALTER TABLE pg_catalog.pg_class ADD COLUMN x int"},
					{"apply_ddl", wrap + "CREATE INDEX ON pg_catalog.pg_type (typname)"},
					{"create_or_replace_routine", "/* /* */ CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1' */ CREATE FUNCTION pg_catalog.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'"},
					{"apply_ddl", "CREATE TABLE pg_temp.mine (a int)"},
					{"apply_ddl", "CREATE TABLE pg_toast.mine (a int)"},
					{"create_or_replace_routine", "CREATE FUNCTION pg_temp.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'"},
				} {
					kind, msg := callErr(t, cs, c.tool, map[string]any{"sql": c.sql})
					assert.Equal(t, "refused", kind, "%s %q: %s", c.tool, c.sql, msg)
				}
				assert.Zero(t, count(t, cs, "SELECT count(*) FROM public.victim"), "victim is still there")
				assert.Zero(t, count(t, cs, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('t', 'mine')"))
				// A nested comment that is only a comment is still read right.
				_, sc := callOK(t, cs, "apply_ddl", map[string]any{"sql": "/* a /* nested */ comment */ CREATE TABLE public.kept (a int)"})
				assert.Equal(t, `ran create table "public"."kept"`, sc["done"])
				return
			}
			items := count(t, cs, "SELECT count(*) FROM order_items")
			require.NotZero(t, items)
			version := count(t, cs, "SELECT schema_version FROM pragma_schema_version")
			hostile := `CREATE VIEW v1 AS SELECT E'\' FROM (SELECT 1 AS E); DELETE FROM order_items; PRAGMA writable_schema=1; UPDATE sqlite_schema SET sql = sql WHERE name = 'customers'; --'`
			kind, msg := callErr(t, cs, "apply_ddl", map[string]any{"sql": hostile})
			assert.Equal(t, "invalidParams", kind, msg)
			callOK(t, cs, "refresh", nil)
			assert.Equal(t, items, count(t, cs, "SELECT count(*) FROM order_items"), "nothing was deleted")
			assert.Equal(t, version, count(t, cs, "SELECT schema_version FROM pragma_schema_version"), "the schema is unchanged")
			// The view alone is one statement on SQLite, and runs.
			_, sc := callOK(t, cs, "apply_ddl", map[string]any{"sql": `CREATE VIEW v1 AS SELECT E'\' FROM (SELECT 1 AS E)`})
			assert.Equal(t, `ran create view "v1"`, sc["done"])
		})
	}
}

// TestSQLitePragmaValues: an empty PRAGMA argument is an argument, and
// where the server keeps its file is not the user's business.
func TestSQLitePragmaValues(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	rw := session(t, cfg, "ada", false)
	ro := session(t, cfg, "cy", true)
	for _, sql := range []string{"PRAGMA query_only = ''", "PRAGMA query_only('')", "PRAGMA cache_size = ''", "PRAGMA trusted_schema = ''"} {
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": sql})
		assert.Equal(t, "readOnly", kind, "%s: %s", sql, msg)
	}
	assert.Equal(t, float64(1), count(t, ro, "PRAGMA query_only"), "reading a setting still works")
	kind, msg := callErr(t, rw, "query", map[string]any{"sql": "PRAGMA user_version = ''"})
	assert.Equal(t, "readOnly", kind, msg)
	for _, cs := range []struct {
		name string
		sql  string
	}{{"statement", "PRAGMA database_list"}, {"function", "SELECT file FROM pragma_database_list"}, {"qualified", "PRAGMA main.database_list"}} {
		for _, s := range []struct {
			name string
			ro   bool
		}{{"rw", false}, {"ro", true}} {
			c := rw
			if s.ro {
				c = ro
			}
			res, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"sql": cs.sql}})
			require.NoError(t, err)
			assert.NotContains(t, resultText(res), cfg.DSN, "%s %s shows the file's path", s.name, cs.name)
			assert.True(t, res.IsError, "%s %s: %s", s.name, cs.name, resultText(res))
		}
	}
	_, sc := callOK(t, rw, "status", nil)
	assert.NotEmpty(t, sc["database"], "status still names the database")
}

// TestNestedCommentsPostgres: a nested comment hides no command from
// execute_sql's and query's checks.
func TestNestedCommentsPostgres(t *testing.T) {
	cs := session(t, dbtest.Config(t, db.Postgres), "ada", false)
	for _, sql := range []string{
		"/* /* */ SELECT 1 */ COMMIT",
		"/* /* */ SELECT 1; */ COMMIT; CREATE TABLE after_commit (x int)",
	} {
		kind, msg := callErr(t, cs, "execute_sql", map[string]any{"sql": sql})
		assert.Equal(t, "refused", kind, "%s: %s", sql, msg)
	}
	kind, msg := callErr(t, cs, "query", map[string]any{"sql": "/* /* */ SELECT 1 */ DELETE FROM order_items"})
	assert.Equal(t, "refused", kind, msg)
	assert.Zero(t, count(t, cs, "SELECT count(*) FROM pg_class WHERE relname = 'after_commit'"))
}
