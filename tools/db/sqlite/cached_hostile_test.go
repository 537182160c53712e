package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachedTextsKeepTheirMode attacks the connection's caches (cached.go)
// as a client with a valid token: a text remembered as one statement, or
// kept compiled as a read, is judged in each mode as a fresh compile
// judges it, its key is the exact text, and a kept read whose rows are
// open neither runs twice at once nor lets a write through beside it.
func TestCachedTextsKeepTheirMode(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	ctx := t.Context()
	require.NoError(t, dbtest.Run(ctx, s, "CREATE TABLE c (x)"))
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO c VALUES (1), (2)"))
	require.NoError(t, s.Commit(ctx))
	count := func() int { return scalar(t, s, "SELECT count(*) FROM c") }

	// Run as a client's statement (so remembered as one statement), then
	// sent as a read: refused every time.
	for _, w := range []string{
		"DELETE FROM c WHERE x = 99",
		"INSERT INTO c SELECT 3 WHERE 0 RETURNING x",
		"UPDATE c SET x = x WHERE 0",
		"PRAGMA foreign_keys = ''",
		"PRAGMA foreign_keys = 1",
	} {
		for range 2 {
			require.NoError(t, dbtest.Run(ctx, s, w), w)
		}
		for range 3 {
			assert.Equal(t, db.KindReadOnly, kindOf(t, read(ctx, s, w)), w)
		}
	}

	// A read kept compiled; texts that begin with it, and hold more, are
	// refused in a read and as a client's statement alike.
	all := "SELECT x FROM c ORDER BY x"
	for range 3 {
		assert.Equal(t, [][]string{{"1"}, {"2"}}, readRows(t, s, all))
	}
	for _, tail := range []string{"\x00; DELETE FROM c", ";DELETE FROM c", " -- c\n;DELETE FROM c", "; /* ; */ DELETE FROM c"} {
		text := all + tail
		for range 2 {
			assert.Equal(t, db.KindRefused, kindOf(t, read(ctx, s, text)), "%q", text)
			assert.Equal(t, db.KindRefused, kindOf(t, dbtest.Run(ctx, s, text)), "%q", text)
		}
	}
	assert.Equal(t, 2, count(), "nothing was deleted")
	for _, same := range []string{all + " ", all + ";", all + " -- c", all + " /* c */ ;"} {
		for range 2 {
			assert.Equal(t, [][]string{{"1"}, {"2"}}, readRows(t, s, same), "%q", same)
		}
	}

	// The kept read's rows are open: the same text runs beside it (not
	// from the same statement), and a write beside it is refused.
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		outer, err := q.QueryContext(ctx, all)
		if err != nil {
			return err
		}
		defer outer.Close()
		require.True(t, outer.Next())
		var first int
		require.NoError(t, outer.Scan(&first))
		inner, err := q.QueryContext(ctx, all)
		require.NoError(t, err)
		var got []int
		for inner.Next() {
			var x int
			require.NoError(t, inner.Scan(&x))
			got = append(got, x)
		}
		require.NoError(t, inner.Err())
		require.NoError(t, inner.Close())
		assert.Equal(t, []int{1, 2}, got)
		_, err = q.ExecContext(ctx, "DELETE FROM c")
		assert.Equal(t, db.KindReadOnly, kindOf(t, err))
		got = []int{first}
		for outer.Next() {
			var x int
			require.NoError(t, outer.Scan(&x))
			got = append(got, x)
		}
		assert.Equal(t, []int{1, 2}, got)
		return outer.Err()
	}))
	assert.Equal(t, 2, count(), "nothing was deleted")

	// A read-only session's kept reads: its setting stays on, however
	// often the reading and the setting texts are sent.
	ro := open(t, cfg, true)
	for range 3 {
		assert.Equal(t, [][]string{{"1"}}, readRows(t, ro, "PRAGMA query_only"))
		assert.Equal(t, [][]string{{"1"}, {"2"}}, readRows(t, ro, all))
	}
	for _, set := range []string{"PRAGMA query_only = 0", "PRAGMA query_only = ''", "PRAGMA main.query_only(0)"} {
		for range 2 {
			assert.Equal(t, db.KindReadOnly, kindOf(t, dbtest.Run(ctx, ro, set)), set)
			assert.Equal(t, db.KindReadOnly, kindOf(t, read(ctx, ro, set)), set)
		}
	}
	assert.Equal(t, [][]string{{"1"}}, readRows(t, ro, "PRAGMA query_only"))
	assert.Equal(t, db.KindReadOnly, kindOf(t, dbtest.Run(ctx, ro, "DELETE FROM c")))
}

// TestCachedReadsFollowTheSchema: a read kept compiled reads what a fresh
// compile would after a TEMP view shadows its table, after another
// connection alters the table, and after it replaces the table by a view.
func TestCachedReadsFollowTheSchema(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	ctx := t.Context()
	require.NoError(t, dbtest.Run(ctx, s, "CREATE TABLE c (x)"))
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO c VALUES (1), (2)"))
	require.NoError(t, s.Commit(ctx))
	all := "SELECT * FROM c ORDER BY 1"
	keep := func(want [][]string, why string) {
		t.Helper()
		for range 3 {
			assert.Equal(t, want, readRows(t, s, all), why)
		}
	}
	keep([][]string{{"1"}, {"2"}}, "the table")

	require.NoError(t, dbtest.Run(ctx, s, "CREATE TEMP VIEW c AS SELECT 42 AS x"))
	keep([][]string{{"42"}}, "a TEMP view shadows the table")
	require.NoError(t, dbtest.Run(ctx, s, "DROP VIEW temp.c"))
	keep([][]string{{"1"}, {"2"}}, "the TEMP view is gone")

	require.NoError(t, s.Commit(ctx))
	other := open(t, cfg, false)
	require.NoError(t, dbtest.Run(ctx, other, "ALTER TABLE c ADD COLUMN y DEFAULT 'y'"))
	require.NoError(t, other.Commit(ctx))
	require.NoError(t, s.Commit(ctx))
	keep([][]string{{"1", "y"}, {"2", "y"}}, "another connection added a column")
	require.NoError(t, dbtest.Run(ctx, other, "DROP TABLE c"))
	require.NoError(t, dbtest.Run(ctx, other, "CREATE VIEW c AS SELECT 7 AS x"))
	require.NoError(t, other.Commit(ctx))
	require.NoError(t, s.Commit(ctx))
	keep([][]string{{"7"}}, "another connection made c a view")
}

