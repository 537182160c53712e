package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// TestDoctorTokenFileWithDPoP: a DPoP-bound token given with --token-file
// is sent as the bridge sends it, with a proof of the login's key, when
// that is the key its cnf.jkt names; a token bound to a key the doctor
// does not hold is a FAIL that says so, not a Bearer request the gateway
// refuses for a reason the doctor would not explain.
func TestDoctorTokenFileWithDPoP(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUTH_DPOP": "required", "MCPGATE_AUTH_DPOP_NONCE": "true"})
	g.issuer.DPoP = true
	c := newClientSide(t, g)
	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	e, err := oauthclient.Cache{Path: c.cache}.Lookup(g.resource)
	require.NoError(t, err)
	require.Equal(t, "DPoP", e.TokenType)

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(e.AccessToken+"\n"), 0o600))
	out, _, err := c.run(t, "doctor", "--user-claim", "preferred_username", "--token-file", file)
	require.NoError(t, err, out)
	assert.Contains(t, out, "OK    token dpop")
	assert.Contains(t, out, "OK    token accepted")

	other, err := g.issuer.KeycloakDPoP(authtest.MustDPoPKey(t, "ES256"), "alice", g.resource, "mcp:use", "mcp:write")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte(other), 0o600))
	out, _, err = c.run(t, "doctor", "--user-claim", "preferred_username", "--token-file", file)
	require.Error(t, err, out)
	assert.Contains(t, out, "FAIL  token dpop")
	assert.Contains(t, out, "not the key of mcpgate login")
	assert.NotContains(t, out, other, "the token is never printed")
}
