//go:build linux

package local

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitListenerDotNames: a hello for /mcp/.. or /mcp/. names no
// server (a server's name starts with a letter or digit); the daemon's
// mux would clean it to another path, so it is closed unanswered, as any
// hello that is not for a gateway path, and the client refuses to send it.
func TestSplitListenerDotNames(t *testing.T) {
	d := startSplitDaemon(t, func(c *StdioConn) { c.Close() })
	for _, target := range []string{"/mcp/..", "/mcp/."} {
		c, err := Dial(context.Background(), d.sock, Options{})
		require.NoError(t, err)
		_, _ = io.WriteString(c, "\x00mcpgate-stdio/1 "+target+"\n")
		_ = c.(*net.UnixConn).CloseWrite()
		b, _ := io.ReadAll(c)
		c.Close()
		assert.Empty(t, string(b), target)
		_, err = DialStdio(context.Background(), d.sock, Options{}, target)
		assert.Error(t, err, "the client checks its own path too: %s", target)
	}
	assert.Zero(t, d.stdio.Load())
	assert.Zero(t, d.http.Load())
}
