package main

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everythingVersion is the @modelcontextprotocol/server-everything that
// .ci/run installs under .bin/npm (git-ignored); the tests never fetch it.
const everythingVersion = "2026.8.31"

// TestNpmServerUnderDefaultSandbox: a stock npm MCP server, the reference
// servers' "everything" run by node, works as worker.command under the
// default external profile with nothing widened but worker.dir (its
// install prefix, read only): the gateway lists its tools and calls echo.
func TestNpmServerUnderDefaultSandbox(t *testing.T) {
	prefix, script := everythingServer(t)
	lg := startLocalGateway(t, map[string]string{
		"MCPGATE_WORKER_COMMAND": "node " + script + " stdio",
		"MCPGATE_WORKER_DIR":     prefix,
		// The default profile: none of the tests' temporary directories.
		"MCPGATE_WORKER_SANDBOX_WRITE_PATHS": "",
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: lg.url + "/mcp", DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "echo")
	assert.Equal(t, "Echo: under the sandbox", callText(t, cs, "echo", map[string]any{"message": "under the sandbox"}))
	assert.Contains(t, lg.log.String(), "workers are confined")
	// Each worker the gateway started (how many is the gateway's business:
	// per user and client capabilities) counts under the external profile.
	starts := sandboxStarts(t, lg)
	assert.Len(t, starts, 1)
	assert.NotEqual(t, "0", starts["external"], "%v", starts)
}
