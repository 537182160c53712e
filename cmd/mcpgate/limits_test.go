package main

import (
	"net/http"
	"strings"
	"testing"

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
