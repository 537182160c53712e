package postgres_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRowBound on PostgreSQL: the value cap comes after the driver has
// read and copied the whole row, so without a bound a row of many long
// values costs twice its size in the worker. pgx refuses a DataRow over
// db.MaxRowBytes before reading its body.
func TestRowBound(t *testing.T) {
	s := open(t, dbtest.Config(t, db.Postgres), "ada", true)
	cols := strings.TrimSuffix(strings.Repeat("repeat('x', 16000000), ", 9), ", ")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := s.Read(t.Context(), func(ctx context.Context, q db.Querier) error {
		r, err := q.QueryContext(ctx, "SELECT "+cols)
		if err != nil {
			return err
		}
		_, err = db.Collect(r, 10, db.DefaultMaxCell)
		return err
	})
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB", alloc>>20)
	assert.Less(t, alloc, uint64(48<<20), "reading one 144 MB row allocated %d MiB", alloc>>20)
	require.Error(t, err)
	var de *db.Error
	require.True(t, errors.As(err, &de), "got %T %v", err, err)
	assert.Equal(t, "rowTooLarge", de.Code)
	assert.Contains(t, de.Message, "over the worker's 128 MiB row bound")
}
