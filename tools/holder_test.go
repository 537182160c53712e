package tools_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/workerproto"
)

// TestHandleBoundToHolder: a handle begun under one holder (the key the
// gateway says the request proved) answers a call under another holder,
// or under none, exactly as a handle never minted, and cannot be ended by
// it; under its own holder it works.
func TestHandleBoundToHolder(t *testing.T) {
	cs := perUserWorker(t, dbtest.Config(t, "sqlite"), "u-0123", false, tools.TransactionOptions{})
	call := func(holder, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: tool, Arguments: args}
		if holder != "" {
			p.Meta = mcp.Meta{workerproto.MetaHolder: holder}
		}
		res, err := cs.CallTool(t.Context(), p)
		require.NoError(t, err)
		return res
	}
	kind := func(res *mcp.CallToolResult) string {
		if !res.IsError {
			return ""
		}
		k, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any)["kind"].(string)
		return k
	}
	res := call("jkt:A", "begin", map[string]any{})
	require.False(t, res.IsError)
	h := res.StructuredContent.(map[string]any)["transaction"].(string)
	q := map[string]any{"transaction": h, "sql": customers}

	never := call("", "query", map[string]any{"transaction": "txn.u-0123.AAAAAAAAAAAAAAAAAAAAAA", "sql": customers})
	for _, holder := range []string{"", "jkt:B", "x5t:A", "jkt:A x5t:C", "JKT:A"} {
		got := call(holder, "query", q)
		assert.Equal(t, "handleUnknown", kind(got), "holder %q", holder)
		assert.Equal(t, never.Content, got.Content, "holder %q: the same answer as a handle never minted", holder)
		assert.Equal(t, "handleUnknown", kind(call(holder, "commit", map[string]any{"transaction": h})), "holder %q", holder)
	}
	assert.Empty(t, kind(call("jkt:A", "query", q)), "its own holder")
	assert.Empty(t, kind(call("jkt:A", "abort", map[string]any{"transaction": h})))
	assert.Empty(t, kind(call("jkt:B", "query", map[string]any{"sql": customers})), "any holder calls without a handle")
}
