package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestDPoPPerUserWorkerAcrossKeys: on 2026-07-28 a per-user worker is the
// user's, whatever key proves each request: alice with two keys reaches
// one worker, and bob, with a token bound to alice's key, gets a worker
// of his own, never hers.
func TestDPoPPerUserWorkerAcrossKeys(t *testing.T) {
	a := newAuthedGateway(t, Options{SafeTools: []string{"echo"}})
	keyA, keyB := authtest.MustDPoPKey(t, "ES256"), authtest.MustDPoPKey(t, "ES256")
	call := func(user string, k *authtest.DPoPKey) {
		t.Helper()
		tok := a.token(t, user, writeScopes, func(c map[string]any) { k.Bind(c) })
		resp, body := rawDo(t, http.MethodPost, a.url+"/mcp", modernBody("1", "tools/call", `"name":"echo","arguments":{"text":"x"}`),
			protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo",
			"Authorization", "DPoP "+tok, "DPoP", k.Proof(http.MethodPost, accessResource, tok, "", time.Now()))
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		assert.Contains(t, body, `"x"`)
	}
	call("alice", keyA)
	call("alice", keyB)
	workers := a.g.Snapshot().Workers
	require.Len(t, workers, 1, "one worker for alice's two keys")
	assert.Equal(t, "alice", workers[0].User)

	call("bob", keyA)
	workers = a.g.Snapshot().Workers
	require.Len(t, workers, 2, "bob's worker is his own, though his token is bound to alice's key")
	assert.Equal(t, []string{"alice", "bob"}, []string{workers[0].User, workers[1].User})
}
