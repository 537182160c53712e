package tools_test

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/workerproto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// session starts a worker for user on cfg.
func session(t *testing.T, cfg db.Config, user string, readOnly bool) *mcp.ClientSession {
	t.Helper()
	return startWorker(t, workerproto.Identity{User: user, SessionID: "s-" + user, ReadOnly: readOnly}, &cfg)
}

// pgOnly are the tools registered only on PostgreSQL.
var pgOnly = []string{"get_routine_source", "create_schema", "drop_schema", "create_or_replace_routine", "drop_routine", "set_comment"}

// perUserOnly are the tools registered only in a per-user worker
// (MCPGATE_WORKER_SCOPE=user), never in a session's.
var perUserOnly = []string{"begin"}

func TestToolList(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			all := map[string]bool{}
			for _, name := range tools.Builtin() {
				sets, err := tools.Lookup([]string{name})
				require.NoError(t, err)
				for _, n := range sets[0].ToolNames() {
					all[n] = true
				}
			}
			got := toolNames(t, session(t, cfg, "ada", false))
			for n := range all {
				want := (engine == db.Postgres || !slices.Contains(pgOnly, n)) && !slices.Contains(perUserOnly, n)
				assert.Equal(t, want, slices.Contains(got, n), "tool %s registered on %s", n, engine)
			}
			safe, err := tools.SafeToolNames(nil)
			require.NoError(t, err)
			ro := toolNames(t, session(t, cfg, "ada", true))
			for _, n := range ro {
				assert.Contains(t, safe, n, "read-only session registers gated tool %s", n)
			}
			assert.Contains(t, ro, "query")
			assert.NotContains(t, ro, "execute_sql")
		})
	}
}

