package sqlite_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRowBound: the value length limit caps one value, and without a row
// bound a read-only query of 40 zeroblob(16000000) columns makes the driver
// copy 640 MB for one row (1.27 GB at the peak, with SQLite's own copy). A
// row is bounded while the driver reads it; the result says where it was cut.
func TestRowBound(t *testing.T) {
	s := open(t, dbtest.Config(t, db.SQLite), true)
	cols := strings.TrimSuffix(strings.Repeat("CASE WHEN n = 3 THEN zeroblob(16000000) END, ", 40), ", ")
	var rows *db.Rows
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := s.Read(t.Context(), func(ctx context.Context, q db.Querier) error {
		r, err := q.QueryContext(ctx, "WITH t(n) AS (VALUES (1), (2), (3), (4)) SELECT n, "+cols+" FROM t")
		if err != nil {
			return err
		}
		rows, err = db.Collect(r, 10, db.DefaultMaxCell)
		return err
	})
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB; err %v", alloc>>20, err)
	require.NoError(t, err)
	assert.Less(t, alloc, uint64(320<<20), "reading one row allocated %d MiB", alloc>>20)
	assert.True(t, rows.Truncated)
	assert.True(t, rows.RowTooLarge)
	assert.Contains(t, rows.Note(), "over the 128 MiB row bound")
	require.NotEmpty(t, rows.Rows)
	assert.LessOrEqual(t, len(rows.Rows), 2, "no row at or past the one over the bound")
	for i, row := range rows.Rows {
		assert.Equal(t, int64(i+1), row[0])
	}
	require.NoError(t, dbtest.Run(t.Context(), s, "SELECT count(*) FROM customers"), "the session goes on")
}
