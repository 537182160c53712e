package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/workerproto"
)

// runWorkerInProcess runs `mcpgate worker` through Main with pipes for
// stdin and stdout and returns a connected go-sdk client and Run's result.
func runWorkerInProcess(t *testing.T, ctx context.Context, env map[string]string) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	m := &Main{Stdin: inR, Stdout: outW, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	done := make(chan error, 1)
	go func() {
		err := m.Run(ctx, []string{"worker"})
		outW.Close()
		inR.Close()
		done <- err
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	return cs, done
}

func workerEnv(t *testing.T) map[string]string {
	env := map[string]string{}
	id := workerproto.Identity{User: "ada", SessionID: "s1"}
	cfg := db.Config{DSN: filepath.Join(t.TempDir(), "data", "w.db")}
	for _, kv := range append(id.Environ(), cfg.Environ()...) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func TestWorkerCommandServesUntilEOF(t *testing.T) {
	cs, done := runWorkerInProcess(t, context.Background(), workerEnv(t))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "status"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	sc := res.StructuredContent.(map[string]any)
	assert.Equal(t, "ada", sc["user"])
	assert.Equal(t, Version, cs.InitializeResult().ServerInfo.Version, "the product version by default")
	require.NoError(t, cs.Close()) // closes the worker's stdin
	assert.NoError(t, <-done, "EOF on stdin is a normal end")
}

func TestWorkerCommandStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cs, done := runWorkerInProcess(t, ctx, workerEnv(t))
	defer cs.Close()
	cancel()
	assert.NoError(t, <-done, "the gateway stopping the worker is a normal end")
}

func TestWorkerCommandTakesNoArguments(t *testing.T) {
	m := &Main{Stdin: nil, Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	assert.ErrorIs(t, m.Run(context.Background(), []string{"worker", "extra"}), errUsage)
}
