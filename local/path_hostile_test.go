//go:build linux

package local

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckDirRefusesAnotherAccountsLink: a parent of the socket's
// directory that is a symbolic link another account owns (a link it
// planted in /tmp), or a link that leads through a directory another
// account owns, is refused: that account could point the path at a
// directory of its own between the check and the bind or the dial, and
// answer every message. Listen and Dial refuse it too; a link of the
// socket's owner to a private directory is fine. Needs root, to own files
// as another account.
func TestCheckDirRefusesAnotherAccountsLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to plant a link owned by another account")
	}
	u, _ := nobody(t)
	other, _ := strconv.Atoi(u.Uid)
	self := os.Geteuid()
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o777|os.ModeSticky)) // as /tmp

	// The owner's private directory, reached through a link the other
	// account owns.
	real := filepath.Join(base, "real")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "mcpgate"), 0o700))
	planted := filepath.Join(base, "planted")
	require.NoError(t, os.Symlink(real, planted))
	require.NoError(t, os.Lchown(planted, other, other))

	// A link the owner owns, through a directory the other account owns
	// (which it may rename or replace).
	theirs := filepath.Join(base, "theirs")
	require.NoError(t, os.MkdirAll(filepath.Join(theirs, "inner", "mcpgate"), 0o700))
	require.NoError(t, os.Chown(theirs, other, other))
	require.NoError(t, os.Chmod(theirs, 0o755))
	via := filepath.Join(base, "via")
	require.NoError(t, os.Symlink(filepath.Join(theirs, "inner"), via))

	// A link the owner owns to its own private directory.
	mine := filepath.Join(base, "mine")
	require.NoError(t, os.Symlink(real, mine))

	assert.NoError(t, CheckDir(filepath.Join(mine, "mcpgate"), Options{Owner: self}))
	for _, tc := range []struct{ dir, named string }{
		{filepath.Join(planted, "mcpgate"), planted},
		{filepath.Join(via, "mcpgate"), theirs},
	} {
		err := CheckDir(tc.dir, Options{Owner: self})
		var pe *PathError
		require.True(t, errors.As(err, &pe), "%s: got %v, want a refusal", tc.dir, err)
		assert.Equal(t, tc.named, pe.Path)
		assert.Contains(t, err.Error(), "another account")

		sock := filepath.Join(tc.dir, SocketName)
		_, err = Listen(sock, Options{})
		assert.True(t, errors.As(err, &pe), "Listen: got %v, want a refusal", err)
		ln, err := net.Listen("unix", sock) // as if a daemon served it
		require.NoError(t, err)
		_, err = Dial(context.Background(), sock, Options{})
		assert.True(t, errors.As(err, &pe), "Dial: got %v, want a refusal", err)
		ln.Close()
	}
}
