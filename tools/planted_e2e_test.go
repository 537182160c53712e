package tools_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlantedHugeDefinitions (hostile): a user with the write scope plants
// views (SQLite) and routines (PostgreSQL) whose sources are many MB, in
// sum well over the worker's 128 MiB SQLite heap bound. Another user's
// search_definitions, find_references_to, get_view_definition and
// get_routine_source still answer, with bounded text: the search runs in
// the database and the sources come back cut at db.MaxSourceChars, with a
// note.
func TestPlantedHugeDefinitions(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine)
			const views = 20
			pad := strings.Repeat("x", 7<<20)
			plant := func(i int) string {
				return fmt.Sprintf("CREATE VIEW big%02d AS SELECT id, name FROM customers /* %s */ WHERE name <> 'needle%02d'", i, pad, i)
			}
			if engine == db.SQLite {
				pool, err := sql.Open("sqlite", "file:"+cfg.DSN)
				require.NoError(t, err)
				for i := range views {
					_, err := pool.Exec(plant(i))
					require.NoError(t, err)
				}
				require.NoError(t, pool.Close())
			} else {
				// A routine keeps its source as written; two of them, over
				// the bound, are enough to show the cut.
				for i := range 2 {
					dbtest.Exec(t, cfg.DSN, fmt.Sprintf("CREATE FUNCTION big%02d() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM customers /* %s */ WHERE name <> 'needle%02d' $$", i, pad[:2<<20], i))
				}
				dbtest.Exec(t, cfg.DSN, plant(0))
			}
			ro := session(t, cfg, "vic", true)
			text, sc := callOK(t, ro, "search_definitions", map[string]any{"text": "NEEDLE01"})
			assert.Less(t, len(text), 4096, "the answer is an excerpt")
			assert.Equal(t, float64(1), sc["total"])
			assert.True(t, strings.Contains(text, "needle01"), "the excerpt holds the match")

			text, sc = callOK(t, ro, "find_references_to", map[string]any{"table": "customers"})
			assert.Less(t, len(text), 64<<10)
			assert.NotZero(t, sc["total"])

			if engine == db.SQLite { // PostgreSQL keeps no comment in a view's definition
				text, sc = callOK(t, ro, "get_view_definition", map[string]any{"view": "big00"})
				assert.Less(t, len(text), db.MaxSourceChars+256)
				assert.True(t, strings.Contains(text, fmt.Sprintf("[source cut at %d of", db.MaxSourceChars)), "the cut is noted")
				assert.Greater(t, sc["length"], float64(db.MaxSourceChars))
			} else {
				text, _ = callOK(t, ro, "get_routine_source", map[string]any{"routine": "big01"})
				assert.Less(t, len(text), db.MaxSourceChars+256)
				assert.True(t, strings.Contains(text, "[source cut at"), "the cut is noted")
			}
		})
	}
}
