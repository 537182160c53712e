package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/install"
)

// TestInstallLocalEveryClient: install --local writes, for every client
// install knows, a stdio entry that runs this executable's bridge
// --socket (with --config and --server passed on), remote-capable clients
// included; a second run changes nothing, and --local with --url is a
// usage error.
func TestInstallLocalEveryClient(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "APPDATA": home, "XDG_CONFIG_HOME": home + "/.config"}
	exe, err := executable("")
	require.NoError(t, err)
	for _, c := range install.Clients() {
		t.Run(c.Name, func(t *testing.T) {
			_, errOut, err := runWithEnv(t, env, "install", "--client", c.Name, "--local", "--config", "/etc/mcpgate/local.yaml", "--server", "pg")
			require.NoError(t, err, errOut)
			b, err := os.ReadFile(c.Path(install.Env{Home: home, Getenv: func(k string) string { return env[k] }}, install.User))
			require.NoError(t, err)
			text := string(b)
			assert.Contains(t, text, exe)
			for _, arg := range []string{"bridge", "--socket", "--config", "/etc/mcpgate/local.yaml", "--server", "pg"} {
				assert.Contains(t, text, `"`+arg+`"`, "%s: %s", c.Name, text)
			}
			assert.NotContains(t, text, "--url")
			assert.NotContains(t, strings.ToLower(text), "http://")
			out, _, err := runWithEnv(t, env, "install", "--client", c.Name, "--local", "--config", "/etc/mcpgate/local.yaml", "--server", "pg")
			require.NoError(t, err)
			assert.Contains(t, out, "nothing to do")
		})
	}
	_, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--local", "--url", "https://mcp.example.com/mcp")
	assert.ErrorIs(t, err, errUsage)
}
