package gateway

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// dpopDo sends one request to /mcp on session sid (none when empty) with
// tok as a DPoP-bound token and a fresh proof of key for the public URI.
func (a *authedGateway) dpopDo(t *testing.T, key *authtest.DPoPKey, method, sid, tok, body string) (*http.Response, string) {
	t.Helper()
	return rawDo(t, method, a.url+"/mcp", body, sidHdr, sid, protoHdr, "2025-11-25",
		"Authorization", "DPoP "+tok, "DPoP", key.Proof(method, accessResource, tok, "", time.Now()))
}

// TestDPoPSessionBoundToKey: a 2025-11-25 session opened with a DPoP-bound
// token belongs to that key: another token of the same user and client,
// bound to another key (or to none), does not reach it, and the same token
// with another key's proof is refused at the door.
func TestDPoPSessionBoundToKey(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}})
	key, other := authtest.MustDPoPKey(t, "ES256"), authtest.MustDPoPKey(t, "ES256")
	bound := func(k *authtest.DPoPKey) string {
		return a.token(t, "alice", writeScopes, func(c map[string]any) { k.Bind(c) })
	}
	tok := bound(key)
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`

	resp, body := a.dpopDo(t, key, http.MethodPost, "", tok, initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	sid := resp.Header.Get(sidHdr)
	resp, body = a.dpopDo(t, key, http.MethodPost, sid, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)

	resp, body = a.dpopDo(t, other, http.MethodPost, sid, tok, ping)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the same token, another key: %s", body)

	otherTok := bound(other)
	resp, body = a.dpopDo(t, other, http.MethodPost, sid, otherTok, ping)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "alice's token for another key: %s", body)
	resp, _ = a.dpopDo(t, other, http.MethodDelete, sid, otherTok, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "DELETE with another key")

	resp, body = a.do(t, http.MethodPost, sid, a.token(t, "alice", writeScopes, nil), ping)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "alice's Bearer token: %s", body)

	resp, body = a.dpopDo(t, key, http.MethodPost, sid, bound(key), ping)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a fresh token for the session's key: %s", body)
}

// TestDPoPGoSDKClient: the go-sdk client, which knows nothing of DPoP,
// through a round-tripper that adds proofs, against a gateway that
// requires DPoP and server nonces: the first request learns the nonce
// from a use_dpop_nonce refusal, and the session then works, on both
// protocol generations.
func TestDPoPGoSDKClient(t *testing.T) {
	a := newAuthedGatewayWith(t, auth.Options{
		RequiredScopes: readScopes, WriteScope: "mcp:write",
		DPoP: auth.DPoP{Mode: auth.DPoPRequired, Nonce: true},
	}, Options{SafeTools: []string{"echo"}})
	key := authtest.MustDPoPKey(t, "ES256")
	tok, err := a.iss.KeycloakDPoP(key, "alice", accessResource, writeScopes...)
	require.NoError(t, err)

	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version "+version, func(t *testing.T) {
			rt := &authtest.DPoPTransport{
				Key:   key,
				Token: func() string { return tok },
				HTU:   func(*http.Request) string { return accessResource },
			}
			tr := &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: rt}}
			cs := connectVersion(t, tr, nil, version)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			assert.Equal(t, 1, rt.Retries, "one use_dpop_nonce retry, on the first request")
		})
	}

	t.Run("a Bearer client", func(t *testing.T) {
		resp, body := rawDo(t, http.MethodPost, a.url+"/mcp", initBody, "Authorization", "Bearer "+a.token(t, "alice", writeScopes, nil))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `DPoP error="invalid_token"`)
	})
}
