package worker

import (
	"encoding/json"
	"testing"
)

func TestStripModernMeta(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"only modern keys", `{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, `{"name":"x"}`, true},
		{"progress token stays", `{"_meta":{"progressToken":7,"io.modelcontextprotocol/logLevel":"info"}}`, `{"_meta":{"progressToken":7}}`, true},
		{"nothing to strip", `{"_meta":{"progressToken":7}}`, `{"_meta":{"progressToken":7}}`, false},
		{"no meta", `{"name":"x"}`, `{"name":"x"}`, false},
		{"not an object", `[1]`, `[1]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := StripModernMeta(json.RawMessage(tc.in))
			if ok != tc.ok {
				t.Errorf("got ok %v, want %v", ok, tc.ok)
			}
			var got, want any
			if json.Unmarshal(out, &got) != nil || json.Unmarshal([]byte(tc.want), &want) != nil {
				t.Fatalf("got %s, want %s", out, tc.want)
			}
			if g, w := mustJSON(got), mustJSON(want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
