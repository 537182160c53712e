package tools_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusTrueToTheDatabase: status's database name is read once per
// session and its statements are compiled once (the SQLite engine caches
// them), but its uncommitted-changes flag is read from the database on
// every call: after a write, a failed statement, a COMMIT typed in
// execute_sql (refused), commit, abort, a DDL, and a handle's end.
func TestStatusTrueToTheDatabase(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			cs := session(t, cfg, "ada", false)
			dirty := func(why string) bool {
				t.Helper()
				_, sc := callOK(t, cs, "status", nil)
				require.NotEmpty(t, sc["database"], why)
				return sc["uncommittedChanges"].(bool)
			}
			assert.False(t, dirty("fresh"))
			assert.False(t, dirty("fresh, again"))
			callOK(t, cs, "execute_sql", insert(931))
			assert.True(t, dirty("after a write"))
			assert.True(t, dirty("after a write, again"))
			kind, _ := callErr(t, cs, "execute_sql", map[string]any{"sql": "INSERT INTO no_such_table VALUES (1)"})
			assert.NotEmpty(t, kind)
			assert.True(t, dirty("a failed statement undoes only itself"))
			kind, _ = callErr(t, cs, "execute_sql", map[string]any{"sql": "COMMIT"})
			assert.NotEmpty(t, kind)
			assert.True(t, dirty("a COMMIT typed in execute_sql is refused"))
			callOK(t, cs, "commit", nil)
			assert.False(t, dirty("after commit"))
			callOK(t, cs, "execute_sql", insert(932))
			assert.True(t, dirty("after a second write"))
			callOK(t, cs, "abort", nil)
			assert.False(t, dirty("after abort"))
			callOK(t, cs, "execute_sql", map[string]any{"sql": "CREATE TABLE status_t (x int)"})
			assert.True(t, dirty("after a DDL"))
			callOK(t, cs, "abort", nil)
			assert.False(t, dirty("after abort of the DDL"))

			pu := perUserWorker(t, cfg, "u-0123", false, tools.TransactionOptions{})
			h := begin(t, pu)
			callOK(t, pu, "execute_sql", in(h, insert(933)))
			_, sc := callOK(t, pu, "status", map[string]any{"transaction": h})
			assert.Equal(t, true, sc["uncommittedChanges"])
			callOK(t, pu, "abort", map[string]any{"transaction": h})
			h = begin(t, pu)
			_, sc = callOK(t, pu, "status", map[string]any{"transaction": h})
			assert.Equal(t, false, sc["uncommittedChanges"], "a new handle's transaction has no changes")
		})
	}
}