func TestEveryTool(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cs := session(t, cfg, "ada", false)
			schema := "main"
			if engine == db.Postgres {
				schema = "public"
			}
			step := func(name string, f func(t *testing.T)) { t.Run(name, f) }

			step("status", func(t *testing.T) {
				_, sc := callOK(t, cs, "status", nil)
				assert.Equal(t, "ada", sc["user"])
				assert.Equal(t, engine, sc["engine"])
				assert.Equal(t, false, sc["uncommittedChanges"])
				assert.NotEmpty(t, sc["database"])
			})
			step("query", func(t *testing.T) {
				text, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT id, name FROM customers ORDER BY id"})
				assert.Contains(t, text, "Ada Lovelace")
				assert.Contains(t, text, "(3 rows)")
				assert.Equal(t, []any{"id", "name"}, sc["columns"])
				assert.Equal(t, float64(3), sc["total"])
				assert.Equal(t, []any{float64(1), "Ada Lovelace"}, sc["rows"].([]any)[0])
			})
			step("query capped with the true total", func(t *testing.T) {
				text, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT id FROM customers ORDER BY id", "limit": 2})
				assert.Contains(t, text, "(showing 2 of 3 rows)")
				assert.Equal(t, true, sc["truncated"])
				assert.Len(t, sc["rows"], 2)
			})
			step("query refuses", func(t *testing.T) {
				kind, msg := callErr(t, cs, "query", map[string]any{"sql": "SELECT 1; SELECT 2"})
				assert.Equal(t, "invalidParams", kind)
				assert.Contains(t, msg, "one statement")
				kind, msg = callErr(t, cs, "query", map[string]any{"sql": "DELETE FROM customers"})
				assert.Equal(t, "refused", kind)
				assert.Contains(t, msg, "execute_sql")
				kind, _ = callErr(t, cs, "query", map[string]any{"sql": "SELECT * FROM no_such_table"})
				assert.Contains(t, []string{"sqlError", "notFound"}, kind)
			})
			step("execute_sql and abort", func(t *testing.T) {
				_, sc := callOK(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (10, 'Tmp', 'tmp@example.org'); UPDATE products SET stock = stock + 1 WHERE id = 1"})
				assert.Equal(t, float64(2), sc["rowsAffected"])
				assert.Equal(t, float64(4), count(t, cs, "SELECT count(*) FROM customers"))
				_, st := callOK(t, cs, "status", nil)
				assert.Equal(t, true, st["uncommittedChanges"])
				kind, msg := callErr(t, cs, "refresh", nil)
				assert.Equal(t, "conflict", kind)
				assert.Contains(t, msg, "commit or abort")
				callOK(t, cs, "abort", nil)
				assert.Equal(t, float64(3), count(t, cs, "SELECT count(*) FROM customers"))
				_, st = callOK(t, cs, "status", nil)
				assert.Equal(t, false, st["uncommittedChanges"])
			})
			step("execute_sql keeps earlier work when a statement fails", func(t *testing.T) {
				callOK(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (11, 'Keep', 'keep@example.org')"})
				kind, msg := callErr(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (12, 'X', 'x@example.org'); INSERT INTO customers (id, name, email) VALUES (11, 'Dup', 'dup@example.org')"})
				assert.Equal(t, "sqlError", kind)
				assert.Contains(t, msg, "statement 2 of 2")
				assert.Equal(t, float64(4), count(t, cs, "SELECT count(*) FROM customers"), "the first call's insert stays, the failed call's is undone")
				callOK(t, cs, "abort", nil)
			})
			step("execute_sql refuses transaction control", func(t *testing.T) {
				for _, sql := range []string{"COMMIT", "BEGIN", "ROLLBACK", "SAVEPOINT x", "SET ROLE postgres", "RESET ROLE"} {
					kind, _ := callErr(t, cs, "execute_sql", map[string]any{"sql": sql})
					assert.Equal(t, "refused", kind, sql)
				}
			})
			step("execute_sql returns rows", func(t *testing.T) {
				text, _ := callOK(t, cs, "execute_sql", map[string]any{"sql": "SELECT name FROM customers WHERE id = 2"})
				assert.Contains(t, text, "Edsger Dijkstra")
			})
			step("commit", func(t *testing.T) {
				callOK(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (20, 'Barbara Liskov', 'barbara@example.org')"})
				callOK(t, cs, "commit", nil)
				_, st := callOK(t, cs, "status", nil)
				assert.Equal(t, false, st["uncommittedChanges"])
				callOK(t, cs, "refresh", nil)
				assert.Equal(t, float64(4), count(t, cs, "SELECT count(*) FROM customers"))
			})
			step("list_schemas", func(t *testing.T) {
				_, sc := callOK(t, cs, "list_schemas", nil)
				assert.Contains(t, sc["schemas"], schema)
				assert.NotContains(t, sc["schemas"], "pg_catalog")
				assert.NotContains(t, sc["schemas"], "information_schema")
			})
			step("list_tables", func(t *testing.T) {
				text, _ := callOK(t, cs, "list_tables", nil)
				for _, want := range []string{"customers (table)", "orders (table)", "order_items (table)", "products (table)", "order_totals (view)", "check_stock_not_negative (view)"} {
					assert.Contains(t, text, want)
				}
				assert.NotContains(t, text, "orders_customer_idx")
				kind, _ := callErr(t, cs, "list_tables", map[string]any{"schema": "nope"})
				assert.Equal(t, "notFound", kind)
			})
			step("list_all_tables", func(t *testing.T) {
				text, _ := callOK(t, cs, "list_all_tables", nil)
				assert.Contains(t, text, schema+".customers (table)")
				assert.NotContains(t, text, "sqlite_")
				assert.NotContains(t, text, "pg_class")
			})
			step("list_schema_entries", func(t *testing.T) {
				text, _ := callOK(t, cs, "list_schema_entries", map[string]any{"schema": schema})
				assert.Contains(t, text, "orders_customer_idx (index) on orders")
				assert.Contains(t, text, "order_totals (view)")
			})
			step("describe_table", func(t *testing.T) {
				text, sc := callOK(t, cs, "describe_table", map[string]any{"table": "orders"})
				assert.Contains(t, text, "customer_id")
				assert.Contains(t, text, "NOT NULL")
				assert.Contains(t, text, "references "+schema+".customers (id)")
				assert.Contains(t, text, "orders_customer_idx")
				assert.Equal(t, []any{"id"}, sc["primaryKey"])
				assert.Equal(t, float64(3), sc["rowEstimate"])
				assert.Equal(t, "table", sc["type"])
				kind, _ := callErr(t, cs, "describe_table", map[string]any{"table": "nope"})
				assert.Equal(t, "notFound", kind)
			})
			step("get_table_ddl", func(t *testing.T) {
				text, _ := callOK(t, cs, "get_table_ddl", map[string]any{"table": "orders"})
				assert.Contains(t, text, "CREATE TABLE")
				assert.Contains(t, text, "orders_customer_idx")
				kind, _ := callErr(t, cs, "get_table_ddl", map[string]any{"table": "order_totals"})
				assert.Equal(t, "invalidParams", kind)
			})
			step("get_table_relations", func(t *testing.T) {
				_, sc := callOK(t, cs, "get_table_relations", map[string]any{"table": "orders"})
				parents := sc["parents"].([]any)
				require.Len(t, parents, 1)
				assert.Equal(t, "customers", parents[0].(map[string]any)["parentTable"])
				children := sc["children"].([]any)
				require.Len(t, children, 1)
				assert.Equal(t, "order_items", children[0].(map[string]any)["table"])
			})
			step("export_table", func(t *testing.T) {
				text, sc := callOK(t, cs, "export_table", map[string]any{"table": "products"})
				assert.Contains(t, text, "CREATE TABLE")
				assert.Contains(t, text, "'Notes on the Analytical Engine'")
				assert.Len(t, sc["inserts"], 3)
				text, sc = callOK(t, cs, "export_table", map[string]any{"table": "products", "limit": 1})
				assert.Contains(t, text, "showing 1 of 3 rows")
				assert.Equal(t, true, sc["truncated"])
			})
			step("get_view_definition", func(t *testing.T) {
				text, _ := callOK(t, cs, "get_view_definition", map[string]any{"view": "order_totals"})
				assert.Contains(t, text, "price_cents")
				kind, _ := callErr(t, cs, "get_view_definition", map[string]any{"view": "customers"})
				assert.Equal(t, "notFound", kind)
			})
			step("find_references_to", func(t *testing.T) {
				_, sc := callOK(t, cs, "find_references_to", map[string]any{"table": "customers"})
				var got []string
				for _, r := range sc["references"].([]any) {
					m := r.(map[string]any)
					got = append(got, m["kind"].(string)+":"+m["name"].(string))
				}
				assert.Contains(t, got, "foreignKey:orders")
				assert.Contains(t, got, "view:order_totals")
				_, sc = callOK(t, cs, "find_references_to", map[string]any{"table": "products", "column": "stock"})
				got = nil
				for _, r := range sc["references"].([]any) {
					got = append(got, r.(map[string]any)["name"].(string))
				}
				assert.Equal(t, []string{"check_stock_not_negative"}, got)
			})
			step("search_definitions", func(t *testing.T) {
				_, sc := callOK(t, cs, "search_definitions", map[string]any{"text": "PRICE_CENTS"})
				assert.Equal(t, float64(1), sc["total"])
			})
			step("find_columns", func(t *testing.T) {
				_, sc := callOK(t, cs, "find_columns", map[string]any{"pattern": "%_id"})
				var got []string
				for _, c := range sc["columns"].([]any) {
					m := c.(map[string]any)
					got = append(got, m["table"].(string)+"."+m["column"].(string))
				}
				assert.Contains(t, got, "orders.customer_id")
				assert.Contains(t, got, "order_items.product_id")
				assert.NotContains(t, got, "customers.id")
				_, sc = callOK(t, cs, "find_columns", map[string]any{"pattern": "PRICE"})
				assert.Equal(t, float64(1), sc["total"])
			})
			step("apply_ddl", func(t *testing.T) {
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"})
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE INDEX notes_body_idx ON notes (body)"})
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "ALTER TABLE notes ADD COLUMN author TEXT"})
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE VIEW note_authors AS SELECT DISTINCT author FROM notes"})
				text, _ := callOK(t, cs, "describe_table", map[string]any{"table": "notes"})
				assert.Contains(t, text, "author")
				kind, msg := callErr(t, cs, "apply_ddl", map[string]any{"sql": "DROP TABLE notes"})
				assert.Equal(t, "refused", kind)
				assert.Contains(t, msg, "execute_sql")
				kind, _ = callErr(t, cs, "apply_ddl", map[string]any{"sql": "INSERT INTO notes (id) VALUES (1)"})
				assert.Equal(t, "refused", kind)
				kind, _ = callErr(t, cs, "apply_ddl", map[string]any{"sql": "CREATE TABLE a (x int); CREATE TABLE b (x int)"})
				assert.Equal(t, "invalidParams", kind)
			})
			step("drop_table", func(t *testing.T) {
				kind, _ := callErr(t, cs, "drop_table", map[string]any{"table": "note_authors"})
				assert.Equal(t, "refused", kind, "a view is not dropped by drop_table")
				callOK(t, cs, "execute_sql", map[string]any{"sql": "DROP VIEW note_authors"})
				callOK(t, cs, "commit", nil)
				callOK(t, cs, "drop_table", map[string]any{"table": "notes"})
				kind, _ = callErr(t, cs, "describe_table", map[string]any{"table": "notes"})
				assert.Equal(t, "notFound", kind)
				kind, _ = callErr(t, cs, "drop_table", map[string]any{"table": "notes"})
				assert.Equal(t, "notFound", kind)
			})
			step("checks", func(t *testing.T) {
				_, sc := callOK(t, cs, "list_checks", nil)
				assert.Len(t, sc["checks"], 2)
				text, sc := callOK(t, cs, "run_checks", nil)
				assert.Contains(t, text, "2 checks: 1 passed, 1 failed")
				assert.Equal(t, float64(1), sc["failed"])
				_, sc = callOK(t, cs, "list_failing_checks", nil)
				assert.Equal(t, []any{schema + ".check_stock_not_negative"}, sc["failing"])
				text, sc = callOK(t, cs, "run_check", map[string]any{"check": "check_stock_not_negative"})
				assert.Contains(t, text, "FAIL")
				assert.Equal(t, float64(1), sc["violations"])
				text, _ = callOK(t, cs, "run_check", map[string]any{"check": "check_orders_have_items"})
				assert.Contains(t, text, "PASS")
				text, _ = callOK(t, cs, "describe_check_failure", map[string]any{"check": "check_stock_not_negative"})
				assert.Contains(t, text, "stock < 0")
				assert.Contains(t, text, "BK-003")
				kind, _ := callErr(t, cs, "run_check", map[string]any{"check": "customers"})
				assert.Equal(t, "invalidParams", kind)
			})
			if engine != db.Postgres {
				return
			}
			step("create_schema and drop_schema", func(t *testing.T) {
				callOK(t, cs, "create_schema", map[string]any{"schema": "scratch"})
				callOK(t, cs, "apply_ddl", map[string]any{"sql": "CREATE TABLE scratch.t (x int)"})
				_, sc := callOK(t, cs, "list_schemas", nil)
				assert.Contains(t, sc["schemas"], "scratch")
				kind, _ := callErr(t, cs, "drop_schema", map[string]any{"schema": "scratch"})
				assert.Equal(t, "sqlError", kind, "a non-empty schema needs cascade")
				callOK(t, cs, "drop_schema", map[string]any{"schema": "scratch", "cascade": true})
			})
			step("routines", func(t *testing.T) {
				callOK(t, cs, "create_or_replace_routine", map[string]any{"sql": "CREATE OR REPLACE FUNCTION total_stock() RETURNS bigint LANGUAGE sql AS $$ SELECT sum(stock) FROM products $$"})
				callOK(t, cs, "create_or_replace_routine", map[string]any{"sql": "CREATE FUNCTION total_stock(min_id int) RETURNS bigint LANGUAGE sql AS $$ SELECT sum(stock) FROM products WHERE id >= min_id $$"})
				text, sc := callOK(t, cs, "get_routine_source", map[string]any{"routine": "total_stock"})
				assert.Contains(t, text, "sum(stock)")
				assert.Len(t, sc["routines"], 2)
				_, sc = callOK(t, cs, "search_definitions", map[string]any{"text": "sum(stock)"})
				assert.Equal(t, float64(2), sc["total"])
				kind, msg := callErr(t, cs, "drop_routine", map[string]any{"routine": "total_stock"})
				assert.Equal(t, "invalidParams", kind)
				assert.Contains(t, msg, "min_id integer")
				callOK(t, cs, "drop_routine", map[string]any{"routine": "total_stock", "arguments": "min_id integer"})
				callOK(t, cs, "drop_routine", map[string]any{"routine": "total_stock"})
				kind, _ = callErr(t, cs, "get_routine_source", map[string]any{"routine": "total_stock"})
				assert.Equal(t, "notFound", kind)
				kind, _ = callErr(t, cs, "create_or_replace_routine", map[string]any{"sql": "CREATE TABLE x (y int)"})
				assert.Equal(t, "refused", kind)
			})
			step("set_comment", func(t *testing.T) {
				callOK(t, cs, "set_comment", map[string]any{"table": "customers", "comment": "People who buy"})
				callOK(t, cs, "set_comment", map[string]any{"table": "customers", "column": "email", "comment": "It's unique"})
				text, sc := callOK(t, cs, "describe_table", map[string]any{"table": "customers"})
				assert.Equal(t, "People who buy", sc["comment"])
				assert.Contains(t, text, "It's unique")
				ddl, _ := callOK(t, cs, "get_table_ddl", map[string]any{"table": "customers"})
				assert.Contains(t, ddl, "COMMENT ON COLUMN")
			})
		})
	}
}

