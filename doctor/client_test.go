package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// fixture is a gateway front (the real auth middleware and metadata)
// whose answers a test can replace path by path, with the real test
// issuer behind it.
type fixture struct {
	iss      *authtest.Issuer
	url      string
	client   *http.Client
	override map[string]http.HandlerFunc
	as       *httptest.Server // a stand-in authorization server
	asDoc    map[string]any   // its discovery document
}

func newFixture(t *testing.T, scopes ...string) *fixture {
	t.Helper()
	f := &fixture{iss: authtest.New(t), override: map[string]http.HandlerFunc{}}
	var real http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := f.override[r.URL.Path]; h != nil {
			h(w, r)
			return
		}
		real.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/mcp"
	if scopes == nil {
		scopes = []string{"mcp:use"}
	}
	a, err := auth.New(context.Background(), auth.Options{Issuer: f.iss.URL, Resource: f.url, RequiredScopes: scopes,
		UserClaim: "preferred_username", HTTPClient: f.iss.Client()})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	<-a.Ready()
	mux := http.NewServeMux()
	for _, p := range a.MetadataPaths() {
		mux.Handle(p, a.MetadataHandler())
	}
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})))
	real = mux

	f.as = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(f.asDoc)
	}))
	f.as.StartTLS()
	t.Cleanup(f.as.Close)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.iss.CertPEM())
	pool.AddCert(srv.Certificate())
	pool.AddCert(f.as.Certificate())
	f.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return f
}

// useAS points the metadata at the stand-in authorization server with doc
// (its issuer filled in unless doc names one).
func (f *fixture) useAS(doc map[string]any, scopes ...string) {
	if _, ok := doc["issuer"]; !ok {
		doc["issuer"] = f.as.URL
	}
	f.asDoc = doc
	meta := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": f.url, "authorization_servers": []string{f.as.URL}, "scopes_supported": scopes})
	}
	f.override["/.well-known/oauth-protected-resource/mcp"] = meta
	f.override["/.well-known/oauth-protected-resource"] = meta
}

func (f *fixture) check(t *testing.T, token string) *Report {
	r := CheckURL(context.Background(), URLOptions{URL: f.url, HTTPClient: f.client, Token: token, UserClaim: "preferred_username"})
	var b strings.Builder
	r.Print(&b)
	t.Logf("doctor:\n%s", b.String())
	return r
}

func goodAS() map[string]any {
	return map[string]any{"authorization_endpoint": "https://as/authorize", "token_endpoint": "https://as/token",
		"registration_endpoint": "https://as/register", "code_challenge_methods_supported": []string{"S256"},
		"authorization_response_iss_parameter_supported": true}
}

func TestDoctorHealthy(t *testing.T) {
	f := newFixture(t)
	tok, err := f.iss.Keycloak("alice", f.url, "mcp:use")
	require.NoError(t, err)
	r := f.check(t, tok)
	assert.False(t, r.Failed())
	for _, c := range []string{"reach", "tls", "challenge", "metadata", "metadata (root)", "authorization server", "pkce",
		"token iss", "token aud", "token exp", "token scopes", "token user", "token accepted"} {
		got, ok := r.Find(c)
		if assert.True(t, ok, c) {
			assert.Equal(t, OK, got.Status, "%s: %s", c, got.Detail)
		}
	}
}

