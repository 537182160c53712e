package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNegotiate: only a browser's plain visit gets the page; every request
// an MCP client makes reaches the endpoint as it came.
func TestNegotiate(t *testing.T) {
	c, err := NewConnect(connectOptions())
	require.NoError(t, err)
	var reached int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusTeapot)
	})
	h := c.Negotiate(next)
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	tests := []struct {
		name   string
		method string
		header map[string]string
		page   bool
	}{
		{"a browser's visit", "GET", map[string]string{"Accept": browser}, true},
		{"text/html alone", "GET", map[string]string{"Accept": "text/html"}, true},
		{"an MCP client's stream", "GET", map[string]string{"Accept": "text/event-stream"}, false},
		{"html and a stream", "GET", map[string]string{"Accept": "text/html, text/event-stream"}, false},
		{"html and a malformed stream", "GET", map[string]string{"Accept": "text/html, text/event-stream;="}, false},
		{"a session's stream", "GET", map[string]string{"Accept": browser, "Mcp-Session-Id": "abc"}, false},
		{"a protocol version", "GET", map[string]string{"Accept": browser, "MCP-Protocol-Version": "2025-11-25"}, false},
		{"a resumption", "GET", map[string]string{"Accept": browser, "Last-Event-ID": "1"}, false},
		{"a token", "GET", map[string]string{"Accept": browser, "Authorization": "Bearer x"}, false},
		{"no Accept", "GET", nil, false},
		{"anything", "GET", map[string]string{"Accept": "*/*"}, false},
		{"a POST", "POST", map[string]string{"Accept": browser}, false},
		{"a DELETE", "DELETE", map[string]string{"Accept": browser}, false},
		{"a HEAD", "HEAD", map[string]string{"Accept": browser}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached
			res, body := get(t, h, tt.method, "/mcp", tt.header)
			if tt.page {
				assert.Equal(t, http.StatusOK, res.StatusCode)
				assert.Contains(t, body, "<h1>Team data</h1>")
				assert.Equal(t, before, reached)
				return
			}
			assert.Equal(t, http.StatusTeapot, res.StatusCode)
			assert.Equal(t, before+1, reached)
		})
	}
}
