//go:build linux

package local

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// splitDaemon serves a socket as the daemon does: HTTP connections with
// Guard, stdio connections by stdio. It counts the requests and
// connections each side was given.
type splitDaemon struct {
	sock        string
	http, stdio atomic.Int32
}

func startSplitDaemon(t *testing.T, stdio func(*StdioConn)) *splitDaemon {
	t.Helper()
	d := &splitDaemon{sock: filepath.Join(t.TempDir(), "run", SocketName)}
	ln, err := Listen(d.sock, Options{})
	require.NoError(t, err)
	a, err := NewAccess(AccessOptions{OwnerUser: "owner"})
	require.NoError(t, err)
	split := SplitListener(ln, 5*time.Second, func(c *StdioConn) {
		d.stdio.Add(1)
		stdio(c)
	})
	srv := &http.Server{Handler: a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.http.Add(1)
		w.WriteHeader(http.StatusMethodNotAllowed)
	})), ConnContext: a.ConnContext(nil)}
	go srv.Serve(split)
	t.Cleanup(func() { srv.Close() })
	return d
}

// TestDialStdio: a stdio connection's peer is decided as an HTTP
// connection's is (the owner, from its credentials), it reaches the path
// it asked for, and after the answer the bytes are the client's, both
// ways; a refusal reaches the client in the daemon's words.
func TestDialStdio(t *testing.T) {
	a, err := NewAccess(AccessOptions{OwnerUser: "owner"})
	require.NoError(t, err)
	d := startSplitDaemon(t, func(c *StdioConn) {
		defer c.Close()
		_, p, err := a.StdioPeer(context.Background(), c.Conn, nil)
		if err != nil || c.Target == "/mcp/no" {
			c.Refuse("local: not you\nnor anyone")
			return
		}
		require.NoError(t, c.Accept())
		sc := bufio.NewScanner(c.In)
		for sc.Scan() {
			_, _ = io.WriteString(c, p.UserID+" "+c.Target+" got: "+sc.Text()+"\n")
		}
	})
	c, err := DialStdio(context.Background(), d.sock, Options{}, "/mcp/db")
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "not json\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "owner /mcp/db got: not json\n", line)

	_, err = DialStdio(context.Background(), d.sock, Options{}, "/mcp/no")
	require.EqualError(t, err, "local: not you nor anyone")
	_, err = DialStdio(context.Background(), d.sock, Options{}, "/mcp/../x")
	require.Error(t, err, "the client checks its own path too")
	assert.Zero(t, d.http.Load())
}

// TestSplitListener: a connection is HTTP or stdio by its first byte; an
// HTTP request reaches the http.Server, and a NUL that does not open a
// well-formed hello for a gateway path is closed unanswered, reaching
// neither side.
func TestSplitListener(t *testing.T) {
	d := startSplitDaemon(t, func(c *StdioConn) { c.Close() })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return Dial(ctx, d.sock, Options{})
	}}}
	resp, err := hc.Get("http://localhost/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "served over HTTP")
	assert.Equal(t, int32(1), d.http.Load())

	raw := func(t *testing.T, send string) string {
		c, err := Dial(context.Background(), d.sock, Options{})
		require.NoError(t, err)
		defer c.Close()
		_, _ = io.WriteString(c, send)
		_ = c.(*net.UnixConn).CloseWrite()
		b, _ := io.ReadAll(c)
		return string(b)
	}
	// net/http refuses an empty line before the request line, but it is
	// net/http's to refuse: HTTP, not a hello.
	assert.Contains(t, raw(t, "\r\nGET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 400")
	for _, send := range []string{
		"\x00",
		"\x00GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"\x00mcpgate-stdio/2 /mcp\n",
		"\x00mcpgate-stdio/1 /mcp",                                    // no end of line
		"\x00mcpgate-stdio/1 /admin\n",                                // not a gateway path
		"\x00mcpgate-stdio/1 /mcp/../admin\n",                         // nor this
		"\x00mcpgate-stdio/1 /mcp/a?b\n",                              // nor this
		"\x00mcpgate-stdio/1 /mcp/\n",                                 // an empty name
		"\x00mcpgate-stdio/1 /mcp\r\n",                                // a CR in the path
		"\x00mcpgate-stdio/1 /mcp/" + strings.Repeat("a", 600) + "\n", // over the bound
	} {
		assert.Empty(t, raw(t, send), "%q", send)
	}
	assert.Equal(t, int32(1), d.http.Load())
	assert.Equal(t, int32(0), d.stdio.Load())
}

// TestSplitListenerSilentConnection: a connection that sends nothing is
// closed when the hello's time is up, holding nothing.
func TestSplitListenerSilentConnection(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", SocketName)
	ln, err := Listen(sock, Options{})
	require.NoError(t, err)
	split := SplitListener(ln, 10*time.Millisecond, func(*StdioConn) { t.Error("no hello was sent") })
	defer split.Close()
	c, err := Dial(context.Background(), sock, Options{})
	require.NoError(t, err)
	defer c.Close()
	b, err := io.ReadAll(c) // returns once the daemon closes it
	assert.NoError(t, err)
	assert.Empty(t, b)
}
