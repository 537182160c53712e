package db_test

import (
	"context"
	"database/sql"
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

// TestHeldSessionIsNotReleased: a session told to hold its transaction
// while idle (a transaction handle's) keeps it even when an idle release
// armed before the hold runs late: the handle's snapshot stays the one its
// first statement took.
func TestHeldSessionIsNotReleased(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openReadWrite(t, engine)
			s.HoldWhileIdle(true)
			require.NoError(t, dbtest.Run(ctx, s, "SELECT count(*) FROM customers"))
			assert.Equal(t, db.Released{}, s.ReleaseIdle(ctx))
			st, err := s.Status(ctx)
			require.NoError(t, err)
			assert.True(t, st.Transaction, "the held transaction is still open")
		})
	}
}

// TestIdleReleaseNeverLosesWritesSilently (hostile, write scope): a session
// with uncommitted writes whose connection died while idle (the server
// ended it: an operator, a restart, a setting of the user's) cannot keep
// them; the idle release gives the dead connection up, and the next
// statement and commit must say the writes are gone, not run in, and
// commit, a fresh transaction as though nothing happened.
func TestIdleReleaseNeverLosesWritesSilently(t *testing.T) {
	ctx := context.Background()
	s, cfg := openReadWrite(t, db.Postgres)
	var pid int
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO customers (id, name, email) VALUES (9101, 'Lost', 'lost@example.com')"))
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid)
	}))
	super, err := sql.Open("pgx", cfg.DSN)
	require.NoError(t, err)
	defer super.Close()
	_, err = super.Exec("SELECT pg_terminate_backend($1, 5000)", pid)
	require.NoError(t, err)

	s.ReleaseIdle(ctx)
	err = dbtest.Run(ctx, s, "INSERT INTO customers (id, name, email) VALUES (9102, 'After', 'after@example.com')")
	require.Error(t, err, "the statement after the loss must not run as though the transaction went on")
	assert.Contains(t, err.Error(), "uncommitted changes are lost")
	assert.False(t, s.Closed(), "the session goes on")
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO customers (id, name, email) VALUES (9102, 'After', 'after@example.com')"), "told once")
	require.NoError(t, s.Commit(ctx))
	assert.Zero(t, dbtest.QueryInt(t, "pgx", cfg.DSN, "SELECT count(*) FROM customers WHERE id = 9101"))

	// Commit right after the loss says so too.
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO customers (id, name, email) VALUES (9103, 'Lost2', 'lost2@example.com')"))
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid)
	}))
	_, err = super.Exec("SELECT pg_terminate_backend($1, 5000)", pid)
	require.NoError(t, err)
	s.ReleaseIdle(ctx)
	err = s.Commit(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "uncommitted changes are lost")
}
