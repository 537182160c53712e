package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, cfg db.Config, readOnly bool) *db.Session {
	t.Helper()
	s, err := db.Open(t.Context(), sqlite.Engine{}, cfg, "ada", readOnly)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReadOnlyByTheDatabase bypasses the tools' own statement checks: the
// database connection of a read-only session refuses every write itself.
func TestReadOnlyByTheDatabase(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, true)
	other := filepath.Join(t.TempDir(), "other.db")
	tests := []struct{ name, sql string }{
		{"insert", "INSERT INTO customers (id, name, email) VALUES (9, 'x', 'x@example.org')"},
		{"insert returning", "INSERT INTO customers (id, name, email) VALUES (9, 'x', 'x@example.org') RETURNING id"},
		{"cte insert", "WITH x AS (SELECT 9 AS id) INSERT INTO customers (id, name, email) SELECT id, 'x', 'x@example.org' FROM x"},
		{"ddl", "CREATE TABLE t (x)"},
		{"temp table", "CREATE TEMP TABLE t (x)"},
		{"attach", "ATTACH DATABASE '" + other + "' AS other"},
		{"pragma setting", "PRAGMA user_version = 3"},
		{"query_only off", "PRAGMA query_only = 0"},
		{"query_only off, call form", "PRAGMA query_only(0)"},
		{"journal mode", "PRAGMA journal_mode = DELETE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dbtest.Run(t.Context(), s, tt.sql)
			require.Error(t, err)
			var de *db.Error
			require.True(t, errors.As(err, &de), "got %T", err)
			assert.Equal(t, db.KindReadOnly, de.Kind, de.Message)
		})
	}
	assert.NoFileExists(t, other, "ATTACH must not create a file")
	require.NoError(t, dbtest.Run(t.Context(), s, "SELECT count(*) FROM pragma_table_info('customers')"), "reading pragmas still works")
	rw := open(t, cfg, false)
	var n, v int
	require.NoError(t, rw.Do(t.Context(), func(ctx context.Context, q db.Querier) error {
		if err := q.QueryRowContext(ctx, "SELECT count(*) FROM customers").Scan(&n); err != nil {
			return err
		}
		return q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	}))
	assert.Equal(t, 3, n)
	assert.Equal(t, 0, v)
}

func TestDirtyTracksDDL(t *testing.T) {
	s := open(t, dbtest.Config(t, db.SQLite), false)
	require.NoError(t, dbtest.Run(t.Context(), s, "CREATE TABLE scratch (x)"))
	st, err := s.Status(t.Context())
	require.NoError(t, err)
	assert.True(t, st.Uncommitted, "DDL alone is an uncommitted change")
	err = s.Refresh(t.Context())
	var de *db.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, db.KindConflict, de.Kind)
	require.NoError(t, s.Abort(t.Context()))
	require.NoError(t, s.Refresh(t.Context()))
}

func TestEnsure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "x.db")
	var wg sync.WaitGroup
	created := make([]bool, 8)
	errs := make([]error, 8)
	for i := range created {
		wg.Go(func() { created[i], errs[i] = sqlite.Ensure(context.Background(), path) })
	}
	wg.Wait()
	n := 0
	for i := range created {
		require.NoError(t, errs[i])
		if created[i] {
			n++
		}
	}
	assert.Equal(t, 1, n, "exactly one caller creates the database")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary files left behind")
	created[0], err = sqlite.Ensure(context.Background(), path)
	require.NoError(t, err)
	assert.False(t, created[0])
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, info.Size())
	s := open(t, db.Config{Driver: db.SQLite, DSN: path}, true)
	var mode string
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	}))
	assert.Equal(t, "wal", mode)
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "NULL"},
		{int64(7), "7"},
		{false, "0"},
		{"a'b", "'a''b'"},
		{[]byte{1, 255}, "X'01ff'"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, sqlite.Engine{}.Literal(tt.v))
	}
}
