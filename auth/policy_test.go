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

var tiers = []auth.Rule{
	{Scope: "mcp:read", Tools: []string{"query", "list_tables"}},
	{Scope: "mcp:develop", Tools: []string{"query", "list_tables", "apply_ddl"}},
	{Claim: "realm_access.roles", Values: []string{"mcp-admin"}, Tools: []string{"drop_table"}},
	{Claim: "resource_access.mcp-gateway.roles", Values: []string{"dba"}, Tools: []string{"execute_sql"}},
	{Claim: "groups", Values: []string{"/ops"}, Tools: []string{"run_checks"}},
}

func withTiers(o *auth.Options) {
	o.WriteScope, o.Policies = "", tiers
}

// TestPolicyGrants: the granted set is the union of the rules that apply,
// by scope or by claim value; a claim of the wrong shape grants nothing;
// no rule applying grants an empty set, not every tool (fail-closed).
func TestPolicyGrants(t *testing.T) {
	e := setup(t, withTiers)
	for _, tc := range []struct {
		name   string
		scopes []string
		claims map[string]any
		want   []string
	}{
		{"nothing applies", []string{"mcp:use"}, nil, []string{}},
		{"reader", []string{"mcp:use", "mcp:read"}, nil, []string{"list_tables", "query"}},
		{"developer", []string{"mcp:use", "mcp:read", "mcp:develop"}, nil, []string{"apply_ddl", "list_tables", "query"}},
		{"realm role", []string{"mcp:use"}, map[string]any{"realm_access": map[string]any{"roles": []string{"offline_access", "mcp-admin"}}}, []string{"drop_table"}},
		{"client role", []string{"mcp:use"}, map[string]any{"resource_access": map[string]any{"mcp-gateway": map[string]any{"roles": []string{"dba"}}}}, []string{"execute_sql"}},
		{"another client's role", []string{"mcp:use"}, map[string]any{"resource_access": map[string]any{"other": map[string]any{"roles": []string{"dba"}}}}, []string{}},
		{"group", []string{"mcp:use"}, map[string]any{"groups": []string{"/ops"}}, []string{"run_checks"}},
		{"group as a string", []string{"mcp:use"}, map[string]any{"groups": "/ops"}, []string{"run_checks"}},
		{"roles of the wrong shape", []string{"mcp:use"}, map[string]any{"realm_access": []string{"mcp-admin"}}, []string{}},
		{"a value in another case", []string{"mcp:use"}, map[string]any{"realm_access": map[string]any{"roles": []string{"MCP-ADMIN"}}}, []string{}},
		{"a role named like a scope", []string{"mcp:use"}, map[string]any{"realm_access": map[string]any{"roles": []string{"mcp:develop"}}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.iss.KeycloakClaims("alice", resource, tc.scopes...)
			for k, v := range tc.claims {
				c[k] = v
			}
			tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
			p, err := e.a.VerifyToken(context.Background(), tok)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Tools)
			// Again, from the token cache: an empty grant stays empty, not
			// nil (which would mean no policy: every tool).
			p, err = e.a.VerifyToken(context.Background(), tok)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Tools, "from the cache")
			assert.NotNil(t, p.Tools, "from the cache")
			assert.False(t, p.ReadOnly, "read-only is the gateway's to decide from the tools")
		})
	}

	// Without a policy Tools stays nil: every tool, subject to ReadOnly.
	plain := setup(t, nil)
	p, err := plain.a.VerifyToken(context.Background(), mint(t)(plain.iss.Keycloak("alice", resource, full...)))
	require.NoError(t, err)
	assert.Nil(t, p.Tools)
}

