package db_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollect(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	pool, err := sql.Open("sqlite", cfg.DSN)
	require.NoError(t, err)
	defer pool.Close()
	ctx := context.Background()
	tests := []struct {
		name      string
		sql       string
		max, cell int
		rows      int
		total     int
		atLeast   bool
		note      string
	}{
		{"all", "SELECT id FROM customers", 10, 0, 3, 3, false, "(3 rows)"},
		{"capped", "SELECT id FROM customers", 2, 0, 2, 3, false, "(showing 2 of 3 rows)"},
		{"one", "SELECT 1", 10, 0, 1, 1, false, "(1 row)"},
		{"counted to the limit", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", 5, 0, 5, 1000, true, "(showing 5 of more than 1000 rows)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := pool.QueryContext(ctx, tt.sql)
			require.NoError(t, err)
			got, err := db.CollectUpTo(r, tt.max, tt.cell, 1000)
			require.NoError(t, err)
			assert.Len(t, got.Rows, tt.rows)
			assert.Equal(t, tt.total, got.Total)
			assert.Equal(t, tt.atLeast, got.TotalAtLeast)
			assert.Equal(t, tt.note, got.Note())
		})
	}
	t.Run("byte cap", func(t *testing.T) {
		r, err := pool.QueryContext(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 600) SELECT printf('%.*c', 4000, 'x') FROM c")
		require.NoError(t, err)
		got, err := db.Collect(r, 1000, db.DefaultMaxCell)
		require.NoError(t, err)
		assert.Equal(t, 600, got.Total)
		assert.True(t, got.Truncated)
		assert.Less(t, len(got.Rows), 600)
		assert.Equal(t, db.MaxBytes/4000, len(got.Rows))
	})
	t.Run("long values are cut", func(t *testing.T) {
		r, err := pool.QueryContext(ctx, "SELECT printf('%.*c', 5000, 'x'), X'00ff'")
		require.NoError(t, err)
		got, err := db.Collect(r, 10, 100)
		require.NoError(t, err)
		s := got.Rows[0][0].(string)
		assert.True(t, strings.HasSuffix(s, "… [5000 bytes]"), s)
		assert.Equal(t, `\x00ff`, got.Rows[0][1])
		lines := strings.Split(got.Text(), "\n")
		require.Len(t, lines, 4)
		assert.True(t, strings.HasSuffix(lines[2], `| \x00ff`), lines[2])
		assert.Contains(t, lines[1], "-+-")
	})
	t.Run("long binary values are cut, as hex", func(t *testing.T) {
		r, err := pool.QueryContext(ctx, "SELECT randomblob(5000)")
		require.NoError(t, err)
		got, err := db.Collect(r, 10, 100)
		require.NoError(t, err)
		s := got.Rows[0][0].(string)
		assert.True(t, strings.HasPrefix(s, `\x`), s)
		assert.True(t, strings.HasSuffix(s, "… [10002 bytes]"), s)
	})
	t.Run("an oversize first row is left out", func(t *testing.T) {
		r, err := pool.QueryContext(ctx, "SELECT printf('%.*c', 2 << 20, 'x') UNION ALL SELECT 'small'")
		require.NoError(t, err)
		got, err := db.Collect(r, 10, 0)
		require.NoError(t, err)
		assert.Equal(t, [][]any{{"small"}}, got.Rows)
		assert.Equal(t, 2, got.Total)
		assert.Equal(t, 1, got.Oversize)
		assert.True(t, got.Truncated)
		assert.Equal(t, "(showing 1 of 2 rows; 1 left out, each over the 1048576-byte result cap)", got.Note())
	})
}

// TestScanCutsBeforeCopying: a value over Scan's limit reaches convert as a
// Long holding only its head and its true length.
func TestScanCutsBeforeCopying(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	pool, err := sql.Open("sqlite", cfg.DSN)
	require.NoError(t, err)
	defer pool.Close()
	r, err := pool.QueryContext(t.Context(), "SELECT zeroblob(1 << 20), printf('%.*c', 300, 'y'), 'short', X'01', 7, NULL")
	require.NoError(t, err)
	page, err := db.Scan(r, 10, 100, func(vals []any) ([]any, int) { return vals, 0 })
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	row := page.Items[0]
	assert.Equal(t, db.Long{Head: make([]byte, 100), Len: 1 << 20}, row[0])
	assert.Equal(t, db.Long{Head: []byte(strings.Repeat("y", 100)), Len: 300, Text: true}, row[1])
	assert.Equal(t, []any{"short", []byte{1}, int64(7), nil}, row[2:])
}
