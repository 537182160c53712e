package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientPragmaAllowlist (hostile, write scope): a client's statement
// may use only the documented pragmas. The settings that change the shared
// file or lock other sessions out are refused in a read-write session's
// own statements (execute_sql), committed or not, so the database still
// opens for a new session and another session still reads and writes; the
// pragmas that act when read are refused too, and the catalog pragmas, as
// statements and as functions, still work.
func TestClientPragmaAllowlist(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	rw := open(t, cfg, false)
	ctx := t.Context()
	for _, p := range []string{
		"PRAGMA writable_schema = 1", "PRAGMA writable_schema = RESET", "PRAGMA main.writable_schema(1)",
		"PRAGMA locking_mode = EXCLUSIVE", "PRAGMA journal_mode = DELETE", "PRAGMA journal_mode = OFF",
		"PRAGMA synchronous = OFF", "PRAGMA schema_version = 1", "PRAGMA trusted_schema = 1",
		"PRAGMA cell_size_check = 0", "PRAGMA temp_store = FILE", "PRAGMA hard_heap_limit = 0",
		"PRAGMA soft_heap_limit = 0", "PRAGMA cache_size = -1000000", "PRAGMA mmap_size = 1000000000",
		"PRAGMA busy_timeout = 0", "PRAGMA query_only = 0", "PRAGMA ignore_check_constraints = 1",
		"PRAGMA legacy_alter_table = 1", "PRAGMA secure_delete = 0", "PRAGMA auto_vacuum = FULL",
		"PRAGMA page_size = 512", "PRAGMA max_page_count = 1", "PRAGMA application_id = 7",
		"PRAGMA wal_checkpoint", "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA optimize", "PRAGMA incremental_vacuum",
		"PRAGMA shrink_memory", "PRAGMA temp_store_directory = '/tmp'", "PRAGMA no_such_pragma",
	} {
		err := dbtest.Run(ctx, rw, p)
		assert.Equal(t, db.KindRefused, kindOf(t, err), p)
		if err != nil {
			assert.Contains(t, err.Error(), "is refused here", p)
		}
	}
	require.NoError(t, rw.Commit(ctx))

	// The file is whole and nobody is locked out.
	other := open(t, cfg, false)
	require.NoError(t, dbtest.Run(ctx, other, "UPDATE customers SET name = name WHERE id = 1"))
	require.NoError(t, other.Commit(ctx))
	assert.Equal(t, 3, scalar(t, open(t, cfg, true), "SELECT count(*) FROM customers"))
	assert.Equal(t, 1, scalar(t, other, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"))

	// What stays: reading, the catalog pragmas, and the settings that act
	// only on the session's own statements.
	for _, p := range []string{
		"PRAGMA table_info(customers)", "SELECT count(*) FROM pragma_table_info('customers')",
		"SELECT * FROM pragma_index_list('customers')", "PRAGMA foreign_key_check", "PRAGMA integrity_check(1)",
		"PRAGMA writable_schema", "PRAGMA locking_mode", "PRAGMA journal_mode", "PRAGMA schema_version",
		"PRAGMA defer_foreign_keys = 1", "PRAGMA user_version = 3", "PRAGMA case_sensitive_like = 1", "PRAGMA case_sensitive_like = 0",
	} {
		assert.NoError(t, dbtest.Run(ctx, rw, p), p)
	}
	ro := open(t, cfg, true)
	for _, p := range []string{"PRAGMA writable_schema = 1", "PRAGMA locking_mode = EXCLUSIVE", "PRAGMA user_version = 3"} {
		assert.Equal(t, db.KindReadOnly, kindOf(t, dbtest.Run(ctx, ro, p)), p)
	}
	assert.Equal(t, db.KindRefused, kindOf(t, dbtest.Run(ctx, ro, "PRAGMA wal_checkpoint")))
}

// TestTempStoreInMemory (hostile, read-only): a DISTINCT over more large
// distinct values than the heap bound holds would spill to temp files, which SQLite
// does not bound, and fill the disk. Temporary storage is in memory and
// counted against the heap bound, so the statement fails (kind refused,
// SQLITE_NOMEM) instead; the session goes on.
func TestTempStoreInMemory(t *testing.T) {
	cfg := dbtest.Config(t, db.SQLite)
	cfg.StatementTimeout = 10 * time.Minute // 144 MB through SQLite is slow under -race
	s := open(t, cfg, true)
	assert.Equal(t, 2, scalar(t, s, "PRAGMA temp_store"), "MEMORY")
	err := read(t.Context(), s, fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
SELECT count(*) FROM (SELECT DISTINCT randomblob(16) || zeroblob(1000000) FROM c)`, db.MaxRowBytes>>20+16))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "memory bound")
	assert.Equal(t, 3, scalar(t, s, "SELECT count(*) FROM customers"))
}
