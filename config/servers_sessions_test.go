package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServersRemoteSessionsNotShared: a remote server's worker (mcpgate
// upstream) relays every line to the remote server as it is, so it cannot
// host sessions framed by the gateway: its sessions keep a worker each,
// even where worker.sessions says shared; the built-in server's are
// shared, an external command's are not by default.
func TestServersRemoteSessionsNotShared(t *testing.T) {
	for _, top := range []string{"", "  sessions: shared\n"} {
		yaml := strings.Replace(serversYAML, "worker:\n", "worker:\n"+top, 1)
		c, err := Loader{Getenv: env(nil)}.Load(writeYAML(t, yaml), nil)
		require.NoError(t, err)
		ss := c.ServerConfigs()
		require.Len(t, ss, 3)
		assert.True(t, ss[0].SharedSessions(), "the built-in worker hosts its key's sessions")
		assert.Equal(t, top != "", ss[1].SharedSessions(), "an external command: as worker.sessions says")
		assert.False(t, ss[2].SharedSessions(), "a remote server's upstream worker never does (worker.sessions %q)", top)
	}
}
