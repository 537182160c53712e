package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// callOK calls a tool that must succeed and returns its text and
// structured content (re-decoded as generic JSON).
func callOK(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: protocol error", name)
	text := resultText(res)
	require.False(t, res.IsError, "%s(%v) failed: %s", name, args, text)
	var sc map[string]any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &sc))
	}
	return text, sc
}

// callErr calls a tool that must fail and returns the error kind and
// message.
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (kind, message string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: protocol error", name)
	require.True(t, res.IsError, "%s(%v): got success %q, want an error", name, args, resultText(res))
	sc, ok := res.StructuredContent.(map[string]any)
	require.True(t, ok, "%s: structuredContent %T", name, res.StructuredContent)
	e := sc["error"].(map[string]any)
	kind, _ = e["kind"].(string)
	message, _ = e["message"].(string)
	return kind, message
}

func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// count runs `SELECT count(*) …` through the query tool.
func count(t *testing.T, cs *mcp.ClientSession, sql string) float64 {
	t.Helper()
	_, sc := callOK(t, cs, "query", map[string]any{"sql": sql})
	rows := sc["rows"].([]any)
	require.Len(t, rows, 1)
	return rows[0].([]any)[0].(float64)
}

// toolNames lists the session's tools.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}
