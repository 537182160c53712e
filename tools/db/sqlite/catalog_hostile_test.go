package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlantedIndexesAndTriggersBounded (hostile, write scope): a user
// plants many indexes and triggers on a shared table, each with a
// condition as long as a request allows (megabytes); another user's
// describe_table and get_table_ddl read each definition cut in SQLite at
// db.MaxSourceChars, so that their number does not multiply into the
// reader's memory.
func TestPlantedIndexesAndTriggersBounded(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	ctx := context.Background()
	planter := open(t, cfg, false)
	const n, size = 4, 200000
	lit := "'" + strings.Repeat("x", size) + "'"
	for i := range n {
		require.NoError(t, dbtest.Run(ctx, planter, fmt.Sprintf("CREATE INDEX big_idx_%d ON customers (id) WHERE name <> %s", i, lit)))
		require.NoError(t, dbtest.Run(ctx, planter, fmt.Sprintf("CREATE TRIGGER big_trig_%d BEFORE UPDATE ON customers WHEN NEW.name = %s BEGIN SELECT 1; END", i, lit)))
	}
	require.NoError(t, planter.Commit(ctx))

	reader := open(t, cfg, true)
	var tb *db.Table
	var ddl string
	require.NoError(t, reader.Read(ctx, func(ctx context.Context, q db.Querier) (err error) {
		if tb, err = (sqlite.Engine{}).Table(ctx, q, "", "customers"); err != nil {
			return err
		}
		ddl, err = sqlite.Engine{}.TableDDL(ctx, q, "", "customers")
		return err
	}))
	for _, ix := range tb.Indexes {
		assert.Less(t, len(ix.Definition), db.MaxSourceChars+100, ix.Name)
	}
	assert.Less(t, len(ddl), (2*n+1)*(db.MaxSourceChars+100), "each index and trigger cut")
	assert.Contains(t, ddl, fmt.Sprintf("[cut at %d of", db.MaxSourceChars))
}

// TestPlantedLongNamesBounded (hostile, write scope): SQLite sets no limit
// on a name, so a user can create tables whose names are as long as a
// request allows, as many as they like; another user's list_tables and
// column listing read every name. Past db.MaxCatalogBytes in all (lowered
// here) the catalog query stops with kind refused, saying why.
func TestPlantedLongNamesBounded(t *testing.T) {
	saved := db.MaxCatalogBytes
	db.MaxCatalogBytes = 1 << 20
	t.Cleanup(func() { db.MaxCatalogBytes = saved })
	cfg := dbtest.Config(t, db.SQLite)
	ctx := context.Background()
	planter := open(t, cfg, false)
	for i := range 4 {
		name := fmt.Sprintf("t%d_%s", i, strings.Repeat("n", 300000))
		require.NoError(t, dbtest.Run(ctx, planter, fmt.Sprintf("CREATE TABLE %s (x int)", name)))
	}
	require.NoError(t, planter.Commit(ctx))

	reader := open(t, cfg, true)
	err := reader.Read(ctx, func(ctx context.Context, q db.Querier) error {
		_, err := sqlite.Engine{}.Objects(ctx, q, "")
		return err
	})
	require.Error(t, err)
	assert.Equal(t, db.KindRefused, kindOf(t, err))
	assert.Contains(t, err.Error(), "catalog's answer is over 1 MiB")
	err = reader.Read(ctx, func(ctx context.Context, q db.Querier) error {
		_, err := sqlite.Engine{}.Columns(ctx, q)
		return err
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "catalog's answer is over 1 MiB")
}
