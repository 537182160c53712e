package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithMarker(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{``, `{"_meta":{"io.mcpgate/requestId":7}}`},
		{`{}`, `{"_meta":{"io.mcpgate/requestId":7}}`},
		{`{"name":"q"}`, `{"_meta":{"io.mcpgate/requestId":7},"name":"q"}`},
		{`{"name":"q","_meta":{}}`, `{"name":"q","_meta":{"io.mcpgate/requestId":7}}`},
		{`{"name":"q","_meta":{"progressToken":1}}`, `{"name":"q","_meta":{"io.mcpgate/requestId":7,"progressToken":1}}`},
		{` { "_meta" : { } } `, `{"_meta":{"io.mcpgate/requestId":7}}`},
		// A client's own marker is replaced, not kept beside the worker's.
		{`{"_meta":{"io.mcpgate/requestId":3}}`, `{"_meta":{"io.mcpgate/requestId":7}}`},
		{`{"_meta":{"io.mcpgate/requestId":3},"_meta":{}}`, `{"_meta":{"io.mcpgate/requestId":7}}`},
	} {
		got, ok := withMarker(json.RawMessage(tc.params), json.RawMessage(`7`))
		require.True(t, ok, tc.params)
		assert.JSONEq(t, tc.want, string(got), "params %s gave %s", tc.params, got)
	}
}

// TestMarkedMessagesDuringACall: what a served server sends during a call
// (here a progress notification) carries the call's id in _meta, and the
// handler does not see the marker in its request.
func TestMarkedMessagesDuringACall(t *testing.T) {
	srv, _ := newMCPServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	seen := make(chan map[string]any, 1)
	srv.AddTool(&mcp.Tool{Name: "tick", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		seen <- req.Params.Meta
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Serve(ctx, srv, inR, outW); outW.Close() }()
	out := bufio.NewScanner(outR)
	send := func(line string) { _, err := inW.Write([]byte(line + "\n")); require.NoError(t, err) }
	next := func() map[string]any {
		require.True(t, out.Scan())
		var m map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &m))
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tick","arguments":{},"_meta":{"progressToken":"p","io.mcpgate/requestId":99}}}`)
	note := next()
	assert.Equal(t, "notifications/progress", note["method"])
	assert.Equal(t, map[string]any{"io.mcpgate/requestId": float64(7)}, note["params"].(map[string]any)["_meta"], "the call's id, not the client's value")
	assert.EqualValues(t, 7, next()["id"])
	assert.Equal(t, map[string]any{"progressToken": "p"}, <-seen, "the handler's request holds no marker")
	inW.Close()
}
