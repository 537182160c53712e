package auth_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

const wantMetadataURL = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"

func TestChallenges(t *testing.T) {
	e := setup(t, nil)
	expired := e.iss.KeycloakClaims("alice", resource, full...)
	expired["exp"] = e.clock.Now().Add(-time.Minute).Unix()
	wrongAud := mint(t)(e.iss.Keycloak("alice", "https://127.0.0.1:9999/mcp", full...))
	low := mint(t)(e.iss.Keycloak("alice", resource, "profile"))

	const scope = `scope="mcp:use mcp:write profile offline_access"`
	const meta = `resource_metadata="` + wantMetadataURL + `"`
	for _, tc := range []struct {
		name      string
		authz     []string
		status    int
		challenge string
		body      string
	}{
		{"missing token", nil, 401,
			`Bearer ` + meta + `, ` + scope,
			`{"error":"unauthorized","error_description":"a bearer token is required in the Authorization header"}`},
		{"expired token", []string{"Bearer " + mint(t)(e.iss.Sign(expired, authtest.SignOptions{}))}, 401,
			`Bearer error="invalid_token", error_description="token has expired", ` + meta + `, ` + scope,
			`{"error":"invalid_token","error_description":"token has expired"}`},
		{"wrong audience", []string{"Bearer " + wrongAud}, 401,
			`Bearer error="invalid_token", error_description="token audience does not include this resource", ` + meta + `, ` + scope,
			`{"error":"invalid_token","error_description":"token audience does not include this resource"}`},
		{"two headers", []string{"Bearer a.b.c", "Bearer a.b.c"}, 401,
			`Bearer error="invalid_request", error_description="more than one Authorization header", ` + meta + `, ` + scope,
			`{"error":"invalid_request","error_description":"more than one Authorization header"}`},
		{"insufficient scope", []string{"Bearer " + low}, 403,
			`Bearer error="insufficient_scope", error_description="token lacks a required scope", ` + meta + `, ` + scope,
			`{"error":"insufficient_scope","error_description":"token lacks a required scope"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request(tc.authz...))
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, tc.challenge, rec.Header().Get("WWW-Authenticate"))
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
			assert.JSONEq(t, tc.body, rec.Body.String())
		})
	}
}

func TestChallengeWithoutScopes(t *testing.T) {
	e := setup(t, func(o *auth.Options) {
		o.RequiredScopes, o.WriteScope, o.ExtraScopes = nil, "", nil
	})
	rec := httptest.NewRecorder()
	e.a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request())
	assert.Equal(t, `Bearer resource_metadata="`+wantMetadataURL+`"`, rec.Header().Get("WWW-Authenticate"))

	// Without a write scope every session is read-write.
	p, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Keycloak("alice", resource))))
	assert.NoError(t, err)
	assert.False(t, p.ReadOnly)
}

// TestKeyBoundTokensRefused: a token bound to a key (RFC 7800 cnf) must be
// presented with proof of that key; as a plain Bearer token it is refused
// (RFC 9449 §7.1 for DPoP, RFC 8705 §3 for mTLS), saying why.
func TestKeyBoundTokensRefused(t *testing.T) {
	e := setup(t, nil)
	for _, tc := range []struct {
		name string
		cnf  any
		desc string
	}{
		{"DPoP", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}, "token is bound to a DPoP key (cnf.jkt, RFC 9449)"},
		{"mTLS", map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}, "token is bound to a client certificate (cnf.x5t#S256, RFC 8705)"},
		{"another confirmation method", map[string]any{"jwk": map[string]any{"kty": "EC"}}, "token is bound to a key (cnf, RFC 7800)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.iss.KeycloakClaims("alice", resource, full...)
			c["cnf"] = tc.cnf
			tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
			rec := httptest.NewRecorder()
			e.a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request("Bearer "+tok))
			assert.Equal(t, http.StatusUnauthorized, rec.Code)
			ch := rec.Header().Get("WWW-Authenticate")
			assert.Contains(t, ch, `error="invalid_token"`)
			assert.Contains(t, ch, tc.desc)
			assert.Contains(t, rec.Body.String(), tc.desc)
		})
	}
	t.Run("an empty cnf binds nothing", func(t *testing.T) {
		c := e.iss.KeycloakClaims("alice", resource, full...)
		c["cnf"] = map[string]any{}
		_, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Sign(c, authtest.SignOptions{}))))
		assert.NoError(t, err)
	})
	t.Run("a cnf that is not an object", func(t *testing.T) {
		c := e.iss.KeycloakClaims("alice", resource, full...)
		c["cnf"] = "jkt"
		_, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Sign(c, authtest.SignOptions{}))))
		assert.ErrorIs(t, err, auth.ErrClaims)
	})
}

// TestWriteScopeRequired: the runtime insufficient_scope answer names the
// required scopes and the write scope (MCP §Runtime Insufficient Scope
// Errors), and needs a request the middleware verified.
func TestWriteScopeRequired(t *testing.T) {
	e := setup(t, nil)
	ro := mint(t)(e.iss.Keycloak("alice", resource, "mcp:use"))
	rec := httptest.NewRecorder()
	e.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.True(t, auth.WriteScopeRequired(w, r, "ending this needs the write scope"))
	})).ServeHTTP(rec, request("Bearer "+ro))
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Equal(t, `Bearer error="insufficient_scope", error_description="ending this needs the write scope", `+
		`resource_metadata="`+wantMetadataURL+`", scope="mcp:use mcp:write"`, rec.Header().Get("WWW-Authenticate"))
	assert.JSONEq(t, `{"error":"insufficient_scope","error_description":"ending this needs the write scope"}`, rec.Body.String())

	rec = httptest.NewRecorder()
	assert.False(t, auth.WriteScopeRequired(rec, request(), "x"), "a request no authenticator verified")
	assert.Equal(t, 0, rec.Body.Len())
}
