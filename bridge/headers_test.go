package bridge

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNameOfReadsTheExactMember: Mcp-Name mirrors the member the server
// reads, named exactly; a member that only matches ignoring case is not it,
// and a name the body holds twice or in two spellings gets no header (no
// header could say which one the server reads).
func TestNameOfReadsTheExactMember(t *testing.T) {
	for _, tc := range []struct{ method, params, want string }{
		{"tools/call", `{"name":"echo"}`, "echo"},
		{"tools/call", `{"Name":"write"}`, ""},
		{"tools/call", `{"name":"echo","NAME":"write"}`, ""},
		{"tools/call", `{"name":"echo","name":"write"}`, ""},
		{"tools/call", `{"n\u0061me":"write"}`, "write"}, // the key a server decodes
		{"prompts/get", `{"name":"p"}`, "p"},
		{"resources/read", `{"uri":"file:///a","URI":"file:///b"}`, ""},
		{"resources/read", `{"uri":"file:///a"}`, "file:///a"},
		{"tools/list", `{"name":"x"}`, ""},
		{"tools/call", `{"name":7}`, ""},
	} {
		if got := nameOf(tc.method, json.RawMessage(tc.params)); got != tc.want {
			t.Errorf("nameOf(%s, %s) = %q, want %q", tc.method, tc.params, got, tc.want)
		}
	}
}

// TestParamHeadersReadExactMembers: Mcp-Param headers mirror the tool and
// the arguments as the gateway reads them (jsonrpc.Member): a tool named
// only in another case, or an argument held twice or in two spellings,
// gets no header, rather than one for the member encoding/json happens to
// keep.
func TestParamHeadersReadExactMembers(t *testing.T) {
	var p paramHeaders
	p.learn(json.RawMessage(`{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}}}]}`))
	for _, tc := range []struct {
		params string
		want   map[string]string
	}{
		{`{"name":"t","arguments":{"region":"eu","opts":{"n":7}}}`, map[string]string{"Region": "eu", "N": "7"}},
		{`{"name":"t","arguments":{"region":true}}`, map[string]string{"Region": "true"}},
		{`{"Name":"t","arguments":{"region":"eu"}}`, nil},
		{`{"name":"t","NAME":"t","arguments":{"region":"eu"}}`, nil},
		{`{"name":"t","arguments":{"region":"eu","region":"us"}}`, nil},
		{`{"name":"t","arguments":{"region":"eu","Region":"us"}}`, nil},
		{`{"name":"t","arguments":{"opts":{"n":1,"N":2}}}`, nil},
		{`{"name":"t","arguments":{"region":"eu"},"Arguments":{"region":"us"}}`, nil},
		{`{"name":"t","arguments":{"region":null,"opts":"x"}}`, nil},
		{`{"name":"t","arguments":[1]}`, nil},
	} {
		h := http.Header{}
		p.set(h, json.RawMessage(tc.params))
		got := map[string]string{}
		for k := range h {
			got[strings.TrimPrefix(k, "Mcp-Param-")] = h.Get(k)
		}
		if len(got) != len(tc.want) {
			t.Errorf("set(%s) = %v, want %v", tc.params, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("set(%s) = %v, want %v", tc.params, got, tc.want)
			}
		}
	}
}