// TestSafeToolsInReadOnlySession calls every read-only-safe tool in a
// read-only session: the database opened read-only must still serve them.
func TestSafeToolsInReadOnlySession(t *testing.T) {
	calls := map[string]map[string]any{
		"status":                 nil,
		"abort":                  nil,
		"refresh":                nil,
		"query":                  {"sql": "SELECT count(*) FROM customers"},
		"list_schemas":           nil,
		"list_tables":            nil,
		"list_all_tables":        nil,
		"list_schema_entries":    nil,
		"describe_table":         {"table": "orders"},
		"get_table_ddl":          {"table": "orders"},
		"get_table_relations":    {"table": "orders"},
		"export_table":           {"table": "customers"},
		"get_view_definition":    {"view": "order_totals"},
		"get_routine_source":     {"routine": "total"},
		"find_references_to":     {"table": "customers"},
		"search_definitions":     {"text": "price"},
		"find_columns":           {"pattern": "%id"},
		"list_checks":            nil,
		"run_checks":             nil,
		"run_check":              {"check": "check_stock_not_negative"},
		"list_failing_checks":    nil,
		"describe_check_failure": {"check": "check_stock_not_negative"},
	}
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			if engine == db.Postgres {
				rw := session(t, cfg, "ada", false)
				callOK(t, rw, "create_or_replace_routine", map[string]any{"sql": "CREATE FUNCTION total() RETURNS bigint LANGUAGE sql AS 'SELECT 1'"})
			}
			ro := session(t, cfg, "ada", true)
			names := toolNames(t, ro)
			for _, name := range names {
				args, ok := calls[name]
				require.True(t, ok, "no test call for safe tool %s", name)
				t.Run(name, func(t *testing.T) { callOK(t, ro, name, args) })
			}
			safe, err := tools.SafeToolNames(nil)
			require.NoError(t, err)
			for _, name := range safe {
				if (engine == db.Postgres || !slices.Contains(pgOnly, name)) && !slices.Contains(perUserOnly, name) {
					assert.Contains(t, names, name)
				}
			}
		})
	}
}

