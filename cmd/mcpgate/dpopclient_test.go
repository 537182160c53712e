package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/oauthclient"
)

// TestLoginAndBridgeWithDPoP: against a gateway that takes only DPoP-bound
// tokens and hands out nonces, and an issuer that binds tokens to a proof
// and asks for its own nonce, `mcpgate login` gets a bound token and the
// bridge calls a tool with it, refreshing it (with proofs) on the way. The
// key is the user's alone, and a second login keeps it.
func TestLoginAndBridgeWithDPoP(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUTH_DPOP": "required", "MCPGATE_AUTH_DPOP_NONCE": "true"})
	g.issuer.DPoP = true
	g.issuer.DPoPNonce = "issuer-nonce"
	g.issuer.AccessTokenTTL = 5 * time.Second // always "about to expire": every use refreshes
	c := newClientSide(t, g)

	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	cache := oauthclient.Cache{Path: c.cache}
	e, err := cache.Lookup(g.resource)
	require.NoError(t, err)
	assert.True(t, e.DPoP)
	assert.Equal(t, "DPoP", e.TokenType, "the issuer bound the token to the key")
	keyFile := filepath.Join(filepath.Dir(c.cache), "dpop-key.pem")
	st, err := os.Stat(keyFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the DPoP key is the user's alone")
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	proofs := g.issuer.TokenProofs()
	require.Equal(t, 1, proofs, "the code exchange carried a proof")

	// The doctor reads the DPoP-only challenge and sends the token
	// with a proof.
	out, _, err := c.run(t, "doctor", "--user-claim", "preferred_username")
	require.NoError(t, err, out)
	assert.Contains(t, out, "OK    challenge")
	assert.Contains(t, out, "OK    token accepted")

	// The bound token alone, as Bearer, is refused.
	code, _, _ := g.raw(t, e.AccessToken, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, 401, code)

	var stderr lockedBuffer
	cmd := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil)
	ctx := context.Background()
	refreshes, proofs := g.issuer.Refreshes(), g.issuer.TokenProofs()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
	assert.False(t, res.IsError)
	require.NoError(t, cs.Close())
	assert.Greater(t, g.issuer.Refreshes(), refreshes, "the bridge refreshed the token")
	assert.Equal(t, proofs+g.issuer.Refreshes()-refreshes, g.issuer.TokenProofs(), "every refresh carried a proof")
	e, err = cache.Lookup(g.resource)
	require.NoError(t, err)
	assert.Equal(t, "DPoP", e.TokenType, "the refreshed token is bound too")
	assert.NotContains(t, stderr.String(), "level=WARN", "bridge stderr")

	_, errOut, err = c.run(t, "login")
	require.NoError(t, err, errOut)
	again, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Equal(t, key, again, "the key is made once and reused")
}

// TestLoginWithoutDPoP: a gateway that turns DPoP off gets bearer tokens
// as before, though the issuer offers DPoP; --dpop=off does the same
// against a gateway that allows it. No key is made.
func TestLoginWithoutDPoP(t *testing.T) {
	g := startTLSGateway(t, map[string]string{"MCPGATE_AUTH_DPOP": "off"})
	g.issuer.DPoP = true
	c := newClientSide(t, g)
	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	e, err := oauthclient.Cache{Path: c.cache}.Lookup(g.resource)
	require.NoError(t, err)
	assert.False(t, e.DPoP)
	assert.Equal(t, "Bearer", e.TokenType)
	assert.Zero(t, g.issuer.TokenProofs())
	_, err = os.Stat(filepath.Join(filepath.Dir(c.cache), "dpop-key.pem"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	var stderr lockedBuffer
	cmd := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	require.NoError(t, cs.Close())

	_, errOut, err = c.run(t, "login", "--dpop=bogus")
	require.Error(t, err, errOut)
}

// TestDoctorWithDPoP: the doctor checks a cached DPoP-bound token the way
// the bridge sends it, with a proof; as Bearer the gateway would refuse it.
func TestDoctorWithDPoP(t *testing.T) {
	g := startTLSGateway(t, nil) // auth.dpop: allowed
	g.issuer.DPoP = true
	c := newClientSide(t, g)
	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	e, err := oauthclient.Cache{Path: c.cache}.Lookup(g.resource)
	require.NoError(t, err)
	require.Equal(t, "DPoP", e.TokenType, "the default gateway offers DPoP, so auto turned it on")
	out, _, err := c.run(t, "doctor", "--user-claim", "preferred_username")
	require.NoError(t, err, out)
	assert.Contains(t, out, "OK    token accepted")
}

// TestBridgeFollowsALoginThatTurnsDPoPOn: a bridge started with a bearer
// login keeps working when the user logs in again meanwhile and gets a
// DPoP-bound token: the bridge takes the new token from the cache and
// sends it with proofs.
func TestBridgeFollowsALoginThatTurnsDPoPOn(t *testing.T) {
	g := startTLSGateway(t, nil) // auth.dpop: allowed
	g.issuer.DPoP = true
	c := newClientSide(t, g)
	_, errOut, err := c.run(t, "login", "--dpop=off")
	require.NoError(t, err, errOut)

	var stderr lockedBuffer
	cmd := exec.Command(os.Args[0], "bridge", "--url", g.resource, "--ca-file", c.caFile, "--cache", c.cache)
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError)

	_, errOut, err = c.run(t, "login")
	require.NoError(t, err, errOut)
	e, err := oauthclient.Cache{Path: c.cache}.Lookup(g.resource)
	require.NoError(t, err)
	require.Equal(t, "DPoP", e.TokenType)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	require.NoError(t, err, "bridge stderr:\n%s", stderr.String())
	assert.False(t, res.IsError)
	require.NoError(t, cs.Close())
	assert.NotContains(t, stderr.String(), "level=WARN", "bridge stderr")
}
