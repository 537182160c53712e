package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// TestIdleReleaseRunsNoPlantedFunction (hostile, write scope): a function a
// user creates in a schema on their search_path, with the exact argument
// types of a call in the session's own statement, wins over pg_catalog's
// (whose concat_ws is VARIADIC "any"). The session's connection-state read,
// which runs at every connect and idle release, outside the tool call and
// its guards, must call no function of the user's.
func TestIdleReleaseRunsNoPlantedFunction(t *testing.T) {
	ctx := context.Background()
	cfg := dbtest.Config(t, db.Postgres)
	dsn := cfg.DSN
	dbtest.Exec(t, dsn, "CREATE TABLE planted_calls (n int)")
	dbtest.Exec(t, dsn, `CREATE FUNCTION public.concat_ws(text, bigint, text, bigint, bigint, bigint) RETURNS text
		LANGUAGE sql AS $$ INSERT INTO public.planted_calls VALUES (1) RETURNING 'planted' $$`)
	s, err := db.Open(ctx, engineOf(t, db.Postgres), cfg, "ada", false)
	require.NoError(t, err)
	defer s.Close()
	s.ReleaseIdle(ctx)
	require.NoError(t, dbtest.Run(ctx, s, "SELECT 1"))
	require.NoError(t, s.Commit(ctx))
	s.ReleaseIdle(ctx)
	assert.Zero(t, dbtest.QueryInt(t, "pgx", cfg.DSN, "SELECT count(*) FROM planted_calls"), "the user's concat_ws was called by the session's own statement")
}