// TestCachedReadAfterCancel: a read kept compiled whose run was cancelled
// while its rows were read runs whole afterwards.
func TestCachedReadAfterCancel(t *testing.T) {
	s := open(t, dbtest.Config(t, db.SQLite), false)
	ctx := t.Context()
	const n = 20000
	text := fmt.Sprintf("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < %d) SELECT x FROM r", n)
	run := func(ctx context.Context, stop func()) (int, error) {
		got := 0
		err := s.Read(ctx, func(ctx context.Context, q db.Querier) error {
			r, err := q.QueryContext(ctx, text)
			if err != nil {
				return err
			}
			defer r.Close()
			for r.Next() {
				if got++; got == 10 && stop != nil {
					stop()
				}
			}
			return r.Err()
		})
		return got, err
	}
	for range 2 {
		got, err := run(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, n, got)
	}
	cctx, cancel := context.WithCancel(ctx)
	run(cctx, cancel) //nolint:errcheck // how far it got before the cancel took is not the point
	cancel()
	for range 2 {
		got, err := run(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, n, got, "the kept read runs whole again")
	}
}

// TestCatalogReadsIgnoreShadows: the engine's catalog reads, the only
// statements allowed to read PRAGMA database_list, run none of a client's
// objects: a view named pragma_database_list (TEMP, over the eponymous
// table or over a view of main) that would show the file's path through
// status or list_schemas is not what they read. Failed before the catalog
// read the PRAGMA: status and Schemas showed the path.
func TestCatalogReadsIgnoreShadows(t *testing.T) {
	ctx := t.Context()
	leak := func(src string) string {
		return "SELECT seq, name, replace(file, '/', '|') AS file FROM " + src +
			" UNION ALL SELECT 99, replace(file, '/', '|'), '' FROM " + src + " WHERE name = 'main'"
	}
	for i, setup := range [][]string{
		{"CREATE TEMP VIEW pragma_database_list AS " + leak("main.pragma_database_list")},
		{"CREATE VIEW dl AS SELECT seq, name, file FROM pragma_database_list", "CREATE TEMP VIEW pragma_database_list AS " + leak("dl")},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			cfg := dbtest.Config(t, db.SQLite)
			s := open(t, cfg, false)
			for _, stmt := range setup {
				require.NoError(t, dbtest.Run(ctx, s, stmt), stmt)
			}
			st, err := s.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, filepath.Base(cfg.DSN), st.Database)
			var schemas []string
			require.NoError(t, s.Do(ctx, func(ctx context.Context, q db.Querier) error {
				var err error
				schemas, err = sqlite.Engine{}.Schemas(ctx, q)
				return err
			}))
			assert.Equal(t, []string{"main"}, schemas)
			// The catalog's texts, remembered by the connection, stay
			// refused to the client, and so does its view.
			for _, text := range []string{"PRAGMA database_list", "SELECT file FROM pragma_database_list WHERE name = 'main'", "SELECT file FROM pragma_database_list"} {
				for range 2 {
					assert.Equal(t, db.KindRefused, kindOf(t, read(ctx, s, text)), text)
					assert.Equal(t, db.KindRefused, kindOf(t, dbtest.Run(ctx, s, text)), text)
				}
			}
		})
	}
}

// TestKeptReadsOpenTogether: more reads than the connection keeps compiled
// (maxReads, 16), each run before so that it is kept, are open at once in
// one call: none is closed or run again under another's rows, and each
// answers its own text.
func TestKeptReadsOpenTogether(t *testing.T) {
	s := open(t, dbtest.Config(t, db.SQLite), false)
	ctx := t.Context()
	require.NoError(t, dbtest.Run(ctx, s, "CREATE TABLE c (x)"))
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO c VALUES (1), (2)"))
	const n = 20
	text := func(i int) string { return fmt.Sprintf("SELECT x + %d FROM c ORDER BY x", i) }
	for range 2 {
		for i := range n {
			require.Equal(t, [][]string{{fmt.Sprint(1 + i)}, {fmt.Sprint(2 + i)}}, readRows(t, s, text(i)))
		}
	}
	require.NoError(t, s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		var rs []*sql.Rows
		defer func() {
			for _, r := range rs {
				r.Close()
			}
		}()
		for i := range n {
			r, err := q.QueryContext(ctx, text(i))
			require.NoError(t, err)
			rs = append(rs, r)
			require.True(t, r.Next(), i)
			var v int
			require.NoError(t, r.Scan(&v))
			assert.Equal(t, 1+i, v, i)
		}
		for i, r := range rs {
			require.True(t, r.Next(), i)
			var v int
			require.NoError(t, r.Scan(&v))
			assert.Equal(t, 2+i, v, i)
			assert.False(t, r.Next(), i)
			require.NoError(t, r.Err())
		}
		return nil
	}))
	for i := range n {
		assert.Equal(t, [][]string{{fmt.Sprint(1 + i)}, {fmt.Sprint(2 + i)}}, readRows(t, s, text(i)))
	}
}
