//go:build unix

package install

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func owner(t *testing.T, path string) (uid, gid int, ok bool) {
	st, err := os.Stat(path)
	require.NoError(t, err)
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(sys.Uid), int(sys.Gid), true
}

// "sudo mcpgate install" (sudo keeps HOME on macOS) must not hand the
// client's own file to root: the client could no longer read or write
// its configuration. The replaced file and the backup keep the owner
// of the file they replace.
func TestInstallKeepsTheFilesOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give the file another owner")
	}
	env := testEnv(t)
	c, _ := Lookup("claude-code")
	path := c.Path(env, User)
	writeFile(t, path, "{\"numStartups\": 3}\n", 0o600)
	require.NoError(t, os.Chown(path, 12345, 12346))
	ch, err := Plan(c, env, User, entry)
	require.NoError(t, err)
	require.NoError(t, ch.Apply())
	for _, p := range []string{path, ch.Backup} {
		uid, gid, ok := owner(t, p)
		require.True(t, ok)
		assert.Equal(t, [2]int{12345, 12346}, [2]int{uid, gid}, p)
	}
}
