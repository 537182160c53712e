package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// learnTools lists the server's tools on the bridge's own account (with
// the _meta of the request that needs them, so that a 2026-07-28 server
// sees the same version and capabilities) and learns their x-mcp-header
// marks; the answers are not relayed.
func (b *bridge) learnTools(ctx context.Context, req *jsonrpc.Message) {
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(req.Params, &p)
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{}
		if p.Meta != nil {
			params["_meta"] = p.Meta
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mcpgate-bridge-tools", "method": "tools/list", "params": params})
		if err != nil {
			return
		}
		m, _ := jsonrpc.Decode(line)
		b.mu.Lock()
		sid, version := b.sid, b.version
		b.mu.Unlock()
		resp, err := b.post(ctx, line, m, sid, version)
		if err != nil {
			return
		}
		cursor = ""
		take := func(msg []byte) error {
			a, err := jsonrpc.Decode(msg)
			if err != nil || !a.IsResponse() || !bytes.Equal(a.ID, m.ID) {
				return nil
			}
			b.params.learn(a.Result)
			var r struct {
				NextCursor string `json:"nextCursor"`
			}
			json.Unmarshal(a.Result, &r)
			cursor = r.NextCursor
			return nil
		}
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
			readSSE(resp.Body, b.o.MaxMessageBytes, take)
		} else if body, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.o.MaxMessageBytes))); err == nil {
			take(body)
		}
		resp.Body.Close()
		if cursor == "" {
			return
		}
	}
}
