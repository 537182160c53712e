package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestRightsFor: one verified token, as each server behind a combined
// endpoint sees it: its required scopes decide whether it reaches the
// server, its write scope the read-only flag, its policies (scope and
// claim rules, the claims read from the verified token, from the cache
// too) the tools; a server whose policies grant nothing is out of reach.
func TestRightsFor(t *testing.T) {
	e := setup(t, nil)
	c := e.iss.KeycloakClaims("alice", resource, "mcp:use", "db:use", "db:write", "gh:use")
	c["groups"] = []string{"/ops"}
	tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
	for _, from := range []string{"verified", "cached"} {
		t.Run(from, func(t *testing.T) {
			p, err := e.a.VerifyToken(context.Background(), tok)
			require.NoError(t, err)
			ro := p.ReadOnly

			db, ok := auth.Rights{RequiredScopes: []string{"db:use"}, WriteScope: "db:write"}.For(p)
			require.True(t, ok)
			assert.False(t, db.ReadOnly)
			assert.Nil(t, db.Tools)

			gh, ok := auth.Rights{RequiredScopes: []string{"gh:use"}, WriteScope: "gh:write"}.For(p)
			require.True(t, ok)
			assert.True(t, gh.ReadOnly)

			_, ok = auth.Rights{RequiredScopes: []string{"jira:use"}}.For(p)
			assert.False(t, ok, "a server whose required scope the token lacks")

			ops, ok := auth.Rights{Policies: []auth.Rule{
				{Scope: "db:use", Tools: []string{"query"}},
				{Claim: "groups", Values: []string{"/ops"}, Tools: []string{"run_checks"}},
				{Claim: "groups", Values: []string{"/dba"}, Tools: []string{"drop_table"}},
			}}.For(p)
			require.True(t, ok)
			assert.Equal(t, []string{"query", "run_checks"}, ops.Tools)

			_, ok = auth.Rights{Policies: []auth.Rule{{Claim: "groups", Values: []string{"/dba"}, Tools: []string{"drop_table"}}}}.For(p)
			assert.False(t, ok, "a server whose policies grant the token nothing")

			assert.Equal(t, "alice", ops.UserID)
			assert.Equal(t, ro, p.ReadOnly, "For changed the principal it was given")
			assert.Nil(t, p.Tools, "For changed the principal it was given")
		})
	}
	p, ok := auth.Rights{RequiredScopes: []string{"x"}}.For(nil)
	assert.True(t, ok, "no authentication reaches every server")
	assert.Nil(t, p)
}

// TestRightsStepUp: under WithRights a challenge names the server's write
// scope or policy scope and keeps every scope the token holds, so that
// stepping up for one server loses no other.
func TestRightsStepUp(t *testing.T) {
	e := setup(t, nil)
	tok := mint(t)(e.iss.Keycloak("alice", resource, "mcp:use", "db:use", "gh:use"))
	var seen *http.Request
	e.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r })).ServeHTTP(httptest.NewRecorder(), request("Bearer "+tok))
	require.NotNil(t, seen)

	gh := auth.Rights{RequiredScopes: []string{"gh:use"}, WriteScope: "gh:write"}
	r := seen.WithContext(auth.WithRights(seen.Context(), gh))
	rec := httptest.NewRecorder()
	require.True(t, auth.WriteScopeRequired(rec, r, "tool 'x' changes data"))
	ch := rec.Header().Get("WWW-Authenticate")
	assert.True(t, strings.HasSuffix(ch, `scope="mcp:use db:use gh:use gh:write"`), ch)

	db := auth.Rights{RequiredScopes: []string{"db:use"}, Policies: []auth.Rule{{Scope: "db:admin", Tools: []string{"drop_table"}}}}
	r = seen.WithContext(auth.WithRights(seen.Context(), db))
	rec = httptest.NewRecorder()
	require.True(t, auth.StepUp(rec, r, "drop_table"))
	ch = rec.Header().Get("WWW-Authenticate")
	assert.True(t, strings.HasSuffix(ch, `scope="mcp:use db:use gh:use db:admin"`), ch)
	rec = httptest.NewRecorder()
	assert.False(t, auth.StepUp(rec, r, "query"), "no rule of the server grants it")
	rec = httptest.NewRecorder()
	assert.False(t, auth.WriteScopeRequired(rec, r, "x"), "the server has no write scope")
}
