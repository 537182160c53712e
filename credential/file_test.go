//go:build linux

package credential

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// secrets makes a secrets directory with alice's and bob's TOKEN files.
func secrets(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "secrets")
	for _, u := range []string{"alice", "bob"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, u), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, u, "TOKEN"), []byte(u+"-secret\n"), 0o600))
	}
	require.NoError(t, os.Chmod(dir, 0o700))
	return dir
}

func TestUserSecretRead(t *testing.T) {
	dir := secrets(t)
	got, fe := readUserSecret(dir, "alice", "TOKEN")
	require.Nil(t, fe)
	assert.Equal(t, "alice-secret", string(got))
}

// TestUserSecretHostile: what a user, or a careless operator, could put in
// the way of reading the right user's file, and the refusal each gets.
func TestUserSecretHostile(t *testing.T) {
	tests := []struct {
		name   string
		user   string
		setup  func(t *testing.T, dir string)
		kind   error
		reason string
	}{
		{"user id ../bob", "../bob", nil, ErrNoAccess, "cannot name a directory"},
		{"user id ..", "..", nil, ErrNoAccess, "cannot name a directory"},
		{"user id with a slash", "bob/..", nil, ErrNoAccess, "cannot name a directory"},
		{"missing user", "carol", nil, ErrNoAccess, "no access"},
		{"missing file", "alice", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "alice", "TOKEN")) }, ErrNoAccess, "no access"},
		{"file readable by others", "alice", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "alice", "TOKEN"), 0o644))
		}, ErrRefused, "mode 0644"},
		{"user directory open to group", "alice", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "alice"), 0o750))
		}, ErrRefused, "mode 0750"},
		{"top directory open to others", "alice", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(dir, 0o711))
		}, ErrRefused, "mode 0711"},
		{"symlinked secret file", "alice", func(t *testing.T, dir string) {
			f := filepath.Join(dir, "alice", "TOKEN")
			require.NoError(t, os.Remove(f))
			require.NoError(t, os.Symlink(filepath.Join(dir, "bob", "TOKEN"), f))
		}, ErrRefused, "symbolic link"},
		{"symlinked user directory", "alice", func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "alice")))
			require.NoError(t, os.Symlink("bob", filepath.Join(dir, "alice")))
		}, ErrRefused, "symbolic link"},
		{"file is a directory", "alice", func(t *testing.T, dir string) {
			f := filepath.Join(dir, "alice", "TOKEN")
			require.NoError(t, os.Remove(f))
			require.NoError(t, os.Mkdir(f, 0o700))
		}, ErrRefused, "not a regular file"},
		{"fifo that would block", "alice", func(t *testing.T, dir string) {
			f := filepath.Join(dir, "alice", "TOKEN")
			require.NoError(t, os.Remove(f))
			require.NoError(t, unix.Mkfifo(f, 0o600))
		}, ErrRefused, "not a regular file"},
		{"oversized file", "alice", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "alice", "TOKEN"), make([]byte, MaxSecretBytes+1), 0o600))
		}, ErrRefused, "KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secrets(t)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			got, fe := readUserSecret(dir, tt.user, "TOKEN")
			require.NotNil(t, fe, "read %q", got)
			assert.Equal(t, tt.kind, fe.kind)
			assert.Contains(t, fe.reason, tt.reason)
			assert.NotContains(t, fe.reason, "secret\n")
		})
	}
}

// TestUserSecretBeneath: the opens themselves stay under the directory,
// not only the user id's check: a path that climbs out fails in openat2.
func TestUserSecretBeneath(t *testing.T) {
	dir := secrets(t)
	top, err := unix.Open(filepath.Join(dir, "alice"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(top)
	_, fe := readBeneath(top, "../bob", "TOKEN")
	require.NotNil(t, fe)
	assert.Equal(t, ErrRefused, fe.kind)
	assert.Contains(t, fe.reason, "outside")
}

func TestStaticSecret(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(f, []byte("shared\n"), 0o600))
	got, fe := readStatic(f)
	require.Nil(t, fe)
	assert.Equal(t, "shared", string(got))
	require.NoError(t, os.Chmod(f, 0o640))
	_, fe = readStatic(f)
	require.NotNil(t, fe)
	assert.Contains(t, fe.reason, "mode 0640")
	link := f + ".link"
	require.NoError(t, os.Chmod(f, 0o600))
	require.NoError(t, os.Symlink(f, link))
	_, fe = readStatic(link)
	require.NotNil(t, fe)
	assert.Contains(t, fe.reason, "symbolic link")
}
