package postgres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAsUser: with connect_as_user the session's user replaces the DSN's,
// the DSN's password (the login role's) is dropped, and the password comes
// from PGPASSFILE's line for that user.
func TestAsUser(t *testing.T) {
	pass := filepath.Join(t.TempDir(), "pgpass")
	require.NoError(t, os.WriteFile(pass, []byte("db.example.com:5432:app:mcpgate:loginpw\ndb.example.com:5432:app:o'brien\\\\x:userpw\n"), 0o600))
	t.Setenv("PGPASSFILE", pass)
	t.Setenv("PGPASSWORD", "envpw")
	const user = `o'brien\x`
	for _, dsn := range []string{
		"postgres://mcpgate:loginpw@db.example.com/app?sslmode=disable",
		"postgresql://db.example.com/app?user=mcpgate&password=loginpw&sslmode=disable",
		"host=db.example.com dbname=app user=mcpgate password='loginpw' sslmode=disable",
		"host=db.example.com dbname=app sslmode=disable",
	} {
		t.Run(dsn, func(t *testing.T) {
			as, err := asUser(dsn, user)
			require.NoError(t, err)
			pc, err := pgx.ParseConfig(as)
			require.NoError(t, err)
			assert.Equal(t, user, pc.User)
			assert.Equal(t, "userpw", pc.Password)
			assert.Equal(t, "app", pc.Database)
		})
	}
	_, err := asUser("postgres://%zz@h/db", user)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "%zz", "the DSN is not quoted")
}

func TestCheckRoleName(t *testing.T) {
	tests := []struct {
		user string
		ok   bool
	}{
		{"alice", true},
		{`Mixed "Case" é`, true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false}, // the server would cut it to another name
		{"", false},
		{"nul\x00x", false},
		{"new\nline", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.ok, checkRoleName(tt.user) == nil, "%q", tt.user)
	}
}
