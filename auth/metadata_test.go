package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// hmacOnly builds an Authenticator that needs no issuer, for tests of
// what does not depend on keys.
func hmacOnly(t *testing.T, mod func(*auth.Options)) *auth.Authenticator {
	t.Helper()
	o := auth.Options{
		Issuer:         "https://kc.example.test/realms/mcp",
		Resource:       resource,
		RequiredScopes: []string{"mcp:use"},
		WriteScope:     "mcp:write",
		ExtraScopes:    []string{"profile"},
		HMACSecret:     []byte("0123456789abcdef0123456789abcdef"),
		Algorithms:     []string{"HS256"},
	}
	if mod != nil {
		mod(&o)
	}
	a, err := auth.New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

func TestMetadata(t *testing.T) {
	a := hmacOnly(t, func(o *auth.Options) { o.ResourceName = "mcpgate test" })
	want := `{
		"resource": "https://mcp.example.test/mcp",
		"authorization_servers": ["https://kc.example.test/realms/mcp"],
		"scopes_supported": ["mcp:use", "mcp:write", "profile"],
		"bearer_methods_supported": ["header"],
		"resource_name": "mcpgate test",
		"dpop_signing_alg_values_supported": ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"],
		"dpop_bound_access_tokens_required": false
	}`
	h := a.MetadataHandler()
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		t.Run("GET "+path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Origin", "http://client.example")
			h.ServeHTTP(rec, r)
			require.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
			assert.JSONEq(t, want, rec.Body.String())
		})
	}
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodHead, "/.well-known/oauth-protected-resource/mcp", 200, ""},
		{http.MethodOptions, "/.well-known/oauth-protected-resource/mcp", 204, "GET, HEAD, OPTIONS"},
		{http.MethodPost, "/.well-known/oauth-protected-resource/mcp", 405, ""},
		{http.MethodGet, "/.well-known/oauth-protected-resource/other", 404, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, tc.status, rec.Code)
			if tc.method == http.MethodHead || tc.method == http.MethodOptions {
				assert.Empty(t, rec.Body.String())
			}
			if tc.allow != "" {
				assert.Equal(t, tc.allow, rec.Header().Get("Access-Control-Allow-Methods"))
				assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
			}
		})
	}
}

func TestMetadataWithoutName(t *testing.T) {
	a := hmacOnly(t, func(o *auth.Options) {
		o.RequiredScopes, o.WriteScope, o.ExtraScopes = nil, "", nil
		o.AuthorizationServers = []string{"https://as1.example", "https://as2.example"}
	})
	rec := httptest.NewRecorder()
	a.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	assert.JSONEq(t, `{"resource":"https://mcp.example.test/mcp","authorization_servers":["https://as1.example","https://as2.example"],
		"scopes_supported":[],"bearer_methods_supported":["header"],
		"dpop_signing_alg_values_supported":["RS256","RS384","RS512","PS256","PS384","PS512","ES256","ES384","ES512","EdDSA"],
		"dpop_bound_access_tokens_required":false}`, rec.Body.String())
}

func TestMetadataURL(t *testing.T) {
	for _, tc := range []struct{ resource, path, url string }{
		{"https://mcp.example.test/mcp", "/.well-known/oauth-protected-resource/mcp", "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"},
		{"https://127.0.0.1:8443/mcp", "/.well-known/oauth-protected-resource/mcp", "https://127.0.0.1:8443/.well-known/oauth-protected-resource/mcp"},
		{"https://h.example/tenant/a/mcp", "/.well-known/oauth-protected-resource/tenant/a/mcp", "https://h.example/.well-known/oauth-protected-resource/tenant/a/mcp"},
		{"https://h.example/", "/.well-known/oauth-protected-resource", "https://h.example/.well-known/oauth-protected-resource"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			a := hmacOnly(t, func(o *auth.Options) { o.Resource = tc.resource })
			assert.Equal(t, tc.path, a.MetadataPath())
			assert.Equal(t, tc.url, a.MetadataURL())
			mux := http.NewServeMux() // panics if MetadataPaths repeats a path
			for _, p := range a.MetadataPaths() {
				mux.Handle(p, a.MetadataHandler())
			}
			for _, p := range []string{tc.path, auth.MetadataRootPath} {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				assert.Equal(t, http.StatusOK, rec.Code, p)
			}
		})
	}
}
