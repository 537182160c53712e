package db_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/postgres"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// backends returns the server backends of the test database by state, seen
// from a connection of the superuser: what pg_stat_activity says an idle
// session holds.
func backends(t *testing.T, dsn string) map[string]int {
	t.Helper()
	pool, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer pool.Close()
	rows, err := pool.Query(`SELECT state, count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' GROUP BY state`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		require.NoError(t, rows.Scan(&state, &n))
		got[state] = n
	}
	require.NoError(t, rows.Err())
	return got
}

// An idle session holds no transaction on the server, from its start on,
// and after the idle release no connection either; a read-write session
// with uncommitted writes keeps both, and its writes.
func TestIdleSessionHoldsNothingOnPostgres(t *testing.T) {
	ctx := context.Background()
	cfg := dbtest.Config(t, db.Postgres)
	eng := engineOf(t, db.Postgres)
	for _, readOnly := range []bool{true, false} {
		s, err := db.Open(ctx, eng, cfg, "ada", readOnly)
		require.NoError(t, err)
		assert.Zero(t, backends(t, cfg.DSN)["idle in transaction"], "read-only %t: after start", readOnly)
		st, err := s.Status(ctx)
		require.NoError(t, err)
		assert.False(t, st.Transaction, "no transaction before the first statement")
		assert.Equal(t, "mcpgate_test", st.Database[:12])

		require.NoError(t, dbtest.Run(ctx, s, "SELECT count(*) FROM customers"))
		assert.Equal(t, 1, backends(t, cfg.DSN)["idle in transaction"], "the first statement begins the transaction")
		st, err = s.Status(ctx)
		require.NoError(t, err)
		assert.True(t, st.Transaction)

		r := s.ReleaseIdle(ctx)
		assert.Equal(t, db.Released{Transaction: true, Connection: true}, r)
		// The client side closes at once; the server's backend leaves
		// pg_stat_activity when it has seen the close, a moment later.
		assert.Eventually(t, func() bool { return len(backends(t, cfg.DSN)) == 0 }, 15*time.Second, 20*time.Millisecond,
			"read-only %t: an idle session holds no connection", readOnly)
		st, err = s.Status(ctx)
		require.NoError(t, err)
		assert.False(t, st.Transaction)

		require.NoError(t, dbtest.Run(ctx, s, "SELECT count(*) FROM customers"), "the next statement connects again")
		require.NoError(t, s.Close())
		assert.Eventually(t, func() bool { return len(backends(t, cfg.DSN)) == 0 }, 15*time.Second, 20*time.Millisecond,
			"read-only %t: a closed session's backend is gone before the next session starts", readOnly)
	}
}

func TestIdleSessionKeepsUncommittedWrites(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s, cfg := openReadWrite(t, engine)
			require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO customers (id, name, email) VALUES (9001, 'Idle', 'idle@example.com')"))
			assert.Equal(t, db.Released{}, s.ReleaseIdle(ctx), "uncommitted writes keep their transaction")
			st, err := s.Status(ctx)
			require.NoError(t, err)
			assert.True(t, st.Transaction)
			assert.True(t, st.Uncommitted)
			if engine == db.Postgres {
				assert.Equal(t, 1, backends(t, cfg.DSN)["idle in transaction"])
			}
			require.NoError(t, s.Commit(ctx))
			assert.Equal(t, db.Released{Connection: true}, s.ReleaseIdle(ctx))
			var n int64
			require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
				return q.QueryRowContext(ctx, "SELECT count(*) FROM customers WHERE name = 'Idle'").Scan(&n)
			}))
			assert.EqualValues(t, 1, n, "the committed write is there")
		})
	}
}

// A temporary table is the user's and lives on the connection: an idle
// session that made one ends its transaction but keeps the connection.
func TestIdleSessionKeepsConnectionState(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openReadWrite(t, engine)
			require.NoError(t, dbtest.Run(ctx, s, "CREATE TEMP TABLE scratch (x int)"))
			require.NoError(t, s.Commit(ctx))
			require.NoError(t, dbtest.Run(ctx, s, "SELECT 1"))
			assert.Equal(t, db.Released{Transaction: true}, s.ReleaseIdle(ctx))
			require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO scratch VALUES (1)"), "the temporary table is still there")
		})
	}
}

// openReadWrite opens a read-write session of ada on a fresh database of
// engine, closed when the test ends.
func openReadWrite(t *testing.T, engine string) (*db.Session, db.Config) {
	t.Helper()
	cfg := dbtest.Config(t, engine)
	s, err := db.Open(context.Background(), engineOf(t, engine), cfg, "ada", false)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

func engineOf(t *testing.T, name string) db.Engine {
	t.Helper()
	if name == db.Postgres {
		return postgres.Engine{}
	}
	return sqlite.Engine{}
}

// A SQLite read transaction held open keeps a WAL checkpoint from passing
// its snapshot; an idle session ends it, so the checkpoint completes.
func TestIdleSessionLetsSQLiteCheckpoint(t *testing.T) {
	ctx := context.Background()
	cfg := dbtest.Config(t, db.SQLite)
	s, err := db.Open(ctx, sqlite.Engine{}, cfg, "ada", true)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		var n int
		return q.QueryRowContext(ctx, "SELECT count(*) FROM customers").Scan(&n)
	}))

	other, err := sql.Open("sqlite", cfg.DSN)
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Exec("INSERT INTO customers (id, name, email) VALUES (9002, 'Late', 'late@example.com')")
	require.NoError(t, err)
	checkpoint := func() (busy int) {
		var logFrames, done int
		require.NoError(t, other.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done))
		return busy
	}
	assert.Equal(t, 1, checkpoint(), "the session's snapshot holds the checkpoint back")
	assert.Equal(t, db.Released{Transaction: true, Connection: true}, s.ReleaseIdle(ctx))
	assert.Equal(t, 0, checkpoint(), "after the idle release the checkpoint completes")
}

// A session whose connection was given back, and whose server then refuses
// it a new one, fails that statement with the server's reason and goes on:
// the next statement, once the server takes connections again, runs.
func TestIdleSessionSurvivesARefusedReconnect(t *testing.T) {
	ctx := context.Background()
	s, _ := openReadWrite(t, db.Postgres)
	var name string
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "SELECT current_database()").Scan(&name)
	}))
	require.True(t, s.ReleaseIdle(ctx).Connection)
	super := dbtest.Postgres(t)
	dbtest.Exec(t, super, "ALTER DATABASE "+db.Quote(name)+" WITH ALLOW_CONNECTIONS false")
	err := dbtest.Run(ctx, s, "SELECT 1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not currently accepting connections")
	assert.False(t, s.Closed(), "the session goes on")

	dbtest.Exec(t, super, "ALTER DATABASE "+db.Quote(name)+" WITH ALLOW_CONNECTIONS true")
	require.NoError(t, dbtest.Run(ctx, s, "SELECT 1"))
}
