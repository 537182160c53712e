package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runWithEnv(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	err = m.Run(context.Background(), args)
	require.NoError(t, m.Close())
	return out.String(), errb.String(), err
}

func TestInstallCommand(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	const u = "https://mcp.example.com/mcp"
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cursor"), 0o700))

	out, _, err := runWithEnv(t, env, "install", "--list")
	require.NoError(t, err)
	assert.Regexp(t, `cursor\s+yes\s+-`, out)
	assert.Regexp(t, `windsurf\s+no\s+-`, out)

	out, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", u, "--dry-run")
	require.NoError(t, err)
	assert.Contains(t, out, `+    "mcpgate": {`)
	_, err = os.Stat(filepath.Join(home, ".cursor", "mcp.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "--dry-run writes nothing")

	_, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", u)
	require.NoError(t, err)
	var doc map[string]map[string]map[string]any
	b, err := os.ReadFile(filepath.Join(home, ".cursor", "mcp.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, u, doc["mcpServers"]["mcpgate"]["url"])
	out, _, err = runWithEnv(t, env, "install", "--list")
	require.NoError(t, err)
	assert.Regexp(t, `cursor\s+yes\s+mcpgate`, out)
	out, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", u)
	require.NoError(t, err)
	assert.Contains(t, out, "nothing to do")

	// Claude Desktop gets the bridge, running this very executable.
	out, _, err = runWithEnv(t, env, "install", "--client", "claude-desktop", "--url", u)
	require.NoError(t, err)
	assert.Contains(t, out, "login --url "+u)
	b, err = os.ReadFile(filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	exe, _ := executable("")
	assert.Equal(t, exe, doc["mcpServers"]["mcpgate"]["command"])
	assert.Equal(t, []any{"bridge", "--url", u}, doc["mcpServers"]["mcpgate"]["args"])

	_, _, err = runWithEnv(t, env, "uninstall", "--client", "cursor", "--url", "https://other.example.com/mcp")
	require.Error(t, err, "an entry for another URL is not ours to remove")
	_, _, err = runWithEnv(t, env, "uninstall", "--client", "cursor")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(home, ".cursor", "mcp.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "install made the file; uninstall gives back no file")

	for _, bad := range [][]string{
		{"install", "--client", "emacs", "--url", u},
		{"install", "--client", "cursor"},
		{"install", "--client", "cursor", "--url", u, "--scope", "team"},
		{"uninstall", "--client", "cursor", "extra"},
	} {
		_, errOut, err := runWithEnv(t, env, bad...)
		assert.ErrorIs(t, err, errUsage, "%v: %s", bad, errOut)
	}
	_, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", "ftp://x/mcp")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an absolute http(s) URL")
}

// The bridge entry runs mcpgate by the path the user started it by (a
// package manager's symlink), not the file the link leads to, and carries
// --ca-file and --cache; a Codex user is told how Codex logs in.
func TestInstallBridgeEntry(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	const u = "https://mcp.example.com/mcp"
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o700))
	link := filepath.Join(bin, "mcpgate")
	require.NoError(t, os.Symlink(exe, link))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Args0: "mcpgate"}
	require.NoError(t, m.Run(context.Background(), []string{"install", "--client", "claude-desktop", "--url", u,
		"--ca-file", "ca.pem", "--cache", filepath.Join(home, "tokens.json")}), errb.String())
	require.NoError(t, m.Close())
	var doc map[string]map[string]map[string]any
	b, err := os.ReadFile(filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, link, doc["mcpServers"]["mcpgate"]["command"], "the link, not its target")
	wd, _ := os.Getwd()
	assert.Equal(t, []any{"bridge", "--url", u, "--ca-file", filepath.Join(wd, "ca.pem"), "--cache", filepath.Join(home, "tokens.json")},
		doc["mcpServers"]["mcpgate"]["args"])
	assert.NotContains(t, out.String(), ".bak", "no backup of a file that did not exist is announced")

	// A server of that name the user wrote: listed, not taken over.
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(cursor), 0o700))
	require.NoError(t, os.WriteFile(cursor, []byte(`{"mcpServers":{"mcpgate":{"command":"my-own"}}}`), 0o600))
	list, _, err := runWithEnv(t, env, "install", "--list")
	require.NoError(t, err)
	assert.Regexp(t, `cursor\s+yes\s+mcpgate`, list)
	_, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", u)
	require.ErrorContains(t, err, "--force")
	_, _, err = runWithEnv(t, env, "uninstall", "--client", "cursor")
	require.ErrorContains(t, err, "--force")
	_, _, err = runWithEnv(t, env, "install", "--client", "cursor", "--url", u, "--force")
	require.NoError(t, err)

	_, errOut, err := runWithEnv(t, env, "install", "--client", "cursor", "--url", u, "--ca-file", "ca.pem")
	assert.ErrorIs(t, err, errUsage, "a remote entry takes no --ca-file: %s", errOut)

	out2, _, err := runWithEnv(t, env, "install", "--client", "codex", "--url", u)
	require.NoError(t, err)
	assert.Contains(t, out2, "codex mcp login mcpgate")
}

func TestDoctorConfigCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(yaml string) string {
		p := filepath.Join(dir, "mcpgate.yaml")
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		return p
	}
	base := "server:\n  listen: 127.0.0.1:0\ndatabase:\n  path: " + filepath.Join(dir, "data.db") + "\nlimits:\n  worker_start_timeout: 60s\n"
	out, errOut, err := runWithEnv(t, nil, "doctor", "--config", write(base))
	require.NoError(t, err, "%s\n%s", out, errOut)
	assert.Regexp(t, `OK\s+worker\s+started and answered initialize`, out)
	assert.Regexp(t, `OK\s+worker \(read-only\)`, out)
	assert.Regexp(t, `WARN\s+auth`, out)

	falseBin, err := exec.LookPath("false") // a worker that exits at once
	require.NoError(t, err)
	out, _, err = runWithEnv(t, nil, "doctor", "--config", write(base+"worker:\n  command: [\""+falseBin+"\"]\n"))
	require.ErrorIs(t, err, errChecksFailed)
	assert.Regexp(t, `FAIL\s+worker\s+`, out)

	out, _, err = runWithEnv(t, nil, "doctor", "--config", write("bogus: 1\n"))
	require.ErrorIs(t, err, errChecksFailed)
	assert.Regexp(t, `FAIL\s+config`, out)
}

// TestInstallSeveralServers: each server of a gateway gets an entry of its
// own, named after it, so that installing one never replaces another's.
func TestInstallSeveralServers(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cursor"), 0o700))
	for _, s := range []string{"db", "github"} {
		_, _, err := runWithEnv(t, env, "install", "--client", "cursor", "--url", "https://mcp.example.com/mcp/"+s)
		require.NoError(t, err)
	}
	read := func() map[string]map[string]map[string]any {
		var doc map[string]map[string]map[string]any
		b, err := os.ReadFile(filepath.Join(home, ".cursor", "mcp.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &doc))
		return doc
	}
	doc := read()
	assert.Equal(t, "https://mcp.example.com/mcp/db", doc["mcpServers"]["mcpgate-db"]["url"])
	assert.Equal(t, "https://mcp.example.com/mcp/github", doc["mcpServers"]["mcpgate-github"]["url"])

	_, _, err := runWithEnv(t, env, "uninstall", "--client", "cursor", "--url", "https://mcp.example.com/mcp/db")
	require.NoError(t, err)
	doc = read()
	assert.NotContains(t, doc["mcpServers"], "mcpgate-db")
	assert.Contains(t, doc["mcpServers"], "mcpgate-github")
}
