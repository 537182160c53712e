package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBrowserHostile: a GET that carries anything an MCP client of either
// protocol generation sends is an MCP client's, however its headers are
// spelled or split; only the plain visit is a browser's.
func TestBrowserHostile(t *testing.T) {
	const html = "text/html,application/xhtml+xml;q=0.9"
	for _, tt := range []struct {
		name   string
		header http.Header
		page   bool
	}{
		{"a plain visit", http.Header{"Accept": {html}}, true},
		{"a 2026 method header", http.Header{"Accept": {html}, "Mcp-Method": {"subscriptions/listen"}}, false},
		{"a 2026 name header", http.Header{"Accept": {html}, "Mcp-Name": {"echo"}}, false},
		{"an empty session header", http.Header{"Accept": {html}, "Mcp-Session-Id": {""}}, false},
		{"an empty Authorization", http.Header{"Accept": {html}, "Authorization": {""}}, false},
		{"a stream in a second Accept", http.Header{"Accept": {html, "TEXT/EVENT-STREAM"}}, false},
		{"a stream as a parameter", http.Header{"Accept": {"text/html;q=0.1;x=text/event-stream"}}, false},
		{"html in upper case", http.Header{"Accept": {"TEXT/HTML"}}, true},
		{"html as a parameter only", http.Header{"Accept": {"application/json;x=text/html"}}, false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "https://mcp.example.com/mcp", nil)
		for k, v := range tt.header {
			for _, s := range v {
				r.Header.Add(k, s)
			}
		}
		assert.Equal(t, tt.page, Browser(r), tt.name)
	}
}
