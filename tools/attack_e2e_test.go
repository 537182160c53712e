package tools_test

import (
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
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