// Each check, made to fail by one deliberately broken setting.
func TestDoctorNamesEachBrokenSetting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		check  string
		status Status
		break_ func(t *testing.T, f *fixture) (token string)
		fix    string
	}{
		{"remote plain http", "url", Fail, func(t *testing.T, f *fixture) string {
			f.url = "http://mcp.example.invalid/mcp"
			return ""
		}, "https"},
		{"plain http to a name that only starts like loopback", "url", Fail, func(t *testing.T, f *fixture) string {
			f.url = "http://127.0.0.1.example.invalid/mcp"
			return ""
		}, "https"},
		{"challenge without resource_metadata", "challenge", Warn, func(t *testing.T, f *fixture) string {
			f.override["/mcp"] = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer scope="mcp:use"`)
				w.WriteHeader(http.StatusUnauthorized)
			}
			return ""
		}, "public_url"},
		{"401 without Bearer", "challenge", Fail, func(t *testing.T, f *fixture) string {
			f.override["/mcp"] = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Basic realm="proxy"`)
				w.WriteHeader(http.StatusUnauthorized)
			}
			return ""
		}, "in front"},
		{"issuer unreachable", "authorization server", Fail, func(t *testing.T, f *fixture) string {
			f.iss.Stop()
			return ""
		}, "reachable from clients"},
		{"token from another issuer", "token iss", Fail, func(t *testing.T, f *fixture) string {
			other := authtest.New(t)
			tok, _ := other.Keycloak("alice", f.url, "mcp:use")
			return tok
		}, "agree"},
		{"gateway down", "reach", Fail, func(t *testing.T, f *fixture) string {
			f.url = "https://127.0.0.1:1/mcp"
			return ""
		}, "port"},
		{"untrusted certificate", "reach", Fail, func(t *testing.T, f *fixture) string {
			f.client = &http.Client{Timeout: 5 * time.Second}
			return ""
		}, "--ca-file"},
		{"no token needed", "challenge", Warn, func(t *testing.T, f *fixture) string {
			f.override["/mcp"] = func(w http.ResponseWriter, r *http.Request) {}
			return ""
		}, "auth.issuer"},
		{"not the endpoint", "challenge", Fail, func(t *testing.T, f *fixture) string {
			f.override["/mcp"] = http.NotFound
			return ""
		}, "/mcp"},
		{"public_url differs", "metadata", Fail, func(t *testing.T, f *fixture) string {
			f.override["/.well-known/oauth-protected-resource/mcp"] = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"resource":"https://localhost:8443/mcp","authorization_servers":["x"]}`))
			}
			return ""
		}, "public_url"},
		{"root metadata not passed by the proxy", "metadata (root)", Fail, func(t *testing.T, f *fixture) string {
			f.override["/.well-known/oauth-protected-resource"] = http.NotFound
			return ""
		}, "proxy"},
		{"issuer mismatch", "authorization server", Fail, func(t *testing.T, f *fixture) string {
			f.useAS(map[string]any{"issuer": "https://other.example/realms/mcp"})
			return ""
		}, "KC_HOSTNAME"},
		{"no PKCE", "pkce", Fail, func(t *testing.T, f *fixture) string {
			doc := goodAS()
			delete(doc, "code_challenge_methods_supported")
			f.useAS(doc)
			return ""
		}, "S256"},
		{"no registration", "registration", Warn, func(t *testing.T, f *fixture) string {
			doc := goodAS()
			delete(doc, "registration_endpoint")
			f.useAS(doc)
			return ""
		}, "--client-id"},
		{"no iss parameter", "iss parameter", Warn, func(t *testing.T, f *fixture) string {
			doc := goodAS()
			delete(doc, "authorization_response_iss_parameter_supported")
			f.useAS(doc)
			return ""
		}, "RFC 9207"},
		{"scope missing at the issuer", "scopes", Fail, func(t *testing.T, f *fixture) string {
			doc := goodAS()
			doc["scopes_supported"] = []string{"openid", "profile"}
			f.useAS(doc, "mcp:use", "profile")
			return ""
		}, "create them"},
		{"keycloak without profile", "keycloak profile", Warn, func(t *testing.T, f *fixture) string {
			doc := goodAS()
			doc["issuer"] = f.as.URL + "/realms/mcp"
			f.asDoc = doc
			meta := func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"resource": f.url, "authorization_servers": []string{f.as.URL + "/realms/mcp"}, "scopes_supported": []string{"mcp:use", "offline_access"}})
			}
			f.override["/.well-known/oauth-protected-resource/mcp"] = meta
			f.override["/.well-known/oauth-protected-resource"] = meta
			return ""
		}, "extra_scopes"},
		{"audience mapper missing", "token aud", Fail, func(t *testing.T, f *fixture) string {
			tok, _ := f.iss.Keycloak("alice", "account", "mcp:use")
			return tok
		}, "aud"},
		{"token expired", "token exp", Fail, func(t *testing.T, f *fixture) string {
			c := f.iss.KeycloakClaims("alice", f.url, "mcp:use")
			c["exp"] = time.Now().Add(-time.Hour).Unix()
			tok, _ := f.iss.Sign(c, authtest.SignOptions{})
			return tok
		}, "new token"},
		{"scope not granted", "token scopes", Warn, func(t *testing.T, f *fixture) string {
			tok, _ := f.iss.Keycloak("alice", f.url, "profile")
			return tok
		}, "--scope"},
		{"no user claim", "token user", Fail, func(t *testing.T, f *fixture) string {
			c := f.iss.KeycloakClaims("alice", f.url, "mcp:use")
			delete(c, "preferred_username")
			tok, _ := f.iss.Sign(c, authtest.SignOptions{})
			return tok
		}, "user_claim"},
		{"token refused", "token accepted", Fail, func(t *testing.T, f *fixture) string {
			tok, _ := f.iss.Keycloak("alice", "account", "mcp:use")
			return tok
		}, "above"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tok := tc.break_(t, f)
			r := f.check(t, tok)
			got, ok := r.Find(tc.check)
			require.True(t, ok, "no %q finding", tc.check)
			assert.Equal(t, tc.status, got.Status, got.Detail)
			assert.Contains(t, got.Fix, tc.fix)
		})
	}
}

func TestDoctorTLSExpiry(t *testing.T) {
	now := time.Now()
	for days, want := range map[int]Status{3: Fail, 14: Warn, 90: OK} {
		r := &Report{}
		tlsFindings(r, &tls.ConnectionState{Version: tls.VersionTLS13,
			PeerCertificates: []*x509.Certificate{{NotAfter: now.Add(time.Duration(days)*24*time.Hour + time.Hour)}}}, now)
		got, _ := r.Find("tls")
		assert.Equal(t, want, got.Status, "%d days: %s", days, got.Detail)
	}
}
