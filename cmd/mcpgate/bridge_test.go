package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	// Both protocol generations pass through: the go-sdk's latest
	// (2026-07-28, stateless, Mcp-* headers from the bridge) and a
	// session-based one.
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version "+version, func(t *testing.T) {
			refreshes := g.issuer.Refreshes()
			var stderr lockedBuffer
			cmd := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil)
			ctx := context.Background()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
			if version != "" {
				assert.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			}
			t.Logf("negotiated %s", cs.InitializeResult().ProtocolVersion)

			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			assert.NotEmpty(t, tools.Tools)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
			require.NoError(t, err)
			assert.False(t, res.IsError)
			assert.Greater(t, g.issuer.Refreshes(), refreshes, "the bridge refreshed the token mid-run")

			if cs.InitializeResult().ProtocolVersion == "2026-07-28" {
				// A handle argument carries x-mcp-header: the stdio client
				// sends no HTTP headers, so the bridge must mirror it into
				// Mcp-Param-Transaction, or the gateway refuses (-32020).
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "begin", Arguments: map[string]any{}})
				require.NoError(t, err)
				b, _ := json.Marshal(res.StructuredContent)
				var sc struct{ Transaction string }
				require.NoError(t, json.Unmarshal(b, &sc))
				require.NotEmpty(t, sc.Transaction, "begin mints a handle: %s", b)
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"transaction": sc.Transaction}})
				require.NoError(t, err, "the mirrored header matched the body")
				assert.False(t, res.IsError)

				// Another client of the user that never listed the tools
				// through its bridge: the gateway's HeaderMismatch makes
				// the bridge list them and send the call again.
				cmd2 := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
				cmd2.Stderr = &stderr
				cs2, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd2}, nil)
				require.NoError(t, err)
				res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"transaction": sc.Transaction}})
				require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
				assert.False(t, res.IsError)
				require.NoError(t, cs2.Close())
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit", Arguments: map[string]any{"transaction": sc.Transaction}})
				require.NoError(t, err)
				assert.False(t, res.IsError)
			}

			require.NoError(t, cs.Close())
			assert.NotContains(t, stderr.String(), "level=WARN", "bridge stderr")
		})
	}
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
