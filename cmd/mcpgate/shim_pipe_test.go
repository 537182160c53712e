//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/local"
)

// runShimWith runs `mcpgate bridge --socket=sock --no-start` in-process
// with stdin as the client's messages, and returns what it wrote to the
// client and to stderr.
func runShimWith(t *testing.T, sock, stdin string) (string, string, error) {
	t.Helper()
	var out, errb lockedBuffer
	m := &Main{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	err := m.Run(context.Background(), []string{"bridge", "--socket=" + sock, "--no-start"})
	require.NoError(t, m.Close())
	return out.String(), errb.String(), err
}

// TestShimIsAPipe: the shim passes the client's bytes to the socket and
// the daemon's to the client unread, on a stdio connection: a line that
// is not even JSON arrives as it was sent, and no HTTP request is made.
func TestShimIsAPipe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", local.SocketName)
	ln, err := local.Listen(sock, local.Options{})
	require.NoError(t, err)
	var httpRequests atomic.Int32
	split := local.SplitListener(ln, 5*time.Second, func(c *local.StdioConn) {
		defer c.Close()
		assert.Equal(t, "/mcp", c.Target)
		require.NoError(t, c.Accept())
		sc := bufio.NewScanner(c.In)
		for sc.Scan() {
			_, _ = io.WriteString(c, "got: "+sc.Text()+"\n")
		}
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpRequests.Add(1)
		w.WriteHeader(http.StatusTeapot)
	})}
	go srv.Serve(split)
	defer srv.Close()

	out, stderr, err := runShimWith(t, sock, "not json at all\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
	require.NoError(t, err, stderr)
	assert.Equal(t, "got: not json at all\ngot: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", out)
	assert.Zero(t, httpRequests.Load())
}

// TestShimOlderDaemon: a daemon of an older mcpgate, which serves HTTP
// only, answers the stdio hello as HTTP; the shim then relays over HTTP
// as it used to, so that an upgrade does not break the clients of a
// daemon still running.
func TestShimOlderDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", local.SocketName)
	ln, err := local.Listen(sock, local.Options{})
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"path":"` + r.URL.Path + `"}}`))
	})}
	go srv.Serve(ln)
	defer srv.Close()

	out, stderr, err := runShimWith(t, sock, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
	require.NoError(t, err, stderr)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{"path":"/mcp"}}`, out)
	assert.Contains(t, stderr, "older mcpgate")
}

// stdioSocket serves a socket's stdio connections as the daemon does
// (LimitListener with lo, the count, the split), with handler; HTTP
// connections are accepted and dropped.
func stdioSocket(t *testing.T, lo gateway.ListenerOptions, handler http.Handler, maxBody int) (string, *atomic.Int64, *stdioConns) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "run", local.SocketName)
	ln, err := local.Listen(sock, local.Options{})
	require.NoError(t, err)
	access, err := local.NewAccess(local.AccessOptions{OwnerUser: "owner"})
	require.NoError(t, err)
	conns := &atomic.Int64{}
	stdio := &stdioConns{}
	split := local.SplitListener(gateway.LimitListener(countConns(ln, conns), lo), 5*time.Second,
		stdio.serve(stdioOptions{access: access, handler: handler, log: slog.New(slog.DiscardHandler), maxBody: maxBody}))
	t.Cleanup(func() { split.Close() })
	go func() {
		for {
			c, err := split.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return sock, conns, stdio
}

// TestStdioConnectionsCount: a stdio connection counts as an open
// connection of the socket (the idle exit waits for it) from its accept
// until it closes; shutdown ends those still open.
func TestStdioConnectionsCount(t *testing.T) {
	sock, conns, stdio := stdioSocket(t, gateway.ListenerOptions{}, http.NotFoundHandler(), 0)
	c, err := local.DialStdio(context.Background(), sock, local.Options{}, "/mcp")
	require.NoError(t, err)
	assert.Equal(t, int64(1), conns.Load(), "an open stdio connection is a client")
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return conns.Load() == 0 }, time.Minute, time.Millisecond, "closed, it is not")

	// Shutdown ends a connection still open, and waits for it.
	c, err = local.DialStdio(context.Background(), sock, local.Options{}, "/mcp")
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdio.shutdown(ctx)
	require.NoError(t, ctx.Err(), "shutdown waited for the connection to end")
	b, _ := io.ReadAll(c)
	assert.Empty(t, bytes.TrimSpace(b))
	assert.Equal(t, int64(0), conns.Load())
}

// TestStdioConnectionOverShare: a stdio connection counts against its
// principal's share of connections from its hello, as an HTTP connection
// does from its first request: one beyond it is refused with the reason,
// before any request.
func TestStdioConnectionOverShare(t *testing.T) {
	sock, _, _ := stdioSocket(t, gateway.ListenerOptions{MaxConnectionsPerPrincipal: 1}, http.NotFoundHandler(), 0)
	first, err := local.DialStdio(context.Background(), sock, local.Options{}, "/mcp")
	require.NoError(t, err)
	defer first.Close()
	_, err = local.DialStdio(context.Background(), sock, local.Options{}, "/mcp")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "limits.max_connections_per_principal")
}

// TestStdioMessageOverBodyLimit: the daemon holds no more of a stdio
// connection's message than limits.max_body_bytes, as of an HTTP body: a
// larger one is answered with the limit, and never reaches the gateway.
func TestStdioMessageOverBodyLimit(t *testing.T) {
	var reached atomic.Int32
	sock, _, _ := stdioSocket(t, gateway.ListenerOptions{}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}), 1024)
	c, err := local.DialStdio(context.Background(), sock, local.Options{}, "/mcp")
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"pad":"`+strings.Repeat("x", 2048)+`"}}`+"\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"id":9`)
	assert.Contains(t, line, "over the limit of 1024 bytes")
	assert.Zero(t, reached.Load())
}