// TestExportRoundTrip runs export_table's output back into the database
// and gets the same rows: the literals are right for each engine.
func TestExportRoundTrip(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := session(t, dbtest.Config(t, engine), "ada", false)
			blob, boolean := "BLOB", "INTEGER"
			values := "(1, 'it''s \"quoted\"', X'00ff10', 1, 2.5, NULL), (2, '', X'', 0, -0.125, 'x')"
			if engine == db.Postgres {
				blob, boolean = "BYTEA", "BOOLEAN"
				values = `(1, 'it''s "quoted"', '\x00ff10', TRUE, 2.5, NULL), (2, '', '', FALSE, -0.125, 'x')`
			}
			callOK(t, cs, "execute_sql", map[string]any{"sql": "CREATE TABLE kinds (id INTEGER PRIMARY KEY, label TEXT, data " + blob + ", flag " + boolean + ", price REAL, note TEXT); INSERT INTO kinds VALUES " + values})
			const all = "SELECT * FROM kinds ORDER BY id"
			_, before := callOK(t, cs, "query", map[string]any{"sql": all})
			_, exp := callOK(t, cs, "export_table", map[string]any{"table": "kinds"})
			script := exp["ddl"].(string)
			for _, ins := range exp["inserts"].([]any) {
				script += "\n" + ins.(string)
			}
			callOK(t, cs, "execute_sql", map[string]any{"sql": "DROP TABLE kinds"})
			callOK(t, cs, "execute_sql", map[string]any{"sql": script})
			_, after := callOK(t, cs, "query", map[string]any{"sql": all})
			assert.Equal(t, before["rows"], after["rows"])
			assert.Len(t, after["rows"], 2)
		})
	}
}

