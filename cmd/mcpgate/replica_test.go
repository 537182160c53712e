package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeReplicas runs two replicas (server.replica_id r1 and r2) and
// sends each one what the load balancer should have sent to the other: a
// session id of r1 gets r2's 404 (the client starts a new session), and a
// transaction handle of r1 gets r2's handleForeign tool error naming both
// replicas. Every id a replica mints starts with its replica id, the
// prefix deploy/haproxy/haproxy.cfg routes on.
func TestServeReplicas(t *testing.T) {
	r1 := startTLSGateway(t, map[string]string{"MCPGATE_SERVER_REPLICA_ID": "r1"})
	r2 := startTLSGateway(t, map[string]string{"MCPGATE_SERVER_REPLICA_ID": "r2"})
	tok1 := r1.token(t, "alice", "mcp:use", "mcp:write")
	tok2 := r2.token(t, "alice", "mcp:use", "mcp:write")

	legacy := r1.connectSession(t, &tok1)
	require.True(t, strings.HasPrefix(legacy.ID(), "r1_"), "session id %q starts with the replica id", legacy.ID())
	statusOf(t, legacy)
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	code, _, body := r2.raw(t, tok2, legacy.ID(), ping)
	assert.Equal(t, http.StatusNotFound, code, "r1's session on r2: %s", body)
	code, _, body = r1.raw(t, tok1, legacy.ID(), ping)
	assert.Equal(t, http.StatusOK, code, "r1's session on r1: %s", body)

	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		b, _ := json.Marshal(res.StructuredContent)
		var sc map[string]any
		_ = json.Unmarshal(b, &sc)
		return res, sc
	}
	on1, on2 := r1.connect(t, &tok1), r2.connect(t, &tok2)
	toolNames(t, on1)
	toolNames(t, on2)
	_, sc := call(on1, "begin", nil)
	h, _ := sc["transaction"].(string)
	require.True(t, strings.HasPrefix(h, "txn.r1_u-"), "handle %q starts with the replica id", h)

	res, sc := call(on2, "query", map[string]any{"transaction": h, "sql": "SELECT 1"})
	require.True(t, res.IsError, "r1's handle on r2")
	e, _ := sc["error"].(map[string]any)
	assert.Equal(t, "handleForeign", e["kind"])
	assert.Contains(t, e["message"], `replica "r1" and this is replica "r2"`)

	res, _ = call(on1, "query", map[string]any{"transaction": h, "sql": "SELECT 1"})
	assert.False(t, res.IsError, "r1's handle on r1: %v", res.Content)
}
