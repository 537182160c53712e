package sqlite_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// TestWarmTouchesNoFile: the pre-start warm-up uses a private in-memory
// database and leaves nothing behind.
func TestWarmTouchesNoFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, sqlite.Warm(t.Context()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
