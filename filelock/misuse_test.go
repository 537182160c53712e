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
