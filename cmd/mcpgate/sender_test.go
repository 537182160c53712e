package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestServeDPoP: `mcpgate serve` with auth.dpop required and server nonces
// takes the go-sdk client, given a round-tripper that adds proofs, with a
// DPoP-bound token, on both protocol generations; a Bearer token is
// refused with the DPoP challenge, and the metadata says DPoP is required.
func TestServeDPoP(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUTH_DPOP": "required", "MCPGATE_AUTH_DPOP_NONCE": "true"})
	key := authtest.MustDPoPKey(t, "ES256")
	tok, err := g.issuer.KeycloakDPoP(key, "alice", g.resource, "mcp:use", "mcp:write")
	require.NoError(t, err)
	for _, version := range []string{"2025-11-25", ""} {
		rt := &authtest.DPoPTransport{Base: g.client.Transport, Key: key, Token: func() string { return tok }}
		c := mcp.NewClient(&mcp.Implementation{Name: "dpop-test", Version: "1"}, nil)
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.resource,
			HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, opts)
		require.NoError(t, err, "version %q", version)
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.NotEmpty(t, res.Tools)
		assert.Equal(t, 1, rt.Retries, "one use_dpop_nonce retry, the first request's")
		cs.Close()
	}

	code, hdr, _ := g.raw(t, g.token(t, "alice", "mcp:use"), "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, hdr.Get("WWW-Authenticate"), `DPoP error="invalid_token"`)

	resp, err := g.client.Get("https://" + g.addr + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	assert.Equal(t, true, doc["dpop_bound_access_tokens_required"])
}

// TestServeCertificateBound: with tls.client_auth optional, a token bound
// to client certificate A is accepted over a connection that presents A,
// and refused over one that presents B; a session opened over A is not
// reached by a token of the same user bound to B.
func TestServeCertificateBound(t *testing.T) {
	ca, err := authtest.NewClientCA()
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.PEM(), 0o644))
	certA, tpA, err := ca.Client("a")
	require.NoError(t, err)
	certB, tpB, err := ca.Client("b")
	require.NoError(t, err)
	g := startTLSGateway(t, map[string]string{"MCPGATE_TLS_CLIENT_AUTH": "optional", "MCPGATE_TLS_CLIENT_CA_FILE": caFile})

	bound := func(tp string) string {
		claims := g.issuer.KeycloakClaims("alice", g.resource, "mcp:use")
		claims["cnf"] = map[string]any{"x5t#S256": tp}
		tok, err := g.issuer.Sign(claims, authtest.SignOptions{})
		require.NoError(t, err)
		return tok
	}
	tok, tokB := bound(tpA), bound(tpB)
	// over sends body with token on session sid over a connection that
	// presents cert.
	over := func(cert tls.Certificate, token, sid, body string) (int, http.Header) {
		tr := g.client.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
		client := g.client
		g.client = &http.Client{Transport: tr}
		defer func() { g.client = client }()
		code, hdr, _ := g.raw(t, token, sid, body)
		return code, hdr
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	code, _ := over(certB, tok, "", initialize)
	assert.Equal(t, http.StatusUnauthorized, code, "over certificate B")
	code, hdr := over(certA, tok, "", initialize)
	require.Equal(t, http.StatusOK, code, "over certificate A")
	sid := hdr.Get("MCP-Session-Id")
	code, _ = over(certA, tok, sid, ping)
	assert.Equal(t, http.StatusOK, code, "the session, over A")
	code, _ = over(certB, tokB, sid, ping)
	assert.Equal(t, http.StatusNotFound, code, "alice's token for certificate B, over B: not her session of A")
}
