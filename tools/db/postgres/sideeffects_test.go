package postgres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSideEffectFieldCall: a listed function in functional notation ((x).f
// is f(x)) is found outside strings and comments, and inside a string that
// a session with standard_conforming_strings off would end elsewhere; a
// column of another name after a dot is not.
func TestSideEffectFieldCall(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT (pid).pg_terminate_backend FROM pg_stat_activity": "pg_terminate_backend",
		"SELECT (1)./* c */ PG_CANCEL_BACKEND":                    "pg_cancel_backend",
		"SELECT (1).--c\n\"pg_cancel_backend\"":                   "pg_cancel_backend",
		`SELECT ('SELECT 1'::text).ts_stat`:                       "ts_stat",
		`SELECT ('x'::text).dblink_exec`:                          "dblink_exec",
		`SELECT '\'', (1).pg_cancel_backend, '\'`:                 "pg_cancel_backend",
		`SELECT '\\', (1).pg_cancel_backend`:                      "pg_cancel_backend",
		`SELECT (t).a, s.pid FROM t, pg_stat_activity s`:          "",
		`SELECT '(1).pg_cancel_backend'`:                          "",
	} {
		assert.Equal(t, want, sideEffect(sql), sql)
	}
}
