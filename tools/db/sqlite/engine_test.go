package sqlite_test

import (
	"context"
	"database/sql"
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

// kindOf returns the kind of a session error, or "" for nil.
func kindOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var de *db.Error
	require.True(t, errors.As(err, &de), "got %T: %v", err, err)
	return de.Kind
}

// read runs stmt through Session.Read, as the query tool does.
func read(ctx context.Context, s *db.Session, stmt string) error {
	return s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		rows, err := q.QueryContext(ctx, stmt)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		rows.Close()
		return rows.Err()
	})
}

// scalar reads one integer in its own call.
func scalar(t *testing.T, s *db.Session, query string) int {
	t.Helper()
	var n int
	require.NoError(t, s.Do(t.Context(), func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, query).Scan(&n)
	}))
	return n
}

// TestGuardReadWrite bypasses the tools' statement splitter: on a
// read-write session's connection the authorizer itself refuses ATTACH,
// DETACH, VACUUM INTO and transaction control hidden in a script, and a read
// (Session.Read, as query) writes nothing, whatever the text holds.
func TestGuardReadWrite(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	dir := t.TempDir()
	items := scalar(t, s, "SELECT count(*) FROM order_items")
	require.Positive(t, items)
	t.Run("client statements", func(t *testing.T) {
		tests := []struct{ name, sql, want string }{
			{"attach", "ATTACH DATABASE '" + filepath.Join(dir, "a.db") + "' AS a", db.KindRefused},
			{"attach in a script", "CREATE TABLE t1 (x); ATTACH '" + filepath.Join(dir, "b.db") + "' AS b; CREATE TABLE b.t (x)", db.KindRefused},
			{"detach", "DETACH DATABASE main", db.KindRefused},
			{"commit in a script", "SELECT 1; COMMIT; DELETE FROM order_items", db.KindRefused},
			{"begin", "BEGIN", db.KindRefused},
			{"end", "END", db.KindRefused},
			{"savepoint", "SAVEPOINT mine", db.KindRefused},
			{"the session's savepoint, in a script", "SELECT 1; RELEASE SAVEPOINT mcpgate_call", db.KindRefused},
			{"rollback with a comment", "ROLLBACK -- x", db.KindRefused},
			{"a write", "DELETE FROM order_items WHERE 0", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, kindOf(t, dbtest.Run(t.Context(), s, tt.sql)))
			})
		}
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, left, "no file was attached or written")
	})
	t.Run("reads", func(t *testing.T) {
		tests := []struct{ name, sql, want string }{
			{"split mismatch", "SELECT 1 AS x$a$ WHERE 0; COMMIT; DELETE FROM order_items; -- $a$", db.KindRefused},
			{"delete", "DELETE FROM order_items", db.KindReadOnly},
			{"insert returning", "INSERT INTO customers (id, name, email) VALUES (9, 'x', 'x@example.org') RETURNING id", db.KindReadOnly},
			{"cte delete", "WITH x AS (SELECT 1) DELETE FROM order_items", db.KindReadOnly},
			{"ddl", "CREATE TABLE t2 (x)", db.KindReadOnly},
			{"temp table", "CREATE TEMP TABLE t3 (x)", db.KindReadOnly},
			{"setting that outlives the savepoint", "PRAGMA foreign_keys = 0", db.KindReadOnly},
			{"the session's own commit", "COMMIT", db.KindRefused},
			{"attach", "ATTACH DATABASE '" + filepath.Join(dir, "d.db") + "' AS d", db.KindRefused},
			{"select", "SELECT count(*) FROM order_items", ""},
			{"reading pragma", "SELECT count(*) FROM pragma_table_info('customers')", ""},
			{"pragma read", "PRAGMA foreign_keys", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, kindOf(t, read(t.Context(), s, tt.sql)))
			})
		}
	})
	assert.Equal(t, 1, scalar(t, s, "PRAGMA foreign_keys"))
	assert.Equal(t, items, scalar(t, open(t, cfg, true), "SELECT count(*) FROM order_items"), "no delete was committed")
	// The session's own transaction control still works.
	require.NoError(t, dbtest.Run(t.Context(), s, "DELETE FROM order_items"))
	require.NoError(t, s.Commit(t.Context()))
	assert.Equal(t, 0, scalar(t, open(t, cfg, true), "SELECT count(*) FROM order_items"))
	require.NoError(t, dbtest.Run(t.Context(), s, "CREATE TABLE kept (x)"))
	require.NoError(t, s.Abort(t.Context()))
	require.NoError(t, s.Refresh(t.Context()))
}

