package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdminForgedCookies: a session cookie signed with another key,
// altered after signing, expired, or without a CSRF token gets no view:
// the visitor is sent to log in, and nothing of the gateway is shown.
func TestAdminForgedCookies(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	good := session{User: "alice", Subject: "s", Issuer: f.iss.URL, CSRF: "c", Expires: f.now.Add(time.Hour).Unix()}
	encode := func(s signer, name string, v any) string {
		c, err := s.encode(name, v)
		require.NoError(t, err)
		return c
	}
	valid := encode(f.admin.cookie, sessionCookie, good)
	payload, sig, _ := strings.Cut(valid, ".")
	b, _ := base64.RawURLEncoding.DecodeString(payload)
	altered := strings.Replace(string(b), `"alice"`, `"mallory"`, 1)
	expired, noCSRF := good, good
	expired.Expires = f.now.Add(-time.Second).Unix()
	noCSRF.CSRF = ""
	for name, value := range map[string]string{
		"another key":          encode(signer{key: []byte(strings.Repeat("x", 32))}, sessionCookie, good),
		"altered":              base64.RawURLEncoding.EncodeToString([]byte(altered)) + "." + sig,
		"expired":              encode(f.admin.cookie, sessionCookie, expired),
		"no CSRF token":        encode(f.admin.cookie, sessionCookie, noCSRF),
		"signed as the login":  encode(f.admin.cookie, loginCookie, good),
		"no signature":         payload,
		"an empty signature":   payload + ".",
		"two dots":             valid + ".x",
		"JSON with extra keys": encode(f.admin.cookie, sessionCookie, json.RawMessage(`{"u":"alice","c":"c","e":1}`)),
	} {
		t.Run(name, func(t *testing.T) {
			resp := f.do(t, "GET", "/admin", []*http.Cookie{{Name: sessionCookie, Value: value}}, nil, nil)
			assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
			assert.Equal(t, "/admin/login", resp.Header.Get("Location"))
			assert.NotContains(t, readBody(t, resp), "bob")
		})
	}
	resp := f.do(t, "GET", "/admin", []*http.Cookie{{Name: sessionCookie, Value: valid}}, nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the well-signed cookie beside them")
}

// TestAdminAnotherLoginsCSRF: the CSRF token of one login does not carry a
// form of another login of the same operator.
func TestAdminAnotherLoginsCSRF(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	first := cookieNamed(f.login(t, "alice"), sessionCookie)
	second := cookieNamed(f.login(t, "alice"), sessionCookie)
	require.NotNil(t, first)
	require.NotNil(t, second)
	var s2 session
	require.NoError(t, f.admin.cookie.decode(sessionCookie, second.Value, &s2))
	resp := f.do(t, "POST", "/admin/end", []*http.Cookie{first}, url.Values{"id": {f.src.live[0].ID}, "csrf": {s2.CSRF}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, f.src.ended)
}

// TestAdminIgnoresMCPTokens: an MCP access token opens nothing of the
// operator view; only its own login does.
func TestAdminIgnoresMCPTokens(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	tok, err := f.iss.Keycloak("mallory", "https://mcp.example.test/mcp", "mcp:use", "mcp:write")
	require.NoError(t, err)
	for _, scheme := range []string{"Bearer ", "DPoP "} {
		h := map[string]string{"Authorization": scheme + tok}
		resp := f.do(t, "GET", "/admin", nil, nil, h)
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
		assert.Equal(t, "/admin/login", resp.Header.Get("Location"))
		resp = f.do(t, "POST", "/admin/end", nil, url.Values{"id": {f.src.live[0].ID}, "csrf": {"x"}}, h)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	assert.Empty(t, f.src.ended)
}

// TestAdminNoRedirectElsewhere: the login's redirect_uri is the configured
// one whatever the Host header, no parameter chooses where a login or a
// form ends up, and the page after login moves on to /admin only.
func TestAdminNoRedirectElsewhere(t *testing.T) {
	f := newAdminFixture(t, "role:mcp-admin")
	req, err := http.NewRequest("GET", f.srv.URL+"/admin/login?next=https://evil.example/&return_to=https://evil.example/&redirect_uri=https://evil.example/cb", nil)
	require.NoError(t, err)
	req.Host = "evil.example"
	req.Header.Set("X-Forwarded-Host", "evil.example")
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(u.String(), f.iss.URL), u.String())
	assert.Equal(t, f.srv.URL+"/admin/callback", u.Query().Get("redirect_uri"))
	assert.NotContains(t, u.String(), "evil")

	lc := cookieNamed(resp, loginCookie)
	back := f.authorize(t, "alice", u)
	resp = f.do(t, "GET", "/admin/callback?"+back.RawQuery+"&next=https://evil.example/", []*http.Cookie{lc}, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readBody(t, resp)
	assert.NotContains(t, body, "evil")
	assert.Contains(t, body, `url=/admin"`)

	sc := cookieNamed(resp, sessionCookie)
	require.NotNil(t, sc)
	var s session
	require.NoError(t, f.admin.cookie.decode(sessionCookie, sc.Value, &s))
	for _, path := range []string{"/admin/end?next=https://evil.example/", "/admin/logout?next=https://evil.example/"} {
		resp = f.do(t, "POST", path, []*http.Cookie{sc}, url.Values{"id": {"none"}, "csrf": {s.CSRF}, "next": {"https://evil.example/"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		assert.NotContains(t, resp.Header.Get("Location"), "evil", path)
	}
}

// TestAdminRefusalNamesNoRole: a login refused the operator view is not
// told which role or group it lacks: like the roles and groups of access
// rules, web.admin's is not public. The log and the audit trail say it.
func TestAdminRefusalNamesNoRole(t *testing.T) {
	for _, require_ := range []string{"role:mcp-admin", "group:ops-secret"} {
		f := newAdminFixture(t, require_)
		resp := f.login(t, "mallory")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, require_)
		body := readBody(t, resp)
		assert.Contains(t, body, "may not open the operator view")
		_, name, _ := strings.Cut(require_, ":")
		assert.False(t, strings.Contains(body, name), "the refusal names %s", require_)
	}
}
