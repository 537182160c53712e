package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBridgeCommand: the go-sdk client runs `mcpgate bridge` as a stdio
// server, as Claude Desktop would, against the TLS + auth gateway, with the
// token of `mcpgate login`; tokens expire within oauth2's margin, so the
// bridge refreshes them during the run.
func TestBridgeCommand(t *testing.T) {
	g := startTLSGateway(t, nil)
	g.issuer.AccessTokenTTL = 5 * time.Second // always "about to expire": every use refreshes
	c := newClientSide(t, g)
	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)

	var stderr lockedBuffer
	cmd := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, tools.Tools)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Greater(t, g.issuer.Refreshes(), 0, "the bridge refreshed the token mid-run")

	require.NoError(t, cs.Close())
	assert.NotContains(t, stderr.String(), "level=WARN", "bridge stderr")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
