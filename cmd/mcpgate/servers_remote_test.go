package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServersRemoteEntry: a remote server of a servers list (url) is
// reached through its per-user `mcpgate upstream` worker on both protocol
// generations. That worker speaks plain stdio MCP, never the gateway's
// session frames, so its sessions are per session whatever the built-in
// servers beside it share.
func TestServersRemoteEntry(t *testing.T) {
	rm := startRemote(t, false)
	file := filepath.Join(t.TempDir(), "servers.yaml")
	yaml := `
servers:
  - name: db
  - name: remote
    url: ` + rm.url + `
    safe_tools: [echo]
`
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	g := launchTLSGateway(t, map[string]string{"MCPGATE_CONFIG": file}, tlsLaunch{})
	base := g.resource
	remote := new(tlsGateway)
	*remote = *g
	remote.resource = base + "/remote"
	remote.awaitServing(t)
	tok := remote.token(t, "alice", "mcp:use", "mcp:write")
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := remote.connectVersion(t, &tok, version)
			assert.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			assert.Equal(t, "over there", callText(t, cs, "echo", map[string]any{"text": "over there"}))
		})
	}
}