// TestPolicyOptionErrors: every problem of a policy is reported at once.
func TestPolicyOptionErrors(t *testing.T) {
	iss := authtest.New(t)
	_, err := auth.New(context.Background(), auth.Options{
		Issuer: iss.URL, Resource: resource, HTTPClient: iss.Client(), WriteScope: "mcp:write",
		InitialScopes: []string{"mcp:nope"},
		Policies: []auth.Rule{
			{Tools: []string{"query"}},
			{Scope: "a", Claim: "groups", Values: []string{"x"}, Tools: []string{"query"}},
			{Scope: "mcp:read"},
			{Claim: "realm_access", Values: []string{"x"}, Tools: []string{"query"}},
			{Claim: "resource_access.roles", Values: []string{"x"}, Tools: []string{"query"}},
			{Claim: "sub", Values: []string{"x"}, Tools: []string{"query"}},
			{Claim: "groups", Tools: []string{"query"}},
			{Scope: "mcp:read", Values: []string{"x"}, Tools: []string{"query"}},
		},
	})
	require.Error(t, err)
	for _, want := range []string{
		"rule 0: names who", "rule 1: names who", "rule 2: grants nothing",
		`rule 3: claim: "realm_access" cannot exist`, `rule 4: claim: "resource_access.roles" cannot exist`,
		`rule 5: claim: "sub" is a registered claim`, "rule 6: claim groups needs values",
		"rule 7: values go with claim", "write scope and policies", `initial scope "mcp:nope" is not advertised`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestPolicyScopesAdvertised: the advertised scopes derive from the policy
// (docs/design.md, Derived scopes), and initial_scopes narrows only the 401 challenge.
func TestPolicyScopesAdvertised(t *testing.T) {
	e := setup(t, withTiers)
	assert.Equal(t, []string{"mcp:use", "mcp:read", "mcp:develop", "profile", "offline_access"}, e.a.Supported())

	least := setup(t, func(o *auth.Options) {
		withTiers(o)
		o.InitialScopes = []string{"mcp:use", "mcp:read", "profile"}
	})
	rec := httptest.NewRecorder()
	least.a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request())
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Equal(t, `Bearer resource_metadata="`+wantMetadataURL+`", scope="mcp:use mcp:read profile"`, rec.Header().Get("WWW-Authenticate"))
	assert.Equal(t, e.a.Supported(), least.a.Supported(), "the metadata still lists every scope")
}

// TestStepUpChallenge: the 403 names the token's scopes, the required
// ones and the first rule scope granting the tool; a tool only a claim
// grants, or none, gets no challenge (the caller refuses it as JSON-RPC).
func TestStepUpChallenge(t *testing.T) {
	e := setup(t, withTiers)
	tok := mint(t)(e.iss.Keycloak("alice", resource, "mcp:use", "profile"))
	var seen *http.Request
	e.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r })).ServeHTTP(httptest.NewRecorder(), request("Bearer "+tok))
	require.NotNil(t, seen)

	rec := httptest.NewRecorder()
	require.True(t, auth.StepUp(rec, seen, "apply_ddl"))
	assert.Equal(t, http.StatusForbidden, rec.Code)
	ch := rec.Header().Get("WWW-Authenticate")
	assert.Contains(t, ch, `error="insufficient_scope"`)
	assert.True(t, strings.HasSuffix(ch, `scope="mcp:use profile mcp:develop"`), ch)

	for _, tool := range []string{"drop_table", "no_such_tool"} {
		rec = httptest.NewRecorder()
		assert.False(t, auth.StepUp(rec, seen, tool), tool)
		assert.Empty(t, rec.Header().Get("WWW-Authenticate"))
	}
	rec = httptest.NewRecorder()
	assert.False(t, auth.StepUp(rec, request(), "apply_ddl"), "a request that passed no authenticator")

	// A hostile name cannot break out of the challenge's quoted string.
	rec = httptest.NewRecorder()
	assert.False(t, auth.StepUp(rec, seen, `x", scope="mcp:admin`))
}

// TestPolicyFromIntrospection: an opaque token's grant comes from the
// introspection answer's claims, as a JWT's from its payload: a realm role
// in the answer grants the admin rule's tools, a scope the reader's.
func TestPolicyFromIntrospection(t *testing.T) {
	e := introEnv(t, withTiers)
	c := e.iss.KeycloakClaims("alice", resource, "mcp:use", "mcp:read")
	c["realm_access"] = map[string]any{"roles": []string{"mcp-admin"}}
	p, err := e.a.Authenticate(request("Bearer " + e.iss.Opaque(c)))
	require.NoError(t, err)
	assert.Equal(t, []string{"drop_table", "list_tables", "query"}, p.Tools)

	p, err = e.a.Authenticate(request("Bearer " + e.iss.Opaque(e.iss.KeycloakClaims("bob", resource, "mcp:use"))))
	require.NoError(t, err)
	assert.Equal(t, []string{}, p.Tools, "no rule applies: nothing, not everything")
}