// TestSQLiteValueCaps: long values are cut before they are copied, and
// SQLite refuses values over sqlite.MaxLength, so a few short statements
// cannot take the worker's memory; export_table leaves out a row whose
// INSERT is over the byte cap and says so.
func TestSQLiteValueCaps(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	rw := session(t, cfg, "ada", false)
	callOK(t, rw, "execute_sql", map[string]any{"sql": "CREATE TABLE big (id INTEGER PRIMARY KEY, v BLOB); INSERT INTO big VALUES (1, randomblob(8 << 20)), (2, X'0102'), (3, randomblob(600000))"})
	callOK(t, rw, "commit", nil)
	ro, cmd := startWorkerCmd(t, workerproto.Identity{User: "ro", SessionID: "s-ro", ReadOnly: true}, &cfg)
	t.Run("export_table", func(t *testing.T) {
		text, sc := callOK(t, ro, "export_table", map[string]any{"table": "big"})
		b, err := json.Marshal(sc["inserts"])
		require.NoError(t, err)
		assert.Less(t, len(b), 1<<10)
		assert.Equal(t, []any{`INSERT INTO "main"."big" ("id", "v") VALUES (2, X'0102');`}, sc["inserts"])
		assert.Equal(t, float64(3), sc["total"])
		assert.Equal(t, float64(2), sc["oversize"], "the 8 MiB row and the 600 kB one, 1.2 MB in hex")
		assert.Equal(t, true, sc["truncated"])
		assert.Contains(t, text, "-- showing 1 of 3 rows; 2 row(s) left out")
	})
	t.Run("values over the length limit", func(t *testing.T) {
		kind, msg := callErr(t, ro, "query", map[string]any{"sql": "SELECT zeroblob(100000000), zeroblob(100000000), zeroblob(100000000)"})
		assert.Equal(t, "sqlError", kind, msg)
		assert.Contains(t, msg, "too big")
	})
	t.Run("long values are cut", func(t *testing.T) {
		_, sc := callOK(t, ro, "query", map[string]any{"sql": "SELECT randomblob(15000000) AS a, zeroblob(15000000) AS b, printf('%.*c', 15000000, 'x') AS c"})
		row := sc["rows"].([]any)[0].([]any)
		assert.True(t, strings.HasSuffix(row[0].(string), "… [30000002 bytes]"), "got %.40q", row[0])
		assert.True(t, strings.HasPrefix(row[0].(string), `\x`), "got %.40q", row[0])
		assert.True(t, strings.HasSuffix(row[1].(string), "… [15000000 bytes]"), "got %.40q", row[1])
		assert.True(t, strings.HasSuffix(row[2].(string), "… [15000000 bytes]"), "got %.40q", row[2])
		assert.Less(t, len(row[0].(string)), 5000)
	})
	peak := peakKB(t, cmd.Process.Pid)
	t.Logf("worker peak RSS: %d KiB", peak)
	assert.Less(t, peak, 200<<10, "worker peak RSS in KiB")
}

// peakKB is a process's peak resident set size (VmHWM), in KiB.
func peakKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc status for the worker: %v", err)
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			return n
		}
	}
	t.Skip("no VmHWM in the worker's /proc status")
	return 0
}

// TestSchemaChangeBetweenQueries: the same query text before and after the
// table changes shape must work both times (no stale cached statement).
func TestSchemaChangeBetweenQueries(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cs := session(t, dbtest.Config(t, engine), "ada", false)
			const q = "SELECT * FROM customers ORDER BY id"
			_, before := callOK(t, cs, "query", map[string]any{"sql": q})
			callOK(t, cs, "execute_sql", map[string]any{"sql": "ALTER TABLE customers ADD COLUMN vip INTEGER"})
			_, after := callOK(t, cs, "query", map[string]any{"sql": q})
			assert.Len(t, after["columns"], len(before["columns"].([]any))+1)
		})
	}
}
