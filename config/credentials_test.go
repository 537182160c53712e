package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/credential"
)

// credentialsFile is a configuration with each kind of credential.
const credentialsFile = `
server:
  public_url: https://mcp.example.com
auth:
  issuer: https://kc.example.com/realms/mcp
  introspection_client_id: mcpgate
  introspection_client_secret_file: SECRET
worker:
  command: [/bin/cat]
  run_as: user
  uid_range: 200000-299999
  uid_map_file: /var/lib/mcpgate/uids.json
  data_dir: /var/lib/mcpgate/users
  credentials:
    - env: GITHUB_PERSONAL_ACCESS_TOKEN
      from: token_exchange
      audience: github-mcp
      scope: repo
    - env_file: JIRA_TOKEN_FILE
      from: file
      dir: /etc/mcpgate/secrets
    - env: SONAR_TOKEN
      from: static
      path: /etc/mcpgate/sonar-token
`

func loadCredentials(t *testing.T, file string) *Config {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))
	c, err := Loader{Getenv: env(nil)}.Load(writeFile(t, "c.yaml", strings.ReplaceAll(file, "SECRET", secret)), nil)
	require.NoError(t, err)
	return c
}

func TestCredentialsLoad(t *testing.T) {
	c := loadCredentials(t, credentialsFile)
	require.NoError(t, c.Validate())
	o := c.CredentialOptions()
	require.Len(t, o.Credentials, 3)
	assert.Equal(t, credential.Credential{Env: "GITHUB_PERSONAL_ACCESS_TOKEN", From: "token_exchange", Audience: "github-mcp", Scope: "repo"}, o.Credentials[0])
	assert.Equal(t, "JIRA_TOKEN_FILE", o.Credentials[1].EnvFile)
	assert.Equal(t, "/etc/mcpgate/sonar-token", o.Credentials[2].Path)
}

// TestCredentialsRefused: what the configuration refuses, under the key
// that sets it.
func TestCredentialsRefused(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"workers share the gateway's account", func(c *Config) {
			c.Worker.RunAs, c.Worker.UIDRange, c.Worker.UIDMapFile, c.Worker.DataDir = "gateway", "", "", ""
		}, "worker.credentials: a worker's credential is readable by every other worker"},
		{"sandbox without require", func(c *Config) {
			c.Worker.RunAs, c.Worker.UIDRange, c.Worker.UIDMapFile, c.Worker.DataDir = "gateway", "", "", ""
			c.Worker.Sandbox.Enabled = true
		}, "worker.sandbox.require"},
		{"sandbox opening /proc", func(c *Config) {
			c.Worker.RunAs, c.Worker.UIDRange, c.Worker.UIDMapFile, c.Worker.DataDir = "gateway", "", "", ""
			c.Worker.Sandbox.Enabled, c.Worker.Sandbox.Require = true, true
			c.Worker.Sandbox.ReadPaths = []string{"/proc"}
		}, `worker.sandbox path "/proc"`},
		{"exchange without the gateway's client", func(c *Config) { c.Auth.IntrospectionClientID = "" }, "needs auth.issuer, auth.introspection_client_id"},
		{"a credential's own problem", func(c *Config) { c.Worker.Credentials[0].Audience = "" }, "worker.credentials[0].audience: token_exchange needs the audience"},
		{"header on the stdio server", func(c *Config) { c.Worker.Credentials[2].Env, c.Worker.Credentials[2].Header = "", "Authorization" }, "worker.credentials[2].header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadCredentials(t, credentialsFile)
			tt.edit(c)
			err := c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// The sandbox, required and closed to /proc, is enough.
	c := loadCredentials(t, credentialsFile)
	c.Worker.RunAs, c.Worker.UIDRange, c.Worker.UIDMapFile, c.Worker.DataDir = "gateway", "", "", ""
	c.Worker.Sandbox.Enabled, c.Worker.Sandbox.Require = true, true
	c.Worker.Sandbox.ReadPaths = []string{"/proc/self/status", "/proc/sys"}
	assert.NoError(t, c.Validate())
}

func TestOpensProc(t *testing.T) {
	for p, want := range map[string]bool{"/": true, "/proc": true, "/proc/": true, "/proc/1": true, "/proc/1/environ": true,
		"/proc/self": false, "/proc/sys": false, "/opt/proc": false, "/procfs": false} {
		assert.Equal(t, want, opensProc(p), p)
	}
}
