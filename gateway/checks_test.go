package gateway

import (
	"net/http/httptest"
	"testing"
)

func TestOriginAllowed(t *testing.T) {
	g := &Gateway{opts: Options{AllowedOrigins: []string{"https://app.example.com/", "tools.example.org"}}}
	for origin, want := range map[string]bool{
		"":                               true, // not a browser
		"http://localhost:3000":          true,
		"http://127.0.0.1":               true,
		"http://[::1]:9999":              true,
		"https://app.example.com":        true,
		"http://app.example.com":         false, // another scheme is another origin
		"https://app.example.com:8443":   false,
		"https://tools.example.org":      true,
		"http://tools.example.org:8080":  true, // a bare host allows any scheme and port
		"https://evil.example.com":       false,
		"null":                           false,
		"https://localhost.evil.example": false,
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if got := g.originAllowed(r); got != want {
			t.Errorf("Origin %q: got %v, want %v", origin, got, want)
		}
	}
}

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		accept        []string
		jsonOK, sseOK bool
	}{
		{nil, true, true},
		{[]string{"application/json, text/event-stream"}, true, true},
		{[]string{"application/json", "text/event-stream"}, true, true},
		{[]string{"text/event-stream;q=0.9"}, false, true},
		{[]string{"application/*"}, true, false},
		{[]string{"*/*"}, true, true},
		{[]string{"text/html"}, false, false},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		for _, a := range tc.accept {
			r.Header.Add("Accept", a)
		}
		if j, s := accepts(r); j != tc.jsonOK || s != tc.sseOK {
			t.Errorf("Accept %q: got %v %v, want %v %v", tc.accept, j, s, tc.jsonOK, tc.sseOK)
		}
	}
}
