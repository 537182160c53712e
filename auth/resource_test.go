package auth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestForResourceAudienceIsolation: two resources of one issuer share its
// keys, and a token minted for one is refused by the other, with a
// challenge naming the other's own metadata and scopes.
func TestForResourceAudienceIsolation(t *testing.T) {
	e := setup(t, nil)
	const dbRes, ghRes = "https://mcp.example.test/mcp/db", "https://mcp.example.test/mcp/github"
	db, err := e.a.ForResource(auth.Resource{Resource: dbRes, RequiredScopes: []string{"db:use"}, WriteScope: "db:write"})
	require.NoError(t, err)
	gh, err := e.a.ForResource(auth.Resource{Resource: ghRes, RequiredScopes: []string{"github:use"}, InitialScopes: []string{"github:use"}})
	require.NoError(t, err)
	fetches := e.iss.JWKSFetches()

	dbTok := mint(t)(e.iss.Keycloak("alice", dbRes, "db:use", "db:write"))
	p, err := db.Authenticate(request("Bearer " + dbTok))
	require.NoError(t, err)
	assert.False(t, p.ReadOnly)

	// The same token, holding every scope github asks for too, is not for it.
	both := mint(t)(e.iss.Keycloak("alice", dbRes, "db:use", "github:use"))
	_, err = gh.Authenticate(request("Bearer " + both))
	require.ErrorIs(t, err, auth.ErrAudience)
	// Nor for the gateway's own /mcp resource.
	_, err = e.a.Authenticate(request("Bearer " + dbTok))
	require.ErrorIs(t, err, auth.ErrAudience)

	w := httptest.NewRecorder()
	gh.WriteError(w, err)
	assert.Equal(t, 401, w.Code)
	ch := w.Header().Get("WWW-Authenticate")
	assert.Contains(t, ch, `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp/github"`)
	assert.Contains(t, ch, `scope="github:use"`)
	assert.NotContains(t, ch, "db:")

	// A token carrying both audiences is accepted by each, with each
	// resource's own rights: read-write at db, and github has no write
	// scope at all.
	claims := e.iss.KeycloakClaims("alice", dbRes, "db:use", "github:use")
	claims["aud"] = []string{dbRes, ghRes}
	twoAud := mint(t)(e.iss.Sign(claims, authtest.SignOptions{}))
	p, err = gh.Authenticate(request("Bearer " + twoAud))
	require.NoError(t, err)
	assert.Equal(t, "alice", p.UserID)
	p, err = db.Authenticate(request("Bearer " + twoAud))
	require.NoError(t, err)
	assert.True(t, p.ReadOnly, "db:write is not on the token")

	// github's required scope is github's: a db token lacks it.
	ghOnlyDB := mint(t)(e.iss.Keycloak("alice", ghRes, "db:use"))
	_, err = gh.Authenticate(request("Bearer " + ghOnlyDB))
	require.True(t, errors.Is(err, auth.ErrInsufficientScope), "got %v", err)

	assert.Equal(t, fetches, e.iss.JWKSFetches(), "a derived resource fetched the keys again")
	assert.Equal(t, e.a.Ready(), db.Ready())
	require.NoError(t, db.Close())
	// Closing a derived one leaves the shared keys working.
	_, err = e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Keycloak("bob", resource, "mcp:use"))))
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	gh.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp/github", nil))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	assert.Equal(t, ghRes, doc["resource"])
	assert.Equal(t, []any{"github:use"}, doc["scopes_supported"])
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource/mcp/github", auth.MetadataRootPath}, gh.MetadataPaths())
}

func TestForResourceRefusesBadOptions(t *testing.T) {
	e := setup(t, nil)
	_, err := e.a.ForResource(auth.Resource{Resource: "not a url", WriteScope: "has space"})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "resource") && strings.Contains(err.Error(), "write scope"), "%v", err)
}

// TestForResourceDPoPProofStaysAtItsResource (hostile): a DPoP-bound token
// good at two resources, with a proof made for one, is refused at the
// other (htu); at its own resource it works once, as ever.
func TestForResourceDPoPProofStaysAtItsResource(t *testing.T) {
	e := setup(t, nil)
	const dbRes, ghRes = "https://mcp.example.test/mcp/db", "https://mcp.example.test/mcp/github"
	db, err := e.a.ForResource(auth.Resource{Resource: dbRes, RequiredScopes: []string{"db:use"}})
	require.NoError(t, err)
	gh, err := e.a.ForResource(auth.Resource{Resource: ghRes, RequiredScopes: []string{"db:use"}})
	require.NoError(t, err)
	key := authtest.MustDPoPKey(t, "ES256")
	claims := key.Bind(e.iss.KeycloakClaims("alice", dbRes, "db:use"))
	claims["aud"] = []string{dbRes, ghRes}
	tok := mint(t)(e.iss.Sign(claims, authtest.SignOptions{}))
	at := func(a *auth.Authenticator, url, proof string) int {
		r := httptest.NewRequest(http.MethodPost, url, nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "DPoP "+tok)
		r.Header.Set("DPoP", proof)
		rec, _ := serve(a, r)
		return rec.Code
	}
	forDB := key.Proof(http.MethodPost, dbRes, tok, "", e.clock.Now())
	assert.Equal(t, http.StatusUnauthorized, at(gh, ghRes, forDB), "a proof for db presented at github")
	assert.Equal(t, http.StatusNoContent, at(db, dbRes, forDB))
	forGH := key.Proof(http.MethodPost, ghRes, tok, "", e.clock.Now())
	assert.Equal(t, http.StatusNoContent, at(gh, ghRes, forGH))
	assert.Equal(t, http.StatusUnauthorized, at(gh, ghRes, forGH), "the same proof again")
}
