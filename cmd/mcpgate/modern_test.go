package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeModernHandles drives MCP 2026-07-28 end to end through TLS and
// auth with the built-in worker: go-sdk clients at their defaults (no
// session) share the user's worker, so a transaction handle minted for one
// works for the user's other client; a read-only token's worker does not
// know it; a mirrored Mcp-Param-Transaction that disagrees with the body is
// refused before the worker sees it.
func TestServeModernHandles(t *testing.T) {
	g := startTLSGateway(t, nil)
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	first, second := g.connect(t, &tok), g.connect(t, &tok)
	require.Equal(t, "2026-07-28", first.InitializeResult().ProtocolVersion)
	// A client mirrors x-mcp-header arguments of the tools it has listed
	// (the go-sdk's does so only then); the gateway requires the header.
	toolNames(t, first)
	toolNames(t, second)

	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		b, _ := json.Marshal(res.StructuredContent)
		var sc map[string]any
		_ = json.Unmarshal(b, &sc)
		return res, sc
	}
	_, sc := call(first, "begin", nil)
	h, _ := sc["transaction"].(string)
	require.NotEmpty(t, h, "begin mints a handle: %v", sc)

	// The go-sdk client mirrors the x-mcp-header argument; the gateway
	// checks it and the worker runs the write in the handle's transaction.
	res, _ := call(second, "execute_sql", map[string]any{"transaction": h, "sql": "INSERT INTO customers (id, name, email) VALUES (9001, 'h', 'h@example.org')"})
	require.False(t, res.IsError, "the user's other client uses the handle: %v", res.Content)

	ro := g.token(t, "alice", "mcp:use")
	reader := g.connect(t, &ro)
	toolNames(t, reader)
	res, sc = call(reader, "query", map[string]any{"transaction": h, "sql": "SELECT 1"})
	assert.True(t, res.IsError, "a read-only token's worker never knew the handle")
	assert.Contains(t, sc["error"], "kind")

	// Hostile: the mirrored header names another transaction than the body.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query","arguments":{"transaction":"` + h + `","sql":"SELECT 1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, g.resource, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "query",
		"Mcp-Param-Transaction": "txn.other", "Authorization": "Bearer " + tok} {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", out)
	assert.Contains(t, string(out), `"code":-32020`)

	_, sc = call(first, "commit", map[string]any{"transaction": h})
	res, sc = call(second, "query", map[string]any{"sql": "SELECT count(*) FROM customers WHERE id = 9001"})
	require.False(t, res.IsError, "%v", res.Content)
	assert.EqualValues(t, 1, sc["rows"].([]any)[0].([]any)[0], "committed")
}
