//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/local"
)

// TestLocalOtherAccountCombined: another local account that a system
// socket's rule opens read-only reaches a servers list's combined /mcp
// read-only too: no server's write tool is listed to it, and a write it
// sends anyway is refused; the database holds nothing it planted.
func TestLocalOtherAccountCombined(t *testing.T) {
	name, uid, gid := otherAccount(t, 1)
	run := asAccount(t, uid, gid)
	dir := filepath.Join(t.TempDir(), "system")
	sock := filepath.Join(dir, local.SocketName)
	cfg := filepath.Join(t.TempDir(), "mcpgate.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`server:
  unix_allowed_users:
    - user: `+name+`
      read_only: true
servers:
  - name: db
  - name: gh
`), 0o644))
	daemonInProcess(t, sock, cfg)
	reachable(t, sock)

	cmd := run("bridge", "--socket="+sock, "--no-start", "--system")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	defer cs.Close()

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)
	for _, tl := range tools.Tools {
		assert.NotEqual(t, "db__execute_sql", tl.Name, "a read-only account was offered a write tool")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "db__execute_sql", Arguments: map[string]any{"sql": "CREATE TABLE planted (x int)"}})
	if err == nil {
		assert.True(t, res.IsError, "a read-only account wrote through /mcp: %+v", res.Content)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "db__query", Arguments: map[string]any{"sql": "SELECT count(*) AS n FROM sqlite_master WHERE name = 'planted'"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "0")
}
