package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeOversized, end to end: one user's oversized data must not make
// another user's read-only describe_table write a line the gateway cannot
// read, which would end that user's session (404). The
// worker cuts every field, and an answer over the gateway's own limit
// (limits.max_worker_message_bytes, 1 MiB here) fails its request alone.
func TestServeOversized(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_LIMITS_MAX_WORKER_MESSAGE_BYTES": "1MiB"})
	call := func(cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any, error) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return nil, nil, err
		}
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var sc map[string]any
		require.NoError(t, json.Unmarshal(b, &sc))
		return res, sc, nil
	}

	alice := g.token(t, "alice", "mcp:use", "mcp:write")
	a := g.connectSession(t, &alice)
	long := strings.Repeat("d", 5<<20) // under the 8 MiB body limit
	for _, step := range []struct{ tool, sql string }{
		{"execute_sql", "CREATE TABLE big_default (a text DEFAULT '" + long + "')"},
		{"commit", ""},
	} {
		args := map[string]any{}
		if step.sql != "" {
			args["sql"] = step.sql
		}
		res, _, err := call(a, step.tool, args)
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %v", step.tool, res.Content)
	}

	bob := g.token(t, "bob", "mcp:use")
	b := g.connectSession(t, &bob)
	res, sc, err := call(b, "describe_table", map[string]any{"table": "big_default"})
	require.NoError(t, err, "bob's describe_table")
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, []any{"columns[0].default"}, sc["truncatedFields"])
	def := sc["columns"].([]any)[0].(map[string]any)["default"].(string)
	assert.True(t, strings.HasSuffix(def, "bytes]"), "the cut says so: %.40s…%s", def, def[max(len(def)-40, 0):])
	assert.Less(t, len(def), 300<<10)

	// About 2 MiB of rows, under the worker's caps but over the gateway's
	// 1 MiB: that request fails, the session does not.
	_, _, err = call(b, "query", map[string]any{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) SELECT printf('%.*c', 4000, 'x') FROM c", "limit": 500})
	var werr *jsonrpc.Error
	require.True(t, errors.As(err, &werr), "got %v, want a JSON-RPC error", err)
	assert.Equal(t, int64(-32603), werr.Code)
	assert.JSONEq(t, `"messageTooLarge"`, kindOf(t, werr.Data))
	assert.Contains(t, werr.Message, "limits.max_worker_message_bytes")
	assert.Equal(t, "bob", statusOf(t, b)["user"], "bob's session goes on")
	assert.Equal(t, "alice", statusOf(t, a)["user"], "alice's session goes on")
}
