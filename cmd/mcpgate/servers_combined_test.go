package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServersCombinedEndpoint: with a servers list, /mcp serves the
// servers a token reaches under prefixed names, each with the rights it
// has at its own path (db read-only without db:write, ev's policy), on
// both protocol generations; its metadata advertises every server's
// scopes, and a token for one server's path is refused there.
func TestServersCombinedEndpoint(t *testing.T) {
	db, _ := serversGateway(t)
	top := new(tlsGateway)
	*top = *db
	top.resource = strings.TrimSuffix(db.resource, "/db")
	origin := strings.TrimSuffix(top.resource, "/mcp")

	resp, err := top.client.Get(origin + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	resp.Body.Close()
	assert.Equal(t, top.resource, doc["resource"])
	scopes, _ := json.Marshal(doc["scopes_supported"])
	for _, s := range []string{"db:use", "db:write", "ev:use", "ev:more"} {
		assert.Contains(t, string(scopes), `"`+s+`"`)
	}

	tok := top.token(t, "alice", "db:use", "ev:use")
	for _, version := range []string{"", "2025-11-25"} {
		cs := top.connectVersion(t, &tok, version)
		names := toolNames(t, cs)
		assert.True(t, names["db__query"] && names["db__status"], "db's tools prefixed on %q: %v", version, names)
		assert.True(t, names["ev__echo"], "ev's echo on %q: %v", version, names)
		assert.False(t, names["ev__get-sum"], "ev:use does not grant get-sum")
		assert.False(t, names["status"] || names["echo"], "no unprefixed names")
		assert.Equal(t, "Echo: hi", callText(t, cs, "ev__echo", map[string]any{"message": "hi"}))
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "db__status", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		st, _ := json.Marshal(res.StructuredContent)
		assert.Contains(t, string(st), `"readOnly":true`, "no db:write: db is read-only through /mcp too")
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ev__get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
		if err == nil {
			assert.True(t, res.IsError, "a tool the policy does not grant is refused")
		}
	}

	// A token for /mcp/db is not one for /mcp.
	dbTok := db.token(t, "mallory", "db:use", "ev:use")
	code, _, _ := top.raw(t, dbTok, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusUnauthorized, code)
}
