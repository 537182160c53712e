package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzBrowser: whatever the Accept header holds, a request that mentions an
// event stream, or carries an MCP header, never gets the page; one that
// gets it named text/html.
func FuzzBrowser(f *testing.F) {
	for _, s := range []string{
		"text/html", "text/html,application/xhtml+xml,*/*;q=0.8", "text/event-stream", "TEXT/HTML, Text/Event-Stream",
		"text/html;q=0.9, text/event-stream;=", "text/html, text/event-stream\x00", "*/*", "", ";;,,", "text/html ; charset=x",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, accept string, session bool) {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.Header["Accept"] = []string{accept}
		if session {
			r.Header.Set("Mcp-Session-Id", "x")
		}
		got := Browser(r)
		lower := strings.ToLower(accept)
		if got && (session || strings.Contains(lower, "event-stream") || !strings.Contains(lower, "text/html")) {
			t.Fatalf("Browser(Accept %q, session %v) = true", accept, session)
		}
	})
}
