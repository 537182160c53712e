package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachesKeepTheGuard: the connection's caches (cached.go) never let a
// text skip a check it would fail if compiled afresh.
func TestCachesKeepTheGuard(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	ctx := t.Context()
	items := scalar(t, s, "SELECT count(*) FROM order_items")

	// A text whose first statement does not compile is not remembered as
	// one statement: once it compiles, the rest counts.
	script := "INSERT INTO later VALUES (1); DELETE FROM order_items"
	for range 2 {
		assert.Equal(t, db.KindSQLError, kindOf(t, dbtest.Run(ctx, s, script)))
	}
	require.NoError(t, dbtest.Run(ctx, s, "CREATE TABLE later (x)"))
	assert.Equal(t, db.KindRefused, kindOf(t, dbtest.Run(ctx, s, script)), "now SQLite reads two statements")
	assert.Equal(t, items, scalar(t, s, "SELECT count(*) FROM order_items"), "nothing was deleted")

	// A text remembered as one statement keeps its PRAGMA setting: run as
	// a client's statement (allowed), then in a read (refused).
	set := "PRAGMA reverse_unordered_selects = ''" // the authorizer sees no value: the text decides
	for range 2 {
		require.NoError(t, dbtest.Run(ctx, s, set))
	}
	for range 2 {
		assert.Equal(t, db.KindReadOnly, kindOf(t, read(ctx, s, set)))
	}

	// The session's own statements, compiled once as its control, are
	// refused in a read (outside one, the exact text is the session's own:
	// the tools refuse it by keyword before it reaches the engine).
	for _, own := range []string{"COMMIT", "ROLLBACK", "SAVEPOINT mcpgate_call", "RELEASE SAVEPOINT mcpgate_call", "BEGIN DEFERRED"} {
		for range 2 {
			assert.Equal(t, db.KindRefused, kindOf(t, read(ctx, s, own)), own)
		}
	}

	// The engine's cached read runs again and again, and also as a
	// client's read, which may be left open while another runs.
	require.NoError(t, s.Commit(ctx))
	for range 3 {
		st, err := s.Status(ctx)
		require.NoError(t, err)
		assert.False(t, st.Uncommitted)
	}
	mark := "SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version)"
	require.NoError(t, s.Do(ctx, func(ctx context.Context, q db.Querier) error {
		outer, err := q.QueryContext(ctx, mark)
		if err != nil {
			return err
		}
		defer outer.Close()
		require.True(t, outer.Next())
		var c1, v1, c2, v2 int64
		require.NoError(t, outer.Scan(&c1, &v1))
		require.NoError(t, q.QueryRowContext(ctx, mark).Scan(&c2, &v2))
		assert.Equal(t, [2]int64{c1, v1}, [2]int64{c2, v2})
		assert.False(t, outer.Next())
		return outer.Err()
	}))
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO later VALUES (2)"))
	st, err := s.Status(ctx)
	require.NoError(t, err)
	assert.True(t, st.Uncommitted)
	require.NoError(t, s.Abort(ctx))
	st, err = s.Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Uncommitted)
}

// readRows reads query's rows as text through Session.Read, as the query
// tool does.
func readRows(t *testing.T, s *db.Session, query string) [][]string {
	t.Helper()
	var out [][]string
	require.NoError(t, s.Read(t.Context(), func(ctx context.Context, q db.Querier) error {
		r, err := q.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		rows, err := db.Collect(r, 100, db.DefaultMaxCell)
		if err != nil {
			return err
		}
		out = nil
		for i := range rows.Rows {
			line := []string{}
			for j := range rows.Rows[i] {
				line = append(line, fmt.Sprint(rows.Rows[i][j]))
			}
			out = append(out, line)
		}
		return nil
	}))
	return out
}

// TestCachedReadsAnswerAfresh: a client's read kept compiled (cached.go)
// answers as a fresh compile would after a data change, a schema change, a
// PRAGMA setting and a commit, and more distinct reads than the cache
// keeps still answer.
func TestCachedReadsAnswerAfresh(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	s := open(t, cfg, false)
	ctx := t.Context()
	require.NoError(t, dbtest.Run(ctx, s, "CREATE TABLE c (x)"))
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO c VALUES (1), (2)"))
	all := "SELECT * FROM c ORDER BY x"
	for range 3 {
		assert.Equal(t, [][]string{{"1"}, {"2"}}, readRows(t, s, all))
	}
	require.NoError(t, dbtest.Run(ctx, s, "INSERT INTO c VALUES (3)"))
	assert.Equal(t, [][]string{{"1"}, {"2"}, {"3"}}, readRows(t, s, all), "after a write")
	require.NoError(t, dbtest.Run(ctx, s, "ALTER TABLE c ADD COLUMN y DEFAULT 'y'"))
	assert.Equal(t, [][]string{{"1", "y"}, {"2", "y"}, {"3", "y"}}, readRows(t, s, all), "after a schema change")
	require.NoError(t, s.Commit(ctx))
	assert.Equal(t, [][]string{{"1", "y"}, {"2", "y"}, {"3", "y"}}, readRows(t, s, all), "after a commit")

	like := "SELECT 'a' LIKE 'A'"
	for range 3 {
		assert.Equal(t, [][]string{{"1"}}, readRows(t, s, like))
	}
	require.NoError(t, dbtest.Run(ctx, s, "PRAGMA case_sensitive_like = 1"))
	assert.Equal(t, [][]string{{"0"}}, readRows(t, s, like), "after a PRAGMA setting")
	require.NoError(t, dbtest.Run(ctx, s, "PRAGMA case_sensitive_like = 0"))

	unordered := "SELECT x FROM c"
	for range 3 {
		assert.Equal(t, [][]string{{"1"}, {"2"}, {"3"}}, readRows(t, s, unordered))
	}
	require.NoError(t, dbtest.Run(ctx, s, "PRAGMA reverse_unordered_selects = 1"))
	assert.Equal(t, [][]string{{"3"}, {"2"}, {"1"}}, readRows(t, s, unordered), "after a flag PRAGMA")
	require.NoError(t, dbtest.Run(ctx, s, "PRAGMA reverse_unordered_selects = 0"))

	for round := range 2 {
		for i := range 40 {
			q := fmt.Sprintf("SELECT %d + x FROM c WHERE x = 1", i)
			assert.Equal(t, [][]string{{fmt.Sprint(i + 1)}}, readRows(t, s, q), "round %d", round)
		}
	}

	// A cached read whose table is gone fails as a fresh compile would,
	// every time.
	require.NoError(t, dbtest.Run(ctx, s, "DROP TABLE c"))
	for range 2 {
		assert.Equal(t, db.KindSQLError, kindOf(t, read(ctx, s, all)), "the table is gone")
	}
}
