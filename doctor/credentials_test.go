package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
)

// credentialFixture is a server fixture whose workers get a token
// exchanged by the gateway's client and a per-user secret.
func credentialFixture(t *testing.T, secret string) *serverFixture {
	f := newServerFixture(t)
	f.iss.SetExchangeClient("mcpgate", "right")
	secretFile := filepath.Join(f.dir, "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	secrets := filepath.Join(f.dir, "secrets")
	require.NoError(t, os.Mkdir(secrets, 0o700))
	f.cfg.Auth.IntrospectionClientID, f.cfg.Auth.IntrospectionClientSecretFile = "mcpgate", secretFile
	f.cfg.Worker.Command = []string{"/bin/cat"}
	f.cfg.Worker.Sandbox.Enabled, f.cfg.Worker.Sandbox.Require = true, true
	f.cfg.Worker.Credentials = []config.WorkerCredential{
		{Env: "GITHUB_TOKEN", From: "token_exchange", Audience: "github-mcp"},
		{Env: "JIRA_TOKEN", From: "file", Dir: secrets},
	}
	return f
}

func TestDoctorCredentials(t *testing.T) {
	f := credentialFixture(t, "right")
	r := CheckServer(t.Context(), f.cfg, ServerOptions{Roots: f.opts.Roots})
	for _, c := range []string{"token exchange", "exchange client", "credential JIRA_TOKEN"} {
		got, ok := r.Find(c)
		if assert.True(t, ok, c) {
			assert.Equal(t, OK, got.Status, "%s: %s", c, got.Detail)
		}
	}

	f = credentialFixture(t, "wrong")
	require.NoError(t, os.Chmod(f.cfg.Worker.Credentials[1].Dir, 0o755))
	r = CheckServer(t.Context(), f.cfg, ServerOptions{Roots: f.opts.Roots})
	got, _ := r.Find("exchange client")
	assert.Equal(t, Fail, got.Status)
	assert.Contains(t, got.Detail, "invalid_client")
	got, _ = r.Find("credential JIRA_TOKEN")
	assert.Equal(t, Fail, got.Status)
	assert.Contains(t, got.Detail, "mode 0755")
}

// TestDoctorServerCredentials: each server's own credentials are checked
// under its name and key, and a token exchange of any server checks the
// gateway's client once.
func TestDoctorServerCredentials(t *testing.T) {
	f := credentialFixture(t, "right")
	creds := f.cfg.Worker.Credentials
	f.cfg.Worker.Command, f.cfg.Worker.Credentials = nil, nil
	f.cfg.Servers = []config.ServerEntry{{Name: "db"}, {Name: "gh", Command: []string{"/bin/cat"}, Credentials: creds}}
	require.NoError(t, os.Chmod(creds[1].Dir, 0o755))
	r := CheckServer(t.Context(), f.cfg, ServerOptions{Roots: f.opts.Roots})
	got, ok := r.Find("server gh credential JIRA_TOKEN")
	require.True(t, ok)
	assert.Equal(t, Fail, got.Status)
	assert.Contains(t, got.Fix, "servers[1].credentials[1].dir")
	got, ok = r.Find("exchange client")
	require.True(t, ok)
	assert.Equal(t, OK, got.Status, got.Detail)
}
