package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// The MCP request parameters the gateway reads: a tools/call's tool name
// (for the read-only check) and a request's progress token (for routing).
// Everything else in params passes through unread.

// toolName reads the tool name of a tools/call's params the way a worker
// does: the member named exactly "name" (jsonrpc.MemberString). It reports
// ok only when the name is unambiguous: one member whose key equals "name"
// ignoring case, spelled exactly so, holding a string. encoding/json
// matches struct fields without regard to case and keeps the last
// duplicate, while SDKs match exactly, so {"name":"write","Name":"echo"}
// would otherwise pass the gateway's read-only check as echo and run as
// write.
func toolName(params json.RawMessage) (name string, ok bool) {
	return jsonrpc.MemberString(params, "name")
}

// progressToken returns the jsonrpc.Key of a decoded request's
// params._meta.progressToken (MCP §Progress), or "" when there is none. It
// reads only the members on the way to the token (a tools/call's arguments
// may be large) and leaves to decodeProgressToken whatever encoding/json
// might read differently.
func progressToken(m *jsonrpc.Message) string {
	if tok, ok := scanProgressToken(m.Params); ok {
		return tok
	}
	return decodeProgressToken(m.Params)
}

// scanProgressToken is decodeProgressToken's answer for params that are
// valid JSON (a member of a message jsonrpc.Decode read) with plain keys on
// the way: it reports false for anything encoding/json might read
// differently (a key spelled in another case or with escapes, a duplicate,
// a member of the wrong type, which makes decodeProgressToken return
// nothing).
func scanProgressToken(params json.RawMessage) (string, bool) {
	if len(params) == 0 {
		return "", true
	}
	meta, ok := jsonrpc.PlainMember(params, "_meta", nil)
	if !ok {
		return "", false
	}
	// decodeProgressToken decodes the name as a string too: any other type
	// fails it whole. A name spelled in another case or twice is left to it.
	if name, ok := jsonrpc.PlainMember(params, "name", nil); !ok || name != nil && name[0] != '"' && string(name) != "null" {
		return "", false
	}
	if meta == nil || string(meta) == "null" {
		return "", ok
	}
	if meta[0] != '{' {
		return "", false // decodeProgressToken fails whole on a _meta that is no object
	}
	tok, ok := jsonrpc.PlainMember(meta, "progressToken", nil)
	if !ok || tok == nil || string(tok) == "null" {
		return "", ok
	}
	return jsonrpc.Key(tok), true
}

// decodeProgressToken reads the progress token with encoding/json. It
// decodes a tools/call's name as well, as the gateway always has: params
// whose name is not a string have no token, so that no request routes its
// worker's messages differently than before.
func decodeProgressToken(params json.RawMessage) string {
	if len(params) == 0 {
		return ""
	}
	var p struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	if p.Meta.ProgressToken == nil || bytes.Equal(bytes.TrimSpace(p.Meta.ProgressToken), []byte("null")) {
		return ""
	}
	return jsonrpc.Key(p.Meta.ProgressToken)
}
