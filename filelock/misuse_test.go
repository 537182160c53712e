package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lock file that cannot be opened (left by "sudo mcpgate …" with root as
// its owner, or not a file at all) is an error of its own, at once, that
// names the file: nobody holds the lock, so waiting for it, or saying that
// another process is busy, would mislead. IsBusy tells the two apart.
func TestAcquireTellsAnUnusableLockFromABusyOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	require.NoError(t, os.Mkdir(path, 0o700)) // stands in for a file this user may not open
	_, err := Acquire(context.Background(), path)
	require.Error(t, err)
	assert.False(t, IsBusy(err), "%v", err)
	assert.Contains(t, err.Error(), path)

	free := filepath.Join(dir, "y.lock")
	l, err := Acquire(context.Background(), free)
	require.NoError(t, err)
	defer l.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Acquire(ctx, free)
	assert.True(t, IsBusy(err), "%v", err)
	assert.True(t, errors.Is(err, context.Canceled))
}

// A lock file removed (or replaced) while a process waits on it: the
// waiter, once the holder lets go, would lock a file nobody else can open
// any more, while the next process creates a new one and locks that: two
// holders. A waiter checks that the path still names the file it locked,
// and otherwise locks the one that is there now.
func TestAcquireFollowsARemovedLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := Acquire(context.Background(), path)
	require.NoError(t, err)

	opened := make(chan struct{}, 1)
	testHookOpened = func() {
		select {
		case opened <- struct{}{}:
		default:
		}
	}
	defer func() { testHookOpened = nil }()
	got := make(chan *Lock)
	go func() {
		l, err := Acquire(context.Background(), path)
		assert.NoError(t, err)
		got <- l
	}()
	<-opened // the waiter has its handle on the file, and waits
	testHookOpened = nil
	require.NoError(t, os.Remove(path))
	require.NoError(t, held.Unlock())
	waiter := <-got
	defer waiter.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other, err := Acquire(ctx, path)
	if err == nil {
		other.Unlock()
	}
	assert.True(t, IsBusy(err), "a second process got the lock the waiter holds: %v", err)
}
