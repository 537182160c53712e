//go:build linux

package local

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// stdioDaemon serves a socket as the daemon does: HTTP connections with
// Guard(h), stdio connections with ServeStdio(h). It counts the
// connections each side was given.
type stdioDaemon struct {
	sock        string
	http, stdio atomic.Int32
}

func startStdioDaemon(t *testing.T, h http.Handler, o StdioOptions) *stdioDaemon {
	t.Helper()
	d := &stdioDaemon{sock: filepath.Join(t.TempDir(), "run", SocketName)}
	ln, err := Listen(d.sock, Options{})
	require.NoError(t, err)
	a, err := NewAccess(AccessOptions{OwnerUser: "owner"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	o.Handler = h
	split := SplitListener(ln, 5*time.Second, func(c *StdioConn) {
		d.stdio.Add(1)
		a.ServeStdio(ctx, c, o)
	})
	srv := &http.Server{Handler: a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.http.Add(1)
		h.ServeHTTP(w, r)
	})), ConnContext: a.ConnContext(nil)}
	go srv.Serve(split)
	t.Cleanup(func() { cancel(); srv.Close() })
	return d
}

// echoHandler answers each JSON-RPC request with who the gateway was told
// it came from; "stream" streams a notification first, "big" answers
// 200 KB, "boom" panics.
func echoHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		require.NoError(t, err)
		if !m.IsRequest() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		p := auth.PrincipalFrom(r.Context())
		user := ""
		if p != nil {
			user = p.UserID
		}
		result := map[string]any{"user": user, "remote": r.RemoteAddr, "path": r.URL.Path, "host": r.Host,
			"authorization": r.Header.Get("Authorization"), "fromSocket": FromSocket(r)}
		switch m.Method {
		case "boom":
			panic("boom")
		case "big":
			result["pad"] = strings.Repeat("x", 200<<10)
		case "stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"first"}}`)
			w.(http.Flusher).Flush()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
			fmt.Fprintf(w, "data: %s\n\n", b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	})
}

// stdioCall sends one line and reads lines until the answer to id.
func stdioCall(t *testing.T, c net.Conn, r *bufio.Reader, line string, id int) (answer map[string]any, before []string) {
	t.Helper()
	_, err := io.WriteString(c, line+"\n")
	require.NoError(t, err)
	for {
		l, err := r.ReadString('\n')
		require.NoError(t, err)
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &a), l)
		if a["id"] == float64(id) {
			return a, before
		}
		before = append(before, strings.TrimSpace(l))
	}
}

// TestServeStdio: a stdio connection is served as the socket's peer (the
// principal Guard gives, no Authorization, its uid as the remote
// address), at the path it asked for; a streamed answer arrives in
// order, a large one whole, and a handler that panics fails its request
// with an answer, not the daemon. No HTTP request reaches the socket's
// http.Server.
func TestServeStdio(t *testing.T) {
	d := startStdioDaemon(t, echoHandler(t), StdioOptions{})
	c, err := DialStdio(context.Background(), d.sock, Options{}, "/mcp/db")
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)

	a, _ := stdioCall(t, c, r, `{"jsonrpc":"2.0","id":1,"method":"who"}`, 1)
	res := a["result"].(map[string]any)
	assert.Equal(t, "owner", res["user"])
	assert.Equal(t, "/mcp/db", res["path"])
	assert.Equal(t, "localhost", res["host"])
	assert.Equal(t, "", res["authorization"])
	assert.Equal(t, true, res["fromSocket"])
	assert.Regexp(t, `^uid:\d+$`, res["remote"])

	a, before := stdioCall(t, c, r, `{"jsonrpc":"2.0","id":2,"method":"stream"}`, 2)
	assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"first"}}`}, before)
	assert.Equal(t, "owner", a["result"].(map[string]any)["user"])

	a, _ = stdioCall(t, c, r, `{"jsonrpc":"2.0","id":3,"method":"big"}`, 3)
	assert.Len(t, a["result"].(map[string]any)["pad"], 200<<10)

	a, _ = stdioCall(t, c, r, `{"jsonrpc":"2.0","id":4,"method":"boom"}`, 4)
	assert.NotNil(t, a["error"], "a request whose handler panicked is answered")
	a, _ = stdioCall(t, c, r, `{"jsonrpc":"2.0","id":5,"method":"who"}`, 5)
	assert.NotNil(t, a["result"], "and the connection goes on")

	assert.Equal(t, int32(0), d.http.Load())
	assert.Equal(t, int32(1), d.stdio.Load())
}

// TestServeStdioRefusedOverShare: a stdio connection its principal's
// share does not admit is refused with the reason, before any request.
func TestServeStdioRefusedOverShare(t *testing.T) {
	var asked atomic.Int32
	d := startStdioDaemon(t, echoHandler(t), StdioOptions{Admit: func(_ context.Context, p *auth.Principal) bool {
		asked.Add(1)
		return p.UserID != "owner"
	}})
	_, err := DialStdio(context.Background(), d.sock, Options{}, "/mcp")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "limits.max_connections_per_principal")
	assert.Equal(t, int32(1), asked.Load())
}

// TestSplitListener: a connection is HTTP or stdio by its first byte; an
// HTTP request (even one after an empty line) reaches the http.Server,
// and a NUL that does not open a well-formed hello for a gateway path
// is closed unanswered, reaching neither side.
func TestSplitListener(t *testing.T) {
	d := startStdioDaemon(t, echoHandler(t), StdioOptions{})
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
