package postgres_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/stretchr/testify/require"
)

// TestSplitAgreesWithPostgres holds db.PostgresLexer to the server's own
// parser: on texts built from the tokens where lexers differ, wherever the
// server parses the text, Split finds more than one statement exactly when
// the server refuses it as several commands (extended protocol).
func TestSplitAgreesWithPostgres(t *testing.T) {
	conn, err := pgx.Connect(t.Context(), dbtest.Postgres(t))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	_, err = conn.Exec(t.Context(), "SET standard_conforming_strings = on")
	require.NoError(t, err)
	pieces := []string{
		"SELECT 1", "SELECT 'a'", " ", "\n", ";", "'", `"`, "E'", `\`, "$$", "$a$", "x$a$", "/*", "*/",
		"--", "[", "`", "SELECT 2", "CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1", "END",
		"CASE WHEN true THEN 1", "a",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	parsed := 0
	for range 10000 {
		var b strings.Builder
		for range 1 + rng.IntN(7) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		if strings.Contains(text, "\x00") {
			continue
		}
		_, err := conn.PgConn().Prepare(t.Context(), "", text, nil)
		var pe *pgconn.PgError
		several := errors.As(err, &pe) && pe.Code == "42601" && strings.Contains(pe.Message, "multiple commands")
		if err != nil && !several {
			continue // a syntax error: the server read it some other way, and runs nothing
		}
		parsed++
		if got := len(db.PostgresLexer.Split(text)); (got > 1) != several {
			t.Errorf("%q: Split finds %d statements, the server several=%v", text, got, several)
		}
	}
	t.Logf("%d texts parsed and were compared", parsed)
	require.NotZero(t, parsed)
}
