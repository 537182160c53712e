package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsClientVersion is the TypeScript MCP client (@modelcontextprotocol/client)
// that .ci/run installs under .bin/npm-client (git-ignored); the tests
// never fetch it. MCPGATE_TS_CLIENT names another install prefix.
const tsClientVersion = "2.4.0"

// tsClientPrefix returns the install prefix of the TypeScript client, or
// skips the test when node or the client is missing (fails instead under
// MCPGATE_REQUIRE_NODE=1, as .ci/run sets it).
func tsClientPrefix(t *testing.T) string {
	t.Helper()
	return npmPrefix(t, "MCPGATE_TS_CLIENT", "npm-client", "@modelcontextprotocol/client", tsClientVersion)
}

// TestTypeScriptClientWithDPoP: the TypeScript SDK's client with its
// DpopSession, against a gateway that takes only DPoP-bound tokens and
// hands out nonces, and the test issuer, which binds Keycloak-shaped
// tokens to the key of the token request's proof and asks for its own
// nonce first. The client registers, gets a token bound to its session's
// key (answering both nonce challenges) and calls a tool with proofs; the
// same token sent as Bearer is refused.
func TestTypeScriptClientWithDPoP(t *testing.T) {
	prefix := tsClientPrefix(t)
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUTH_DPOP": "required", "MCPGATE_AUTH_DPOP_NONCE": "true"})
	g.issuer.DPoP = true
	g.issuer.DPoPNonce = "issuer-nonce"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte(strings.TrimSpace(string(g.certPEM))+"\n"+strings.TrimSpace(string(g.issuer.CertPEM()))+"\n"), 0o644))

	cmd := exec.CommandContext(t.Context(), "node", filepath.Join("testdata", "dpop-client.mjs"), g.resource, "status")
	cmd.Env = append(os.Environ(), "MCPGATE_TS_CLIENT="+prefix, "NODE_EXTRA_CA_CERTS="+ca)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s\n%s", out, stderr.String())
	var res struct {
		TokenType, Thumbprint, Text, AccessToken string
		IsError                                  bool
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	assert.True(t, strings.EqualFold(res.TokenType, "DPoP"), "token_type %q", res.TokenType)
	assert.False(t, res.IsError, "%s", res.Text)
	assert.Contains(t, res.Text, "alice", "the tool ran as the token's user")
	assert.Equal(t, 1, g.issuer.TokenProofs(), "the token request carried a proof")

	parts := strings.Split(res.AccessToken, ".")
	require.Len(t, parts, 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims struct {
		Cnf struct{ Jkt string } `json:"cnf"`
	}
	require.NoError(t, json.Unmarshal(payload, &claims))
	assert.Equal(t, res.Thumbprint, claims.Cnf.Jkt, "the issuer bound the token to the client's DPoP key")
	code, _, body := g.raw(t, res.AccessToken, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, 401, code, "the bound token as Bearer: %s", body)
}
