package gateway

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile tests of slow clients: clients that never read their answers
// must not hold the gateway's memory or their sessions.

// smallSendBuffer gives every accepted connection a small kernel send
// buffer, so that a client that does not read blocks the gateway's writes
// after kilobytes rather than megabytes.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// dialNonReader opens a raw TCP connection with a tiny receive window to
// the server at rawURL; the test then never reads from it.
func dialNonReader(t *testing.T, rawURL string) net.Conn {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		})
	}}
	c, err := d.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// bigBatch is a 2025-03-26 batch of n calls of the stub's big tool, each
// answered with about size bytes.
func bigBatch(n, size int) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"size":%d}}}`, i+1, size)
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// postRaw writes one POST on c and does not read the answer.
func postRaw(t *testing.T, c net.Conn, sid, accept, body string) {
	t.Helper()
	_, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
		"MCP-Session-Id: %s\r\nMCP-Protocol-Version: 2025-03-26\r\nContent-Length: %d\r\n\r\n%s", accept, sid, len(body), body)
	require.NoError(t, err)
}

// awaitIdle waits until no HTTP request is being served on session sid.
func awaitIdle(t *testing.T, g *Gateway, sid string) {
	t.Helper()
	s := g.sessionByID(sid)
	require.NotNil(t, s)
	require.Eventually(t, func() bool { return s.busy.Load() == 0 }, 60*time.Second, 10*time.Millisecond,
		"session %s still serves a request", sid)
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestNeverReadingClientsStayBounded(t *testing.T) {
	const mib = 1 << 20
	clock := newTestClock()
	opts := Options{
		Now: clock.Now, SessionIdleTimeout: 10 * time.Minute, WriteTimeout: time.Second,
		MaxStreamBufferBytes: 4 * mib, MaxSessionBufferBytes: 6 * mib, MaxUserBufferBytes: 8 * mib,
	}
	g, srv := newTestGatewayOn(t, opts, func(l net.Listener) net.Listener { return smallSendBuffer{l} }, nil)

	// Three sessions of one user, each posting twelve 1 MiB answers on a
	// connection that never reads: as JSON (held whole unless bounded),
	// and as SSE (written until the socket fills, then stuck).
	var sids []string
	for i, accept := range []string{"application/json", "application/json", "text/event-stream"} {
		sid := rawSession(t, srv.URL)
		sids = append(sids, sid)
		postRaw(t, dialNonReader(t, srv.URL), sid, accept, bigBatch(12, mib))
		t.Logf("session %d (%s) posted", i, accept)
	}
	// The answers are held for the clients first (awaitIdle alone could
	// look before a request is served): a JSON response of 1 MiB answers
	// fits at least three in its 4 MiB stream limit, whatever the others
	// took of the user's 8 MiB.
	require.Eventually(t, func() bool { return g.acct.buffered.peak.Load() >= 3*mib }, 60*time.Second, 10*time.Millisecond,
		"the answers are never held for the clients")
	for _, sid := range sids {
		awaitIdle(t, g, sid) // the write deadline ended each response
	}
	peak := g.acct.buffered.peak.Load()
	t.Logf("peak buffered: %d bytes", peak)
	assert.LessOrEqual(t, peak, int64(opts.MaxUserBufferBytes), "the user's buffer limit holds")
	assert.Zero(t, g.BufferedBytes(), "every byte held is given back once the responses end")

	// Their sessions no longer count as busy: the reaper ends them.
	clock.advance(11 * time.Minute)
	g.reapIdle()
	assert.Zero(t, g.Sessions())
}

func TestBufferFullAnswer(t *testing.T) {
	const size = 1_000_000
	_, srv := newTestGateway(t, Options{MaxStreamBufferBytes: 3 << 20})
	sid := rawSession(t, srv.URL)
	resp, body := rawDo(t, http.MethodPost, srv.URL, bigBatch(6, size), sidHdr, sid, protoHdr, "2025-03-26", "Accept", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &answers))
	require.Len(t, answers, 6, "every request is answered")
	results, full := 0, 0
	for i, a := range answers {
		assert.Equal(t, i+1, a.ID, "request order")
		if a.Error == nil {
			results++
			continue
		}
		full++
		assert.Equal(t, "bufferFull", a.Error.Data["kind"])
		assert.Contains(t, a.Error.Message, "limits.max_stream_buffer_bytes")
		assert.Contains(t, a.Error.Message, "3145728 bytes")
	}
	assert.Equal(t, 3, results, "three answers of 1 MB fit in 3 MiB")
	assert.Equal(t, 3, full)
}

func TestAbandonedRequestIsReaped(t *testing.T) {
	clock := newTestClock()
	g, srv := newTestGateway(t, Options{Now: clock.Now, SessionIdleTimeout: 10 * time.Minute})
	sid := rawSession(t, srv.URL)
	pid, _ := g.WorkerPid(sid)
	s := g.sessionByID(sid)

	// A call the worker will not answer for ten hours, from a client that
	// then leaves.
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":36000000}}}`
	postRaw(t, c, sid, "application/json", body)
	require.Eventually(t, func() bool { return s.conn.InFlight() == 1 }, 30*time.Second, 10*time.Millisecond)
	c.Close()
	awaitIdle(t, g, sid)
	require.Equal(t, 1, s.conn.InFlight(), "the worker still runs the call")

	clock.advance(9 * time.Minute)
	g.reapIdle()
	require.Equal(t, 1, g.Sessions(), "not idle for 10 minutes yet")
	clock.advance(2 * time.Minute)
	g.reapIdle()
	assert.Zero(t, g.Sessions(), "a request nobody waits for does not keep its session")
	<-s.conn.Done()
	requireReaped(t, pid)
}
