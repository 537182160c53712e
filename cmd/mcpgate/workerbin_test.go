package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// TestBuiltinWorkerCommandPrefersTheWorkerBinaryOfTheSameBuild: serve
// starts mcpgate-worker when it sits beside mcpgate and comes from the same
// build, and `mcpgate worker` when it is missing, not executable, a
// directory or another program.
func TestBuiltinWorkerCommandPrefersTheWorkerBinaryOfTheSameBuild(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	exe := filepath.Join(dir, "mcpgate")
	lean := filepath.Join(dir, workerBinary)
	copyFile(t, self, exe, 0o755)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	assert.Equal(t, []string{exe, "worker"}, builtinWorkerCommand(exe, log), "no worker binary")

	copyFile(t, self, lean, 0o644)
	assert.Equal(t, []string{exe, "worker"}, builtinWorkerCommand(exe, log), "not executable")

	require.NoError(t, os.Chmod(lean, 0o755))
	assert.Equal(t, []string{lean}, builtinWorkerCommand(exe, log), "the same build beside mcpgate")
	assert.Empty(t, logs.String())

	require.NoError(t, os.WriteFile(lean, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	assert.Equal(t, []string{exe, "worker"}, builtinWorkerCommand(exe, log), "another program")
	assert.Contains(t, logs.String(), "from another build")

	require.NoError(t, os.Remove(lean))
	require.NoError(t, os.Mkdir(lean, 0o755))
	assert.Equal(t, []string{exe, "worker"}, builtinWorkerCommand(exe, log), "a directory")
}
