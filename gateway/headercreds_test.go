package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

// headerCred is a remote server's credential: the user's exchanged token
// in Authorization.
var headerCred = []credential.Credential{{Header: "Authorization", Prefix: "Bearer ", From: credential.FromTokenExchange, Audience: credAudience}}

// feedSet is the header set a worker's feed carries for tok.
func feedSet(tok string) string { return sha("Authorization: Bearer " + tok + "\n") }

// TestHeaderCredentialsRenewedInPlace: a remote server's worker gets its
// user's exchanged token on its credential socket, each user their own;
// when the token comes due, the user's next request renews it in place
// before it reaches the worker, which stays (no replacement, so its
// upstream session survives), on both protocol generations.
func TestHeaderCredentialsRenewedInPlace(t *testing.T) {
	a, clk := credGateway(t, headerCred, credential.ExchangeOptions{})
	a.iss.SetExchangeTTL(100 * time.Second)
	alice, bob := a.exchangeable(t, "alice"), a.exchangeable(t, "bob")

	_, pid1 := a.modernTool(t, alice, "pid", "")
	status, h1 := a.modernTool(t, alice, "feedhash", "")
	require.Equal(t, http.StatusOK, status, h1)
	require.Len(t, a.iss.ExchangedFor("alice"), 1)
	assert.Equal(t, feedSet(a.iss.ExchangedFor("alice")[0]), h1)
	_, hb := a.modernTool(t, bob, "feedhash", "")
	require.Len(t, a.iss.ExchangedFor("bob"), 1)
	assert.Equal(t, feedSet(a.iss.ExchangedFor("bob")[0]), hb, "bob's worker holds bob's token")
	assert.NotEqual(t, h1, hb)

	sid := a.open(t, alice) // a 2025 session: a worker of its own
	_, out := a.do(t, http.MethodPost, sid, alice, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"feedhash","arguments":{}}}`)
	assert.Equal(t, h1, answerText(t, out), "the cached token")
	_, out = a.do(t, http.MethodPost, sid, alice, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pid","arguments":{}}}`)
	spid1 := answerText(t, out)

	clk.advance(81 * time.Second) // past the renewal time: a fifth of 100s before expiry
	status, h2 := a.modernTool(t, alice, "feedhash", "")
	require.Equal(t, http.StatusOK, status, h2)
	require.Len(t, a.iss.ExchangedFor("alice"), 2, "renewed at the first request after the renewal time")
	assert.Equal(t, feedSet(a.iss.ExchangedFor("alice")[1]), h2, "the request that renewed it already carries the new token")
	_, pid2 := a.modernTool(t, alice, "pid", "")
	assert.Equal(t, pid1, pid2, "renewed in place: the worker was not replaced")

	resp, out := a.do(t, http.MethodPost, sid, alice, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"feedhash","arguments":{}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	assert.Equal(t, h2, answerText(t, out), "the session's worker got the renewed token, and the session lives on")
	_, out = a.do(t, http.MethodPost, sid, alice, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pid","arguments":{}}}`)
	assert.Equal(t, spid1, answerText(t, out))
	assert.Len(t, a.iss.ExchangedFor("bob"), 1, "bob's token is bob's business")
}
