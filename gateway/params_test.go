package gateway

import (
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

func TestToolName(t *testing.T) {
	for _, tc := range []struct {
		params string
		name   string
		ok     bool
	}{
		{`{"name":"echo","arguments":{"name":"x"}}`, "echo", true},
		{`{"arguments":{},"name":"echo"}`, "echo", true},
		{`{"n\u0061me":"echo"}`, "echo", true},
		{`{"name":"write","Name":"echo"}`, "", false},
		{`{"Name":"echo"}`, "", false},
		{`{"name":"echo","name":"write"}`, "", false},
		{`{"name":7}`, "", false},
		{`{"arguments":{}}`, "", false},
		{`["name","echo"]`, "", false},
		{`{"name":"echo"`, "", false},
		{``, "", false},
	} {
		name, ok := toolName(json.RawMessage(tc.params))
		if ok != tc.ok || (ok && name != tc.name) {
			t.Errorf("toolName(%s): got %q %v, want %q %v", tc.params, name, ok, tc.name, tc.ok)
		}
	}
}

// TestProgressToken reads each params from a message decoded on
// jsonrpc.Decode's fast path and from one it leaves to encoding/json (an
// extra member), and holds the scan to decodeProgressToken on each.
func TestProgressToken(t *testing.T) {
	for _, tc := range []struct{ name, params, want string }{
		{"none", `{"name":"echo","arguments":{"text":"_meta"}}`, ``},
		{"number", `{"name":"echo","_meta":{"progressToken":5}}`, `5`},
		{"string", `{"_meta":{"progressToken":"p-1","x":{"progressToken":2}},"name":"echo"}`, `"p-1"`},
		{"spaces", `{ "_meta" : { "progressToken" : "a b" } }`, `"a b"`},
		{"object token", `{"_meta":{"progressToken":{ "a" : 1 }}}`, `{"a":1}`},
		{"null token", `{"_meta":{"progressToken":null}}`, ``},
		{"null meta", `{"_meta":null}`, ``},
		{"meta not object", `{"_meta":"x"}`, ``},
		{"meta array", `{"_meta":[1]}`, ``},
		{"meta other case", `{"_Meta":{"progressToken":1}}`, `1`},
		{"token other case", `{"_meta":{"progresstoken":1}}`, `1`},
		{"both cases", `{"_meta":{"progressToken":1},"_META":{"progressToken":2}}`, `2`},
		{"duplicate meta", `{"_meta":{"progressToken":1},"_meta":{"progressToken":2}}`, `2`},
		{"duplicate token", `{"_meta":{"progressToken":1,"progressToken":2}}`, `2`},
		{"escaped key", `{"_meta":{"progress\u0054oken":1}}`, `1`},
		{"name not string", `{"name":5,"_meta":{"progressToken":1}}`, ``},
		{"name other case not string", `{"NAME":[],"_meta":{"progressToken":1}}`, ``},
		{"name null", `{"name":null,"_meta":{"progressToken":1}}`, `1`},
		{"params array", `[1]`, ``},
		{"params null", `null`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeProgressToken(json.RawMessage(tc.params)); got != tc.want {
				t.Errorf("decodeProgressToken: got %q, want %q", got, tc.want)
			}
			for _, extra := range []string{``, `,"extra":1`} {
				m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + extra + `}`))
				if err != nil {
					t.Fatal(err)
				}
				if got := progressToken(m); got != tc.want {
					t.Errorf("progressToken (extra %q): got %q, want %q", extra, got, tc.want)
				}
			}
		})
	}
	if got := progressToken(&jsonrpc.Message{}); got != "" {
		t.Errorf("no params: got %q, want none", got)
	}
}
