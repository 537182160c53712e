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

// TestListenOnce: the directory is created 0700, the socket 0600; a
// second Listen of the same socket is ErrRunning while the first holds
// it; after Close the socket is gone and the path can be served again.
func TestListenOnce(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "a", "b", SocketName)
	ln, err := Listen(sock, Options{})
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Dir(sock))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	fi, err = os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	c, err := Dial(context.Background(), sock, Options{})
	require.NoError(t, err)
	accepted, err := ln.Accept()
	require.NoError(t, err)
	peer, err := accepted.(*Conn).Peer()
	require.NoError(t, err)
	assert.Equal(t, uint32(os.Geteuid()), peer.UID)
	assert.Equal(t, "uid:"+strconv.Itoa(os.Geteuid()), accepted.RemoteAddr().String(), "the per-address limit counts each account apart")
	accepted.Close()
	c.Close()

	_, err = Listen(sock, Options{})
	require.ErrorIs(t, err, ErrRunning)
	_, err = os.Lstat(sock)
	require.NoError(t, err, "the refused second daemon leaves the live socket alone")

	require.NoError(t, ln.Close())
	_, err = os.Lstat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist)
	ln, err = Listen(sock, Options{})
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

// TestListenReplacesStaleSocket: a socket nobody serves (its daemon died
// without removing it) is replaced; a file that is no socket is not.
func TestListenReplacesStaleSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(dir, 0o700))
	sock := filepath.Join(dir, SocketName)
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	require.NoError(t, err)
	stale.SetUnlinkOnClose(false)
	stale.Close()
	_, err = Dial(context.Background(), sock, Options{})
	require.ErrorIs(t, err, ErrNotRunning, "a stale socket is no daemon")

	ln, err := Listen(sock, Options{})
	require.NoError(t, err)
	c, err := Dial(context.Background(), sock, Options{})
	require.NoError(t, err)
	c.Close()
	require.NoError(t, ln.Close())

	require.NoError(t, os.WriteFile(sock, []byte("data"), 0o600))
	_, err = Listen(sock, Options{})
	var pe *PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, sock, pe.Path)
	assert.Contains(t, err.Error(), "is not a socket")
	b, _ := os.ReadFile(sock)
	assert.Equal(t, "data", string(b), "a file that is no socket is left alone")
}

// TestCheckDirRefuses: a link, a file, and a directory others may write
// are refused with the path and a fix; a parent others may write without
// the sticky bit is refused, one with it (as /tmp) is not.
func TestCheckDirRefuses(t *testing.T) {
	base := t.TempDir()
	self := os.Geteuid()
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(real, link))
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o770))
	loose := filepath.Join(base, "loose")
	require.NoError(t, os.Mkdir(loose, 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(loose, "sock"), 0o700))
	require.NoError(t, os.Chmod(loose, 0o777))
	sticky := filepath.Join(base, "sticky")
	require.NoError(t, os.Mkdir(sticky, 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(sticky, "sock"), 0o700))
	require.NoError(t, os.Chmod(sticky, 0o777|os.ModeSticky))

	assert.NoError(t, CheckDir(real, Options{Owner: self}))
	assert.NoError(t, CheckDir(filepath.Join(sticky, "sock"), Options{Owner: self}))
	for _, tc := range []struct{ dir, named, want string }{
		{link, link, "symbolic link"},
		{file, file, "not a directory"},
		{open, open, "chmod go-w " + open},
		{filepath.Join(loose, "sock"), loose, "without the sticky bit"},
	} {
		err := CheckDir(tc.dir, Options{Owner: self})
		var pe *PathError
		require.True(t, errors.As(err, &pe), "%s: %v", tc.dir, err)
		assert.Equal(t, tc.named, pe.Path)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestDialRefusesALink: Dial does not follow a link to a socket, which
// could be another account's.
func TestDialRefusesALink(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.sock")
	ln, err := net.Listen("unix", other)
	require.NoError(t, err)
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(dir, 0o700))
	sock := filepath.Join(dir, SocketName)
	require.NoError(t, os.Symlink(other, sock))
	_, err = Dial(context.Background(), sock, Options{})
	assert.ErrorContains(t, err, sock+" is a symbolic link")
}
