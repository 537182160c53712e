package gateway

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// readOnlyRefusal answers a tools/call of a tool outside the read-only-safe
// set: -32601 with data.kind "readOnly", distinct from an unknown tool
// (-32602), and a message that says how to get write access (DESIGN
// decision 4).
func readOnlyRefusal(id json.RawMessage, tool string) []byte {
	return jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{
		Code: jsonrpc.CodeMethodNotFound,
		Message: "gateway: tool " + quote(tool) + " changes data and this session is read-only; " +
			"to use it, connect with a token that has the write scope, to a gateway that is not read-only",
		Data: map[string]string{"kind": "readOnly", "tool": tool},
	})
}

func quote(s string) string {
	b, _ := jsonrpc.Marshal(s)
	return string(b)
}

// filterTools keeps only read-only-safe tools in a tools/list result. Every
// other member of the result (nextCursor, _meta, …) passes unchanged. A
// result it cannot read becomes an empty list: fail closed.
func (g *Gateway) filterTools(result json.RawMessage) json.RawMessage {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(res["tools"], &tools)
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &named) == nil && g.safe[named.Name] {
			kept = append(kept, t)
		}
	}
	res["tools"], _ = jsonrpc.Marshal(kept)
	out, err := jsonrpc.Marshal(res)
	if err != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	return out
}
