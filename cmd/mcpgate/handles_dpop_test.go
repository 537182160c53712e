package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// connectDPoP connects the go-sdk client at its defaults (MCP 2026-07-28)
// sending tok as a DPoP-bound token with proofs of key.
func (g *tlsGateway) connectDPoP(t *testing.T, key *authtest.DPoPKey, tok string) *mcp.ClientSession {
	t.Helper()
	rt := &authtest.DPoPTransport{Base: g.client.Transport, Key: key, Token: func() string { return tok }}
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.resource, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	toolNames(t, cs) // the client mirrors x-mcp-header arguments of listed tools only
	return cs
}

// rawModernMeta posts one 2026-07-28 tools/call of tool with args (JSON),
// the Authorization auth, a DPoP proof when proof is set, the transaction
// header the tool's x-mcp-header asks for, and extra members of _meta.
func (g *tlsGateway) rawModernMeta(t *testing.T, auth, proof, tool, args, meta string) (int, http.Header, string) {
	t.Helper()
	if meta != "" {
		meta = "," + meta
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + meta + `}}}`
	req, err := http.NewRequest(http.MethodPost, g.resource, strings.NewReader(body))
	require.NoError(t, err)
	var a struct{ Transaction string }
	require.NoError(t, json.Unmarshal([]byte(args), &a))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Mcp-Param-Transaction": a.Transaction,
		"Authorization": auth, "DPoP": proof} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := g.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// callKind calls tool on cs and returns its error kind, "" when it succeeded.
func callKind(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	if !res.IsError {
		return ""
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Error struct{ Kind string } `json:"error"`
	}
	_ = json.Unmarshal(b, &sc)
	return sc.Error.Kind
}

// TestHandleBoundToDPoPKey: a transaction handle begun with a DPoP-bound
// token belongs to the key that proved it, as a session does: the same
// token proved with another key is refused at the door, and alice's
// tokens bound to another key, or to none, reach her per-user worker but
// not the handle, which answers as one never minted. A fresh token bound
// to the same key continues it.
func TestHandleBoundToDPoPKey(t *testing.T) {
	g := startTLSGateway(t, nil) // auth.dpop: allowed
	keyA, keyB := authtest.MustDPoPKey(t, "ES256"), authtest.MustDPoPKey(t, "ES256")
	bound := func(k *authtest.DPoPKey) string {
		tok, err := g.issuer.KeycloakDPoP(k, "alice", g.resource, "mcp:use", "mcp:write")
		require.NoError(t, err)
		return tok
	}
	tokA := bound(keyA)
	owner := g.connectDPoP(t, keyA, tokA)
	res, err := owner.CallTool(context.Background(), &mcp.CallToolParams{Name: "begin", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	h, _ := res.StructuredContent.(map[string]any)["transaction"].(string)
	require.NotEmpty(t, h)
	insert := map[string]any{"transaction": h, "sql": "INSERT INTO customers (id, name, email) VALUES (9101, 'k', 'k@example.org')"}
	require.Empty(t, callKind(t, owner, "execute_sql", insert), "the key that began it")

	// The same token with another key's proof never reaches a worker.
	code, _, out := g.rawModernMeta(t, "DPoP "+tokA, keyB.Proof(http.MethodPost, g.resource, tokA, "", time.Now()), "query", `{"transaction":"`+h+`","sql":"SELECT 1"}`, "")
	assert.Equal(t, http.StatusUnauthorized, code, "the same token, another key: %s", out)

	query := map[string]any{"transaction": h, "sql": "SELECT count(*) FROM customers WHERE id = 9101"}
	other := g.connectDPoP(t, keyB, bound(keyB))
	assert.Equal(t, "handleUnknown", callKind(t, other, "query", query), "alice's token bound to another key")
	assert.Equal(t, "handleUnknown", callKind(t, other, "commit", map[string]any{"transaction": h}), "nor can it end the transaction")
	assert.Empty(t, callKind(t, other, "query", map[string]any{"sql": "SELECT 1"}), "it reaches alice's worker, without the handle")

	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	plain := g.connect(t, &tok)
	toolNames(t, plain)
	assert.Equal(t, "handleUnknown", callKind(t, plain, "query", query), "alice's Bearer token")
	// A Bearer client that names the key itself, as the gateway would
	// tell the worker, in any spelling of the member.
	for _, spelling := range []string{`io.mcpgate/holder`, `io.mcpgate\/holder`, `io.mcpgate\u002fholder`} {
		code, _, out := g.rawModernMeta(t, "Bearer "+tok, "", "query", `{"transaction":"`+h+`","sql":"SELECT 1"}`, `"`+spelling+`":"jkt:`+keyA.Thumbprint()+`"`)
		require.Equal(t, http.StatusOK, code, out)
		assert.Contains(t, out, "handleUnknown", "a Bearer client claiming the key with %s", spelling)
	}

	again := g.connectDPoP(t, keyA, bound(keyA))
	assert.Empty(t, callKind(t, again, "commit", map[string]any{"transaction": h}), "a fresh token bound to the same key")
	assert.Empty(t, callKind(t, plain, "query", map[string]any{"sql": "SELECT 1 FROM customers WHERE id = 9101"}))
}

// TestHandleOfABearerTokenNotABoundOnes: a handle begun with a Bearer
// token is not reachable with a DPoP-bound token of the same user: the
// binding is equality of the proved key, none included.
func TestHandleOfABearerTokenNotABoundOnes(t *testing.T) {
	g := startTLSGateway(t, nil)
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	plain := g.connect(t, &tok)
	toolNames(t, plain)
	res, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "begin", Arguments: map[string]any{}})
	require.NoError(t, err)
	h, _ := res.StructuredContent.(map[string]any)["transaction"].(string)
	require.NotEmpty(t, h, "%v", res.Content)

	key := authtest.MustDPoPKey(t, "ES256")
	btok, err := g.issuer.KeycloakDPoP(key, "alice", g.resource, "mcp:use", "mcp:write")
	require.NoError(t, err)
	bound := g.connectDPoP(t, key, btok)
	assert.Equal(t, "handleUnknown", callKind(t, bound, "query", map[string]any{"transaction": h, "sql": "SELECT 1"}))
	assert.Empty(t, callKind(t, plain, "abort", map[string]any{"transaction": h}))
}
