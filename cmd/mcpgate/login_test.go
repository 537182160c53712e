package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientSide runs client-side commands against g with a CA file trusting
// the gateway and the issuer, a token cache of the test's own, and a
// "browser" that follows the issuer's redirect to the loopback listener.
type clientSide struct {
	g             *tlsGateway
	caFile        string
	cache         string
	browserVisits int
}

func newClientSide(t *testing.T, g *tlsGateway) *clientSide {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, append(append([]byte{}, g.certPEM...), g.issuer.CertPEM()...), 0o644))
	return &clientSide{g: g, caFile: ca, cache: filepath.Join(dir, "config", "mcpgate", "tokens.json")}
}

func (c *clientSide) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
		OpenBrowser: func(u string) error {
			c.browserVisits++
			resp, err := c.g.issuer.Client().Get(u) // follows the redirect to 127.0.0.1
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return errors.New(resp.Status)
			}
			return nil
		}}
	args = append(args, "--url", c.g.resource, "--ca-file", c.caFile, "--cache", c.cache)
	err := m.Run(context.Background(), args)
	require.NoError(t, m.Close())
	return out.String(), errb.String(), err
}

func TestLoginAndTokenCommands(t *testing.T) {
	g := startTLSGateway(t, nil)
	g.issuer.LoginUser = "dora"
	c := newClientSide(t, g)

	_, _, err := c.run(t, "token")
	require.Error(t, err, "no login yet")
	assert.Contains(t, err.Error(), "mcpgate login")

	out, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	assert.Contains(t, out, "logged in to "+g.resource)
	assert.Equal(t, 1, c.browserVisits)
	st, err := os.Stat(c.cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the token cache is the user's alone")

	out, _, err = c.run(t, "token")
	require.NoError(t, err)
	tok := strings.TrimSpace(out)
	require.NotEmpty(t, tok)

	// The token opens a read-write session on the real gateway.
	cs := g.connect(t, &tok)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.NotEmpty(t, tools.Tools)

	// --client-credentials: a service client, nothing cached.
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))
	out, _, err = c.run(t, "token", "--client-credentials", "--client-id", "ci-bot", "--client-secret-file", secret)
	require.NoError(t, err)
	svc := strings.TrimSpace(out)
	code, _, _ := g.raw(t, svc, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.NotEqual(t, http.StatusUnauthorized, code, "the service token's audience is the gateway")

	_, _, err = c.run(t, "token", "--client-credentials")
	require.ErrorIs(t, err, errUsage)
}

func TestDoctorCommand(t *testing.T) {
	g := startTLSGateway(t, nil)
	c := newClientSide(t, g)
	out, _, err := c.run(t, "doctor")
	require.NoError(t, err, out)
	assert.Contains(t, out, "OK    challenge")
	assert.Contains(t, out, "no token checked")

	_, errOut, err := c.run(t, "login")
	require.NoError(t, err, errOut)
	out, _, err = c.run(t, "doctor", "--user-claim", "preferred_username")
	require.NoError(t, err, out)
	assert.Contains(t, out, "OK    token accepted")

	bad := filepath.Join(t.TempDir(), "tok")
	tok, err := g.issuer.Keycloak("alice", "https://elsewhere.example/mcp", "mcp:use")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, []byte(tok), 0o600))
	out, _, err = c.run(t, "doctor", "--token-file", bad)
	require.ErrorIs(t, err, errChecksFailed, "exit status 1")
	assert.Contains(t, out, "FAIL  token aud")
}
