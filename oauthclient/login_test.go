package oauthclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// resourceServer is a protected MCP endpoint: the real auth middleware and
// RFC 9728 metadata in front of a handler that says who called.
type resourceServer struct {
	URL    string // the resource, https://127.0.0.1:PORT/mcp
	iss    *authtest.Issuer
	client *http.Client // trusts the server and the issuer
}

func startResource(t *testing.T) *resourceServer {
	t.Helper()
	iss := authtest.New(t)
	var handler http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	rs := &resourceServer{URL: srv.URL + "/mcp", iss: iss}
	a, err := auth.New(context.Background(), auth.Options{Issuer: iss.URL, Resource: rs.URL,
		RequiredScopes: []string{"mcp:use"}, WriteScope: "mcp:write", UserClaim: "preferred_username", HTTPClient: iss.Client()})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	<-a.Ready()
	mux := http.NewServeMux()
	for _, p := range a.MetadataPaths() {
		mux.Handle(p, a.MetadataHandler())
	}
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.PrincipalFrom(r.Context())
		w.Write([]byte(p.UserID))
	})))
	handler = mux
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(iss.CertPEM())
	pool.AddCert(srv.Certificate())
	rs.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return rs
}

// browser is a fake user agent: it follows the authorization endpoint's
// redirect to the loopback listener, as a browser would after approval.
func (rs *resourceServer) browser(t *testing.T) func(string) error {
	return func(u string) error {
		resp, err := rs.client.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
}

func (rs *resourceServer) call(t *testing.T, token string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, rs.URL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := rs.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b := make([]byte, 100)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}

func TestLoginThenToken(t *testing.T) {
	rs := startResource(t)
	rs.iss.LoginUser = "carol"
	cache := Cache{Path: filepath.Join(t.TempDir(), "mcpgate", "tokens.json")}

	d, err := Discover(context.Background(), rs.client, rs.URL)
	require.NoError(t, err)
	assert.Equal(t, rs.iss.URL, d.Server.Issuer)
	assert.Equal(t, "mcp:use mcp:write", d.ChallengeScope)

	e, err := Login(context.Background(), LoginOptions{Resource: rs.URL, HTTPClient: rs.client, OpenBrowser: rs.browser(t)})
	require.NoError(t, err)
	assert.True(t, e.Registered, "dynamic registration")
	assert.Equal(t, []string{"mcp:use", "mcp:write"}, e.Scopes, "scopes from the challenge")
	require.NoError(t, cache.Put(e))
	st, err := os.Stat(cache.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	code, user := rs.call(t, e.AccessToken)
	assert.Equal(t, http.StatusOK, code, "the token's aud is the resource (RFC 8707)")
	assert.Equal(t, "carol", user)

	ts, err := NewTokenSource(cache, rs.client, rs.URL)
	require.NoError(t, err)
	tok, err := ts.Token()
	require.NoError(t, err)
	assert.Equal(t, e.AccessToken, tok.AccessToken, "a valid cached token is used as is")
	assert.Zero(t, rs.iss.Refreshes())

	// An expired token is refreshed, and the new one is cached.
	rs.iss.AccessTokenTTL = time.Hour
	tok, err = ts.Refresh(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, e.AccessToken, tok.AccessToken)
	assert.Equal(t, 1, rs.iss.Refreshes())
	again, err := cache.Lookup(rs.URL)
	require.NoError(t, err)
	assert.Equal(t, tok.AccessToken, again.AccessToken)
	assert.NotEqual(t, e.RefreshToken, again.RefreshToken, "the rotated refresh token is kept")
	code, _ = rs.call(t, tok.AccessToken)
	assert.Equal(t, http.StatusOK, code)

	// A second login reuses the registered client and its port.
	e2, err := Login(context.Background(), LoginOptions{Resource: rs.URL, HTTPClient: rs.client, OpenBrowser: rs.browser(t), Previous: again})
	require.NoError(t, err)
	assert.Equal(t, e.ClientID, e2.ClientID)

	_, err = NewTokenSource(cache, rs.client, "https://elsewhere.example/mcp")
	require.ErrorIs(t, err, ErrNotLoggedIn)
}

func TestTokenExpiredRefreshTokenAsksForLogin(t *testing.T) {
	rs := startResource(t)
	cache := Cache{Path: filepath.Join(t.TempDir(), "tokens.json")}
	e, err := Login(context.Background(), LoginOptions{Resource: rs.URL, HTTPClient: rs.client, OpenBrowser: rs.browser(t)})
	require.NoError(t, err)
	e.Expiry = time.Now().Add(-time.Minute)
	e.RefreshToken = "revoked"
	require.NoError(t, cache.Put(e))
	ts, err := NewTokenSource(cache, rs.client, rs.URL)
	require.NoError(t, err)
	_, err = ts.Token()
	require.ErrorIs(t, err, ErrRefresh)
}

// Hostile: a redirect whose iss names another server is a mix-up attack
// (RFC 9207 §2.4); one without iss from a server that promises it too; a
// redirect with another login's state is ignored, not taken.
func TestLoginRedirectChecks(t *testing.T) {
	as := ServerMetadata{Issuer: "https://as.example", IssParameterSupported: true}
	for name, tc := range map[string]struct {
		q    url.Values
		want error
	}{
		"good":        {url.Values{"state": {"s"}, "code": {"c"}, "iss": {"https://as.example"}}, nil},
		"other iss":   {url.Values{"state": {"s"}, "code": {"c"}, "iss": {"https://evil.example"}}, ErrAuthorization},
		"two iss":     {url.Values{"state": {"s"}, "code": {"c"}, "iss": {"https://as.example", "https://evil.example"}}, ErrAuthorization},
		"missing iss": {url.Values{"state": {"s"}, "code": {"c"}}, ErrAuthorization},
		"wrong state": {url.Values{"state": {"x"}, "code": {"c"}, "iss": {"https://as.example"}}, errWrongState},
		"error":       {url.Values{"state": {"s"}, "error": {"access_denied"}, "iss": {"https://as.example"}}, ErrAuthorization},
		"no code":     {url.Values{"state": {"s"}, "iss": {"https://as.example"}}, ErrAuthorization},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkRedirect(tc.q, "s", as)
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
}

func TestDiscoverRefusesAMismatchedResource(t *testing.T) {
	rs := startResource(t)
	// The same server asked about another path: its metadata names /mcp.
	other := rs.URL + "-other"
	_, err := Discover(context.Background(), rs.client, other)
	require.Error(t, err)
}

func TestCacheRefusesAWorldReadableFile(t *testing.T) {
	c := Cache{Path: filepath.Join(t.TempDir(), "tokens.json")}
	require.NoError(t, c.Put(&Entry{Issuer: "i", Resource: "r", AccessToken: "t"}))
	require.NoError(t, os.Chmod(c.Path, 0o644))
	_, err := c.Lookup("r")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chmod 600")
}

func TestChallengeParam(t *testing.T) {
	h := `Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", scope="a b", error="invalid_token", error_description="x \"y\""`
	assert.Equal(t, "https://h/.well-known/oauth-protected-resource/mcp", ChallengeParam(h, "resource_metadata"))
	assert.Equal(t, "a b", ChallengeParam(h, "scope"))
	assert.Equal(t, `x "y"`, ChallengeParam(h, "error_description"))
	assert.Equal(t, "", ChallengeParam(h, "realm"))
}

func TestLoginWithAGivenClientID(t *testing.T) {
	rs := startResource(t)
	e, err := Login(context.Background(), LoginOptions{Resource: rs.URL, HTTPClient: rs.client, OpenBrowser: rs.browser(t),
		ClientID: "preregistered", Scopes: []string{"mcp:use"}})
	require.NoError(t, err)
	assert.Equal(t, "preregistered", e.ClientID)
	assert.False(t, e.Registered)
	code, _ := rs.call(t, e.AccessToken)
	assert.Equal(t, http.StatusOK, code)
}

// Keycloak's anonymous registration policies answer 403; the error says
// which policy to look at, or to pass --client-id.
func TestRegistrationRefusedNamesTheFix(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"insufficient_scope","error_description":"Policy 'Trusted Hosts' rejected request to client-registration service. Details: Host not trusted."}`))
	}))
	defer srv.Close()
	_, _, err := register(context.Background(), srv.Client(), srv.URL, "mcpgate", "http://127.0.0.1:1234/callback")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Trusted Hosts")
	assert.Contains(t, err.Error(), "--client-id")
}

// Two processes share one login (two bridges, or a bridge and mcpgate
// token) and the issuer rotates refresh tokens: the one that refreshes
// second must take the other's result from the cache rather than spend a
// refresh token that is already gone.
func TestTokenSourcesShareARotatingLogin(t *testing.T) {
	rs := startResource(t)
	rs.iss.AccessTokenTTL = 5 * time.Second // inside oauth2's margin: every use refreshes
	cache := Cache{Path: filepath.Join(t.TempDir(), "tokens.json")}
	e, err := Login(context.Background(), LoginOptions{Resource: rs.URL, HTTPClient: rs.client, OpenBrowser: rs.browser(t)})
	require.NoError(t, err)
	require.NoError(t, cache.Put(e))
	a, err := NewTokenSource(cache, rs.client, rs.URL)
	require.NoError(t, err)
	b, err := NewTokenSource(cache, rs.client, rs.URL)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		ta, err := a.Token()
		require.NoError(t, err, "round %d, a", i)
		tb, err := b.Token()
		require.NoError(t, err, "round %d, b", i)
		for _, tok := range []string{ta.AccessToken, tb.AccessToken} {
			code, _ := rs.call(t, tok)
			assert.Equal(t, http.StatusOK, code)
		}
	}
	// A spent refresh token everywhere still means: log in again.
	stale := b.Entry()
	stale.RefreshToken, stale.AccessToken = "gone", "x"
	require.NoError(t, cache.Put(&stale))
	_, err = b.Token()
	require.ErrorIs(t, err, ErrRefresh)
}
