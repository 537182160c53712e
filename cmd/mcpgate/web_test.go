package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/web"
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
	status, _, _ := on.fetch(t, "GET", "/admin", map[string]string{"Accept": browserAccept}, "")
	assert.Equal(t, http.StatusNotFound, status, "no operator view without web.admin")
	status, _, _ = off.fetch(t, "GET", "/", map[string]string{"Accept": browserAccept}, "")
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

// TestServeOperatorView: with web.admin, an operator logs in at the issuer,
// sees a live session of this replica, ends it (the session is gone), and
// the end is in the audit trail as that operator's action.
func TestServeOperatorView(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "cookie.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(strings.Repeat("c", 48)), 0o600))
	auditFile := filepath.Join(dir, "audit.jsonl")
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_WEB_ADMIN": "role:mcp-admin", "MCPGATE_WEB_CLIENT_ID": "mcpgate-admin",
		"MCPGATE_WEB_COOKIE_KEY_FILE": keyFile, "MCPGATE_AUDIT_PATH": auditFile,
		"MCPGATE_SERVER_REPLICA_ID": "r7",
	})
	g.issuer.SetUserClaims("ops", map[string]any{"realm_access": map[string]any{"roles": []any{"mcp-admin"}}})
	g.issuer.LoginUser = "ops"

	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	cs := g.connectSession(t, &tok)
	sid := cs.ID()
	require.NotEmpty(t, sid)

	noFollow := *g.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Get("https://" + g.addr + "/admin/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		login = c
	}
	require.NotNil(t, login)
	issuerClient := *g.issuer.Client()
	issuerClient.CheckRedirect = noFollow.CheckRedirect
	resp, err = issuerClient.Get(resp.Header.Get("Location"))
	require.NoError(t, err)
	resp.Body.Close()
	back := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(back, "https://"+g.addr+"/admin/callback?"), back)

	status, h, body := g.fetch(t, "GET", strings.TrimPrefix(back, "https://"+g.addr), map[string]string{"Cookie": login.Name + "=" + login.Value}, "")
	require.Equal(t, http.StatusOK, status, body)
	var session string
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == "__Host-mcpgate-admin" {
			session = c.Name + "=" + c.Value
		}
	}
	require.NotEmpty(t, session)

	status, _, body = g.fetch(t, "GET", "/admin", map[string]string{"Cookie": session, "Accept": browserAccept}, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "replica <strong>r7</strong> only")
	assert.Contains(t, body, "<code>"+sid[:8]+"</code>")
	assert.Contains(t, body, "Logged in as <strong>ops</strong>")
	assert.Contains(t, body, "days left", "the certificate's expiry")
	csrf := between(body, `name="csrf" value="`, `"`)
	require.NotEmpty(t, csrf)

	status, _, _ = g.fetch(t, "POST", "/admin/end", map[string]string{"Cookie": session, "Content-Type": "application/x-www-form-urlencoded"},
		url.Values{"id": {sid}, "csrf": {csrf}}.Encode())
	require.Equal(t, http.StatusOK, status, "redirected to the view")
	_, err = cs.ListTools(context.Background(), nil)
	require.Error(t, err, "the session was ended")

	b, err := os.ReadFile(auditFile)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"event":"admin/login","admin":"ops"`)
	assert.Contains(t, string(b), `"event":"admin/end","admin":"ops"`)
	assert.Contains(t, string(b), `"target":"`+sid[:8]+`","user":"alice"`)
	assert.NotContains(t, string(b), sid, "the whole session id stays out of the trail")
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}

// TestConnectPageSaysNoMoreThanTheMetadata: the page names scopes and
// toolsets, never a role or group a rule names, and tool names only with
// web.public_tools.
func TestConnectPageSaysNoMoreThanTheMetadata(t *testing.T) {
	cfg := config.Default()
	cfg.Server.PublicURL = "https://mcp.example.com"
	cfg.Auth.Issuer = "https://kc.example.com/realms/mcp"
	cfg.Auth.AuthorizationServers = []string{cfg.Auth.Issuer}
	cfg.Auth.RequiredScopes = []string{"mcp:use"}
	cfg.Auth.Policies = []config.Policy{
		{Scope: "mcp:browse", Toolsets: []string{"browsing"}},
		{Claim: "realm_access.roles", Values: []string{"secret-dba-role"}, Toolsets: []string{"mutation"}},
		{Claim: "groups", Values: []string{"/secret-group"}, Tools: []string{"execute_sql"}},
	}
	for _, public := range []bool{false, true} {
		cfg.Web.PublicTools = public
		opts, err := connectOptions(cfg, nil, cfg.Resource())
		require.NoError(t, err)
		require.NotEmpty(t, opts.Scopes)
		page, err := web.NewConnect(opts)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		body := rec.Body.String()
		assert.NotContains(t, body, "secret-dba-role")
		assert.NotContains(t, body, "secret-group")
		assert.NotContains(t, body, "mutation", "a toolset only a role grants is not listed")
		browsing, err := tools.ToolNames([]string{"browsing"})
		require.NoError(t, err)
		if public {
			assert.Contains(t, body, "<code>"+browsing[0]+"</code>")
		} else {
			assert.NotContains(t, body, browsing[0])
		}
		assert.NotContains(t, body, "execute_sql", "a tool only a group grants is not listed")
	}
}
