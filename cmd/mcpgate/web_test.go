package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func (g *tlsGateway) fetch(t *testing.T, method, path string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+g.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Header.Del("Date")
	return resp.StatusCode, resp.Header, string(b)
}

// TestServeConnectPage: a browser opening / or /mcp gets the connect page
// before any token check; every MCP request gets what it got without the
// page, header for header and byte for byte.
func TestServeConnectPage(t *testing.T) {
	on := startTLSGateway(t, map[string]string{"MCPGATE_SERVER_TITLE": "Team <data>"})
	off := startTLSGateway(t, map[string]string{"MCPGATE_SERVER_TITLE": "Team <data>", "MCPGATE_WEB_ENABLED": "false"})

	for _, path := range []string{"/", "/mcp"} {
		status, h, body := on.fetch(t, "GET", path, map[string]string{"Accept": browserAccept}, "")
		require.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
		assert.Contains(t, body, "<h1>Team &lt;data&gt;</h1>")
		assert.Contains(t, body, on.resource)
		assert.Contains(t, body, on.issuer.URL)
		assert.Contains(t, body, "<code>mcp:write</code>")
		assert.Contains(t, body, "mcpgate install --client cursor --url "+on.resource)
	}
	status, _, _ := off.fetch(t, "GET", "/", map[string]string{"Accept": browserAccept}, "")
	assert.Equal(t, http.StatusNotFound, status, "web.enabled false: / is not routed")
	status, _, _ = off.fetch(t, "GET", "/mcp", map[string]string{"Accept": browserAccept}, "")
	assert.Equal(t, http.StatusUnauthorized, status, "web.enabled false: a browser is any client")

	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tt := range []struct {
		name, method, path, body string
		header                   map[string]string
	}{
		{"an MCP client's stream", "GET", "/mcp", "", map[string]string{"Accept": "text/event-stream"}},
		{"a browser-like GET with a session id", "GET", "/mcp", "", map[string]string{"Accept": browserAccept, "Mcp-Session-Id": "0123456789abcdef0123456789abcdef"}},
		{"a browser-like GET with a protocol version", "GET", "/mcp", "", map[string]string{"Accept": browserAccept, "MCP-Protocol-Version": "2025-11-25"}},
		{"a POST", "POST", "/mcp", ping, map[string]string{"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}},
		{"a POST that accepts html", "POST", "/mcp", ping, map[string]string{"Accept": browserAccept, "Content-Type": "application/json"}},
		{"a DELETE", "DELETE", "/mcp", "", map[string]string{"Accept": browserAccept}},
		{"a POST to /", "POST", "/", ping, map[string]string{"Accept": browserAccept}},
		{"the metadata", "GET", "/.well-known/oauth-protected-resource/mcp", "", map[string]string{"Accept": browserAccept}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, withToken := range []bool{false, true} {
				s1, h1, b1 := on.normalFetch(t, tt.method, tt.path, tt.header, tt.body, withToken)
				s2, h2, b2 := off.normalFetch(t, tt.method, tt.path, tt.header, tt.body, withToken)
				assert.Equal(t, s2, s1)
				assert.Equal(t, h2, h1)
				assert.Equal(t, b2, b1)
			}
		})
	}
}

// normalFetch is fetch with g's own token when withToken, and g's address
// and issuer replaced by placeholders, so that two gateways' answers
// compare.
func (g *tlsGateway) normalFetch(t *testing.T, method, path string, header map[string]string, body string, withToken bool) (int, http.Header, string) {
	t.Helper()
	h := map[string]string{}
	for k, v := range header {
		h[k] = v
	}
	if withToken {
		h["Authorization"] = "Bearer " + g.token(t, "alice", "mcp:use")
	}
	status, rh, b := g.fetch(t, method, path, h, body)
	norm := strings.NewReplacer(g.addr, "ADDR", g.issuer.URL, "ISSUER")
	for k, vs := range rh {
		for i := range vs {
			vs[i] = norm.Replace(vs[i])
		}
		rh[k] = vs
	}
	return status, rh, norm.Replace(b)
}
