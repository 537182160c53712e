package bridge

import (
	"encoding/json"
	"testing"
)

// TestNameOfReadsTheExactMember: Mcp-Name mirrors the member the server
// reads, named exactly; a member that only matches ignoring case is not it.
func TestNameOfReadsTheExactMember(t *testing.T) {
	for _, tc := range []struct{ method, params, want string }{
		{"tools/call", `{"name":"echo"}`, "echo"},
		{"tools/call", `{"Name":"write"}`, ""},
		{"tools/call", `{"name":"echo","NAME":"write"}`, "echo"},
		{"prompts/get", `{"name":"p"}`, "p"},
		{"resources/read", `{"uri":"file:///a","URI":"file:///b"}`, "file:///a"},
		{"tools/list", `{"name":"x"}`, ""},
		{"tools/call", `{"name":7}`, ""},
	} {
		if got := nameOf(tc.method, json.RawMessage(tc.params)); got != tc.want {
			t.Errorf("nameOf(%s, %s) = %q, want %q", tc.method, tc.params, got, tc.want)
		}
	}
}