// TestGuardEveryConnection: a connection of the engine's pool carries the
// authorizer before any session uses it, read-write too, and outside a
// transaction, where VACUUM INTO would otherwise write a copy anywhere.
func TestGuardEveryConnection(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	pool, err := sqlite.Engine{}.Open(cfg, false)
	require.NoError(t, err)
	defer pool.Close()
	dir := t.TempDir()
	for _, stmt := range []string{
		"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'",
		"ATTACH DATABASE '" + filepath.Join(dir, "a.db") + "' AS a",
		"SELECT 1; COMMIT",
	} {
		_, err := pool.ExecContext(t.Context(), stmt)
		assert.Equal(t, db.KindRefused, kindOf(t, err), stmt)
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "no file was written")
	var n int
	require.NoError(t, pool.QueryRowContext(t.Context(), "SELECT count(*) FROM customers").Scan(&n))
	assert.Equal(t, 3, n)
}

// TestOneStatementPerCall bypasses the tools' splitter: a text that SQLite
// reads as several statements is refused before any of it runs, in a
// client's statement and in a read alike, however it is sent.
func TestOneStatementPerCall(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	ctx := t.Context()
	count := func() (n int) {
		require.NoError(t, s.Do(ctx, func(ctx context.Context, q db.Querier) error {
			return q.QueryRowContext(ctx, "SELECT count(*) FROM order_items").Scan(&n)
		}))
		return n
	}
	items := count()
	require.NotZero(t, items)
	scripts := []string{
		"SELECT 1; DELETE FROM order_items",
		"DELETE FROM order_items WHERE 0; DELETE FROM order_items",
		`CREATE VIEW v1 AS SELECT E'\' FROM (SELECT 1 AS E); DELETE FROM order_items; --'`,
		"SELECT $a('); DELETE FROM order_items; --')",
		"SELECT 1; DELETE FROM no_such_table",
		"; SELECT 1; DELETE FROM order_items",
	}
	runs := map[string]func(ctx context.Context, q db.Querier, text string) error{
		"exec": func(ctx context.Context, q db.Querier, text string) error {
			_, err := q.ExecContext(ctx, text)
			return err
		},
		"query": func(ctx context.Context, q db.Querier, text string) error {
			r, err := q.QueryContext(ctx, text)
			if err == nil {
				r.Close()
			}
			return err
		},
		"prepare": func(ctx context.Context, q db.Querier, text string) error {
			p, err := q.(interface {
				PrepareContext(context.Context, string) (*sql.Stmt, error)
			}).PrepareContext(ctx, text)
			if err == nil {
				_, err = p.ExecContext(ctx)
				p.Close()
			}
			return err
		},
	}
	for name, run := range runs {
		for _, script := range scripts {
			t.Run(name+"/"+script, func(t *testing.T) {
				err := s.Do(ctx, func(ctx context.Context, q db.Querier) error { return run(ctx, q, script) })
				var de *db.Error
				require.True(t, errors.As(err, &de), "got %v", err)
				assert.Equal(t, db.KindRefused, de.Kind, de.Message)
				assert.Contains(t, de.Message, "more than one statement")
			})
		}
	}
	assert.Equal(t, items, count(), "nothing was deleted")
	// The rest of a refused text is not compiled either: SQLite applies a
	// flag PRAGMA as it compiles it.
	err := dbtest.Run(ctx, s, "SELECT 1; PRAGMA reverse_unordered_selects = 1")
	require.Error(t, err)
	var on int
	require.NoError(t, s.Do(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "PRAGMA reverse_unordered_selects").Scan(&on)
	}))
	assert.Zero(t, on, "the refused text's PRAGMA was not applied")
	for _, one := range []string{"SELECT 1;", "SELECT 1; -- a comment", "SELECT 1 /* c */ ;;", "CREATE TRIGGER tr AFTER INSERT ON customers BEGIN SELECT 1; SELECT 2; END"} {
		require.NoError(t, dbtest.Run(ctx, s, one), one)
	}
}

// TestSQLitePragmaGuard: an empty PRAGMA value is a value, and the file's
// path is not shown.
func TestSQLitePragmaGuard(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	ro := open(t, cfg, true)
	ctx := t.Context()
	for _, sql := range []string{"PRAGMA query_only = ''", "PRAGMA main.query_only = ''", "PRAGMA query_only('')", "PRAGMA cache_size = ''", "EXPLAIN PRAGMA query_only = ''"} {
		err := dbtest.Run(ctx, ro, sql)
		var de *db.Error
		require.True(t, errors.As(err, &de), "%s: got %v", sql, err)
		assert.Equal(t, db.KindReadOnly, de.Kind, de.Message)
	}
	var on int
	require.NoError(t, ro.Do(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, "PRAGMA query_only").Scan(&on)
	}))
	assert.Equal(t, 1, on, "query_only is still on")
	for _, sess := range []*db.Session{ro, open(t, cfg, false)} {
		for _, sql := range []string{"PRAGMA database_list", "SELECT file FROM pragma_database_list"} {
			err := dbtest.Run(ctx, sess, sql)
			var de *db.Error
			require.True(t, errors.As(err, &de), "%s: got %v", sql, err)
			assert.Equal(t, db.KindRefused, de.Kind, de.Message)
		}
		st, err := sess.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, filepath.Base(cfg.DSN), st.Database)
	}
}
