package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
)

// TestCheckAccounts: doctor reports who workers run as, whether this
// process may switch to them, and how full the uid mapping is; a damaged
// mapping file fails.
func TestCheckAccounts(t *testing.T) {
	r := &Report{}
	checkAccounts(r, config.Default())
	f, ok := r.Find("accounts")
	require.True(t, ok)
	assert.Equal(t, OK, f.Status)
	assert.Contains(t, f.Detail, "gateway's own account")

	dir := t.TempDir()
	cfg := config.Default()
	cfg.Worker.RunAs, cfg.Worker.UIDRange, cfg.Worker.UIDMapFile = "user", "500001-500010", filepath.Join(dir, "uids.json")
	require.NoError(t, os.WriteFile(cfg.Worker.UIDMapFile, []byte(`{"a":500001,"b":500002,"c":500003,"d":500004,"e":500005,"f":500006,"g":500007,"h":500008,"i":500009}`), 0o600))
	r = &Report{}
	checkAccounts(r, cfg)
	f, ok = r.Find("uid mapping")
	require.True(t, ok)
	assert.Equal(t, Warn, f.Status, "9 of 10 taken")
	assert.Contains(t, f.Detail, "9 of 10 taken")
	f, ok = r.Find("account switch")
	require.True(t, ok)
	if os.Geteuid() == 0 {
		assert.Equal(t, OK, f.Status, f.Detail)
	} else {
		assert.Equal(t, Fail, f.Status)
		assert.Contains(t, f.Detail, "CAP_SETUID")
	}

	require.NoError(t, os.WriteFile(cfg.Worker.UIDMapFile, []byte(`{"a":0}`), 0o600))
	r = &Report{}
	checkAccounts(r, cfg)
	f, ok = r.Find("uid mapping")
	require.True(t, ok)
	assert.Equal(t, Fail, f.Status)
	assert.Contains(t, f.Detail, "outside worker.uid_range")

	// A mapping file's directory any worker could write is named, with
	// what to do about it.
	require.NoError(t, os.Chmod(dir, 0o777))
	r = &Report{}
	checkAccounts(r, cfg)
	f, ok = r.Find("accounts")
	require.True(t, ok)
	assert.Equal(t, Fail, f.Status)
	assert.Contains(t, f.Detail, "writable by others")
	assert.Contains(t, f.Fix, "writable by no worker")
}
