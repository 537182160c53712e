package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
)

// TestDatabaseAnswers: the readiness check of the built-in worker's
// database, on every engine here. A login the server refuses still counts
// as an answer (connect_as_user: the gateway is no session's user); a
// server that is not there does not, and the error holds no DSN.
func TestDatabaseAnswers(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := dbtest.Config(t, engine).WithDefaults()
			require.NoError(t, databaseAnswers(cfg)(t.Context()))
			if engine == db.Postgres {
				refused := cfg
				refused.DSN += " user=no_such_role_for_readyz password=secret-word"
				assert.NoError(t, databaseAnswers(refused)(t.Context()), "a refused login is an answer")
			}
		})
	}
	t.Run("sqlite file missing", func(t *testing.T) {
		cfg := db.Config{Driver: db.SQLite, DSN: filepath.Join(t.TempDir(), "gone.db")}.WithDefaults()
		assert.Error(t, databaseAnswers(cfg)(t.Context()))
	})
	t.Run("postgres not there", func(t *testing.T) {
		cfg := db.Config{Driver: db.Postgres, DSN: "host=" + t.TempDir() + " user=u password=secret-word connect_timeout=2"}.WithDefaults()
		err := databaseAnswers(cfg)(t.Context())
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "secret-word")
	})
}

func TestWorkerStartable(t *testing.T) {
	assert.NoError(t, workerStartable([]string{"sh", "-c", "true"})(context.Background()))
	err := workerStartable([]string{filepath.Join(t.TempDir(), "no-such-worker")})(context.Background())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "mcpgate: the worker cannot start"), err.Error())
}
