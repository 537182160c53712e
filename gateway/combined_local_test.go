package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// TestCombinedKeepsRightsNotFromAToken: a principal no token made (a Unix
// socket's peer, which a rule of server.unix_allowed_users makes
// read-only and limits to some tools) reaches the combined endpoint's
// servers with those rights, as at each server's own path: its
// read-only flag and its tools are not recomputed from scopes it never
// had, which would make it read-write with every tool.
func TestCombinedKeepsRightsNotFromAToken(t *testing.T) {
	c, err := NewCombined([]Member{
		{Name: "db", Gateway: builtinMember(t)},
		{Name: "gh", Gateway: builtinMember(t)},
	}, Options{Logger: testLogger(t), Middleware: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// What local.Access makes of an account its rule opens the
			// socket to read-only with two tools.
			p := &auth.Principal{Issuer: "unix:test", Subject: "1001", UserID: "bob", ReadOnly: true, Tools: []string{"query", "status"}}
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}})
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)

	for _, version := range []string{"", "2025-11-25"} {
		t.Run(genName(version), func(t *testing.T) {
			cs := as(t, srv.URL, version, headers{})
			assert.ElementsMatch(t, []string{"db__query", "db__status", "gh__query", "gh__status"}, toolNames(t, cs))
			assert.Contains(t, callText(t, cs, "db__status", nil), "read-only: true")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gh__execute_sql", Arguments: map[string]any{"sql": "CREATE TABLE planted (x int)"}})
			if err == nil {
				assert.True(t, res.IsError, "a read-only account wrote: %+v", res.Content)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gh__query", Arguments: map[string]any{"sql": "SELECT count(*) AS n FROM sqlite_master WHERE name = 'planted'"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
			assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "0")
		})
	}
}
