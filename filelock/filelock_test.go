package filelock

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two handles of one file exclude each other as two processes would: a
// second Acquire waits while the first holds the lock, and gives up when
// its context ends.
func TestAcquireExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	l, err := Acquire(context.Background(), path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Acquire(ctx, path)
	require.ErrorIs(t, err, context.Canceled, "held: the second holder waits until its context ends")
	require.NoError(t, l.Unlock())
	l, err = Acquire(ctx, path)
	require.NoError(t, err, "released: free even for an ended context")
	require.NoError(t, l.Unlock())
}
