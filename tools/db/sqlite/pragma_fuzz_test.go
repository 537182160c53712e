package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// guardedSettings are the connection's and file's settings that no
// client statement may change; settings reads them all at once.
const guardedSettings = `SELECT (SELECT writable_schema FROM pragma_writable_schema) || ',' ||
	(SELECT locking_mode FROM pragma_locking_mode) || ',' || (SELECT journal_mode FROM pragma_journal_mode) || ',' ||
	(SELECT temp_store FROM pragma_temp_store) || ',' || (SELECT trusted_schema FROM pragma_trusted_schema) || ',' ||
	(SELECT synchronous FROM pragma_synchronous) || ',' || (SELECT cell_size_check FROM pragma_cell_size_check) || ',' ||
	(SELECT query_only FROM pragma_query_only) || ',' || (SELECT * FROM pragma_busy_timeout) || ',' ||
	(SELECT * FROM pragma_hard_heap_limit) || ',' || (SELECT schema_version FROM pragma_schema_version)`

func settings(ctx context.Context, s *db.Session) (string, error) {
	var v string
	err := s.Read(ctx, func(ctx context.Context, q db.Querier) error {
		return q.QueryRowContext(ctx, guardedSettings).Scan(&v)
	})
	return v, err
}

// FuzzClientPragmas (hostile, write scope): whatever text a read-write
// session's execute_sql or a read-only session's statement runs, spelled
// however (case, quotes, schema prefixes, comments, pragma functions,
// EXPLAIN), the guarded settings stay as the engine set them.
func FuzzClientPragmas(f *testing.F) {
	for _, s := range []string{
		"PRAGMA writable_schema = 1", "pragma\twritable_schema=1", "PRAGMA main.writable_schema(1)", `PRAGMA "main"."writable_schema" = ON`,
		"PRAGMA/**/locking_mode/**/=/**/EXCLUSIVE", `PRAGMA "locking_mode" = 'exclusive'`, "PRAGMA temp.locking_mode = EXCLUSIVE",
		"PRAGMA journal_mode = MEMORY", "PRAGMA temp_store = 1", "PRAGMA temp_store = ''", "PRAGMA query_only = ''", "PRAGMA query_only(0)",
		"EXPLAIN PRAGMA writable_schema = 1", "SELECT * FROM pragma_writable_schema", "SELECT * FROM pragma_temp_store('1')",
		"SELECT * FROM pragma_table_info('customers', 'main')", "PRAGMA trusted_schema = 1", "PRAGMA synchronous = 0",
		"PRAGMA busy_timeout = 1", "PRAGMA hard_heap_limit = 0", "PRAGMA schema_version = 99", "PRAGMA cell_size_check = 1",
		"PRAGMA -- x\n writable_schema = 1", "PRAGMA LOCKING_MODE = EXCLUSIVE", "PRAGMA main . locking_mode = EXCLUSIVE",
		"ATTACH ':memory:' AS x", "VACUUM INTO '/tmp/x.db'", "SELECT sqlite_compileoption_used('x')",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	cfg := dbtest.Config(f, db.SQLite)
	ctx := context.Background()
	sessions := map[bool]*db.Session{}
	want := map[bool]string{}
	for _, ro := range []bool{false, true} {
		s, err := db.Open(ctx, sqlite.Engine{}, cfg, "ada", ro)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { s.Close() })
		sessions[ro] = s
		if want[ro], err = settings(ctx, s); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text string, ro bool) {
		if strings.ContainsRune(text, 0) {
			return
		}
		s := sessions[ro]
		dbtest.Run(ctx, s, text) //nolint:errcheck // refusals and errors are expected; what counts is after
		if !ro {
			s.Commit(ctx) //nolint:errcheck // a committed change would stay
		}
		got, err := settings(ctx, s)
		if err != nil {
			t.Fatalf("%q: reading the settings: %v", text, err)
		}
		if got != want[ro] {
			t.Fatalf("%q changed the guarded settings from %s to %s", text, want[ro], got)
		}
	})
}
