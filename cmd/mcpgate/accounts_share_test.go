//go:build linux

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShareSQLiteRefusesPlantedLinks: every worker may write the SQLite
// database's directory, so a worker can leave there, under the name of
// the database or of one of its journal files, a symbolic or hard link
// to a file of the gateway's or the system's (the TLS key, /etc/shadow).
// The next start must not hand that file to worker.group: it refuses,
// and the file keeps its group and mode.
func TestShareSQLiteRefusesPlantedLinks(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct{ name, planted string }{
		{"symlink as the journal", "mcpgate.db-journal"},
		{"symlink as the wal", "mcpgate.db-wal"},
		{"symlink as the database", "mcpgate.db"},
		{"hard link as the journal", "mcpgate.db-journal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "tls.key")
			require.NoError(t, os.WriteFile(secret, []byte("key"), 0o600))
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			db := filepath.Join(dir, "mcpgate.db")
			if c.planted != "mcpgate.db" {
				require.NoError(t, os.WriteFile(db, nil, 0o600))
			}
			if c.name[:4] == "hard" {
				require.NoError(t, os.Link(secret, filepath.Join(dir, c.planted)))
			} else {
				require.NoError(t, os.Symlink(secret, filepath.Join(dir, c.planted)))
			}
			err := shareSQLite(db, 4242)
			assert.Error(t, err)
			fi, err := os.Stat(secret)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the planted link's target was opened to the workers")
			assert.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Gid, "the planted link's target was handed to worker.group")
		})
	}
}
