package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListenList: server.listen takes a TCP address and a socket, as a
// YAML list or one string, and each reader finds its own; two of a kind,
// a relative socket path and unix_allowed_users without a socket are
// problems named by key.
func TestListenList(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  listen: [127.0.0.1:9000, \"unix:\"]\n"), 0o600))
	c, err := Loader{Getenv: func(string) string { return "" }}.Load(path, nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "127.0.0.1:9000", c.TCPListen())
	assert.Equal(t, "unix:", c.SocketListen())
	assert.True(t, c.Loopback())
	assert.Equal(t, "http://127.0.0.1:9000/mcp", c.Resource())

	c, err = Loader{Getenv: func(k string) string {
		return map[string]string{"MCPGATE_SERVER_LISTEN": "unix:/run/x.sock"}[k]
	}}.Load("", nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	assert.Equal(t, "", c.TCPListen())
	assert.False(t, c.Loopback())
	p, err := SocketPath(c.SocketListen(), nil)
	require.NoError(t, err)
	assert.Equal(t, "/run/x.sock", p)

	for listen, want := range map[string]string{
		"127.0.0.1:1,127.0.0.1:2": "more than one",
		"unix:a.sock":             "must be absolute",
		"unix:/a,unix:/b":         "more than one",
	} {
		c := Default()
		c.Server.Listen = listen
		err := c.Validate()
		require.Error(t, err, listen)
		assert.Contains(t, err.Error(), "server.listen")
		assert.Contains(t, err.Error(), want, listen)
	}
	c = Default()
	c.Server.UnixAllowedUsers = []UnixUser{{User: "a", Group: "b"}, {Group: "g", Toolsets: []string{"nope"}}}
	err = c.Validate()
	require.Error(t, err)
	for _, want := range []string{"server.unix_allowed_users: is set, but server.listen names no socket",
		"server.unix_allowed_users[0]: names both a user and a group", "server.unix_allowed_users[1]:"} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestDocsLocalExample: the system socket example of docs/local.md loads
// and validates.
func TestDocsLocalExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "local.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "## A system socket")
	require.True(t, ok)
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	require.True(t, ok)
	example, _, _ := strings.Cut(rest, "```")
	path := filepath.Join(t.TempDir(), "local.yaml")
	require.NoError(t, os.WriteFile(path, []byte(example), 0o600))
	c, err := Loader{Getenv: func(string) string { return "" }}.Load(path, nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	rules, err := c.UnixRules()
	require.NoError(t, err)
	require.Len(t, rules, 3)
	assert.Contains(t, rules[0].Tools, "apply_ddl")
	assert.Nil(t, rules[1].Tools, "alice: every tool")
	assert.True(t, rules[2].ReadOnly)
	assert.Equal(t, []string{"describe_table", "export_table", "list_tables"}, rules[2].Tools)
}
