package auth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// TestRightsForPrincipalNotFromAToken: a principal no token made (a Unix
// socket's peer, read-only with two tools by its rule) keeps its rights
// through every server's Rights: no write scope, no policies and no
// required scopes recompute them.
func TestRightsForPrincipalNotFromAToken(t *testing.T) {
	p := &auth.Principal{Issuer: "unix:host", Subject: "1001", UserID: "bob", ReadOnly: true, Tools: []string{"query", "status"}}
	for name, r := range map[string]auth.Rights{
		"none":            {},
		"a write scope":   {WriteScope: "db:write"},
		"required scopes": {RequiredScopes: []string{"db:use"}},
		"policies":        {Policies: []auth.Rule{{Scope: "db:use", Tools: []string{"drop_table"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			q, ok := r.For(p)
			require.True(t, ok)
			assert.True(t, q.ReadOnly, "the rule's read-only flag was dropped")
			assert.Equal(t, []string{"query", "status"}, q.Tools, "the rule's tools were dropped")
			assert.Equal(t, p.Owner(), q.Owner())
		})
	}
}
