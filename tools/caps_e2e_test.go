package tools_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOversizedFields, at the worker: a 70 MB comment set by one user must
// not go whole into another user's describe_table answer (a 70 MB line
// would end the session at the gateway), nor a bad cast of a 40 MB value
// give an 80 MB error. Every string of a result and every error message is
// cut, and the result says which.
func TestOversizedFields(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			long := strings.Repeat("c", 5<<20) // SQLite keeps DDL under its 16 MiB value limit
			if engine == db.Postgres {
				dbtest.Exec(t, cfg.DSN, "DO $$ BEGIN EXECUTE format('COMMENT ON COLUMN customers.name IS %L', repeat('c', 70000000)); END $$")
				long = strings.Repeat("c", 70000000)
			}
			ddl := "CREATE TABLE long_default (a text DEFAULT '" + long[:5<<20] + "')"
			if engine == db.Postgres {
				dbtest.Exec(t, cfg.DSN, ddl)
			} else {
				pool, err := sql.Open("sqlite", cfg.DSN)
				require.NoError(t, err)
				_, err = pool.Exec(ddl)
				require.NoError(t, err)
				cols := strings.TrimSuffix(strings.Repeat("CASE WHEN n = 2 THEN zeroblob(16000000) END, ", 10), ", ")
				_, err = pool.Exec("CREATE VIEW check_big AS WITH t(n) AS (VALUES (1), (2)) SELECT n, " + cols + " FROM t")
				require.NoError(t, errors.Join(err, pool.Close()))
			}
			cs := session(t, cfg, "bob", true)

			if engine == db.Postgres {
				text, sc := callOK(t, cs, "describe_table", map[string]any{"table": "customers"})
				assert.Less(t, len(text), 2*tools.DefaultMaxResultBytes)
				col := sc["columns"].([]any)[1].(map[string]any)
				assert.Equal(t, "name", col["name"])
				assert.True(t, strings.HasSuffix(col["comment"].(string), "… [cut at 65536 of 70000000 characters]"), "the cut says the true length")
				assert.Less(t, len(col["comment"].(string)), tools.MaxFieldBytes+64)

				kind, msg := callErr(t, cs, "query", map[string]any{"sql": "SELECT CAST(repeat('x', 40000000) AS int)"})
				assert.Equal(t, "sqlError", kind)
				assert.Less(t, len(msg), tools.MaxErrorBytes+64, "a 40 MB value in an error message")
				assert.Contains(t, msg, "invalid input syntax")
			}
			_, sc := callOK(t, cs, "get_table_ddl", map[string]any{"table": "long_default"})
			if engine == db.Postgres {
				// The default is cut in the server, before the field's cut.
				assert.True(t, strings.Contains(sc["ddl"].(string), "… [cut at 65536 of "), "the default cut in the server")
				assert.Nil(t, sc[tools.TruncatedFields])
			} else {
				assert.Equal(t, []any{"ddl"}, sc[tools.TruncatedFields])
			}
			assert.Less(t, len(sc["ddl"].(string)), tools.MaxFieldBytes+64)

			if engine == db.SQLite {
				// The row bound through the tools: a row over the row
				// bound cuts query's result and is no pass for a check.
				text, sc := callOK(t, cs, "query", map[string]any{"sql": "SELECT * FROM check_big"})
				assert.Equal(t, true, sc["rowTooLarge"])
				assert.Contains(t, text, "over the 128 MiB row bound")
				_, msg := callErr(t, cs, "run_check", map[string]any{"check": "check_big"})
				assert.Contains(t, msg, "over the 128 MiB row bound", "a check whose rows cannot be read does not pass")
			}
			_, sc = callOK(t, cs, "status", nil)
			assert.Equal(t, "bob", sc["user"], "the session goes on")
		})
	}
}
