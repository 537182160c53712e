package main

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeOversizedToken: a token larger than auth.max_token_bytes (here an
// 87 KB one, over the default 16 KiB) gets a readable 401 invalid_token that
// names the limit, not a bare 431 or a reset connection.
func TestServeOversizedToken(t *testing.T) {
	g := startTLSGateway(t, nil)
	big := strings.Repeat("a", 87_000)
	code, h, body := g.raw(t, big, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.Equal(t, http.StatusUnauthorized, code, "body %s", body)
	assert.Contains(t, h.Get("WWW-Authenticate"), `error="invalid_token"`)
	assert.Contains(t, body, "limit of 16384 bytes")
}

// TestServeUnauthenticatedCap: without a token, one address cannot hold
// more than limits.max_unauthenticated_per_address connections, and over
// TLS the refused one is closed cleanly before the handshake rather than
// sent plain text.
func TestServeUnauthenticatedCap(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_LIMITS_MAX_UNAUTHENTICATED_PER_ADDRESS": "3"})
	host := strings.TrimSuffix(strings.TrimPrefix(g.resource, "https://"), "/mcp")
	cfg := g.client.Transport.(*http.Transport).TLSClientConfig
	var refused error
	var held []*tls.Conn
	for range 5 { // the startup poll may hold one too
		c, err := tls.Dial("tcp", host, cfg)
		if err != nil {
			refused = err
			break
		}
		held = append(held, c)
	}
	require.Error(t, refused, "five unauthenticated connections from one address were all served")
	assert.NotContains(t, refused.Error(), "first record does not look like a TLS handshake")
	assert.NotContains(t, refused.Error(), "reset by peer")

	// Once they go, the address may connect again, and a client with a
	// token gets through.
	for _, c := range held {
		c.Close()
	}
	require.Eventually(t, func() bool {
		c, err := tls.Dial("tcp", host, cfg)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the gateway frees the address's slots when its connections close")
	tok := g.token(t, "alice", "mcp:use", "mcp:write")
	cs := g.connect(t, &tok)
	assert.Equal(t, "alice", statusOf(t, cs)["user"])
}
