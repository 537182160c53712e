//go:build linux

package credential_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

func TestWriteHeaders(t *testing.T) {
	if credential.CheckMemoryBacked("/dev/shm") != nil {
		t.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "mcpgate-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "headers")
	h := http.Header{"Authorization": {"Bearer one"}, "X-Api-Key": {"k"}}
	require.NoError(t, credential.WriteHeaders(path, h, -1, -1))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "Authorization: Bearer one\nX-Api-Key: k\n", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	h.Set("Authorization", "Bearer two")
	require.NoError(t, credential.WriteHeaders(path, h, os.Getuid(), os.Getgid()))
	b, _ = os.ReadFile(path)
	assert.Contains(t, string(b), "Bearer two")
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	assert.Empty(t, left, "no temporary file is left beside it")

	assert.Error(t, credential.WriteHeaders(path, http.Header{"A": {"x\r\nEvil: y"}}, -1, -1))
	if disk := t.TempDir(); credential.CheckMemoryBacked(disk) != nil {
		assert.ErrorContains(t, credential.WriteHeaders(filepath.Join(disk, "h"), h, -1, -1), "memory-backed")
	}
}
