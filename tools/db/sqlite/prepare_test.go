package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// count counts the statements of text as SQLite's parser finds them, and
// reports false when one does not compile.
func count(h handle, text string) (int, bool, error) {
	n := 0
	for strings.Trim(db.SQLiteLexer.StripComments(text), "; \t\n\v\f\r") != "" {
		ok, rest, err := h.first(text)
		if err != nil || !ok {
			return n, false, err
		}
		n++
		text = rest
	}
	return n, true, nil
}

// TestSplitAgreesWithSQLite holds db.SQLiteLexer to SQLite's own parser:
// on texts built from the tokens where lexers differ, wherever SQLite
// compiles every statement, Split finds as many as sqlite3_prepare_v2 does.
func TestSplitAgreesWithSQLite(t *testing.T) {
	pool, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	defer pool.Close()
	c, err := pool.Conn(t.Context())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ExecContext(t.Context(), "CREATE TABLE x (a)")
	require.NoError(t, err)
	pieces := []string{
		"SELECT 1", "SELECT 'a'", " ", "\n", ";", "'", `"`, "`", "[", "]", "/*", "*/", "--", "E", `\`,
		"$a(", ")", "@b", ":c::d", "#e", "x'", "CREATE TRIGGER t AFTER INSERT ON x BEGIN", "END", "SELECT 2",
		"CREATE TEMP TRIGGER u AFTER DELETE ON x BEGIN DELETE FROM x", "CASE WHEN 1 THEN 2", "$$", "a",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	err = c.Raw(func(dc any) error {
		h, err := handleOf(dc.(driver.Conn))
		if err != nil {
			return err
		}
		for range 50000 {
			var b strings.Builder
			for range 1 + rng.IntN(8) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			text := b.String()
			n, compiled, err := count(h, text)
			if err != nil {
				return err
			}
			if !compiled {
				continue
			}
			checked++
			if got := len(db.SQLiteLexer.Split(text)); got != n {
				t.Errorf("%q: Split finds %d statements, SQLite %d", text, got, n)
			}
		}
		return nil
	})
	require.NoError(t, err)
	t.Logf("%d texts compiled and were compared", checked)
	require.NotZero(t, checked)
}
