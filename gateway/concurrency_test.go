package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two requests of one user in flight on one worker must never receive each
// other's messages: what the worker sends without saying whose it is goes
// to the only request in flight, else to the session's GET stream, else
// nowhere; a request of the worker's that goes nowhere gets an error
// answer, so the tool does not hang.

// bounded is the client of these tests: before the fix a question of B's
// went to A's client, which never answers it, and B's call hung; with the
// timeout the test fails rather than stalls.
var bounded = &http.Client{Timeout: 30 * time.Second}

// sessionCall is callRaw through bounded.
func sessionCall(t *testing.T, url, sid, id, tool string, args map[string]any) map[string]any {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":%s}`, id, params)))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", sidHdr: sid, protoHdr: "2025-11-25"} {
		req.Header.Set(k, v)
	}
	resp, err := bounded.Do(req)
	require.NoError(t, err, "B's call")
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return m
}

// fifo makes a named pipe for the stub's await tool, which blocks until
// release writes to it.
func fifo(t *testing.T) (path string, release func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	return path, func() { require.NoError(t, os.WriteFile(path, []byte("go"), 0o600)) }
}

// TestSessionConcurrentCallsKeepTheirMessages: a 2025-11-25 session with
// two calls in flight and no GET stream. B's log notification and B's
// sampling request (the worker says whose neither is) went to A's stream,
// the oldest; now the log is dropped, the sampling request is refused to
// the worker (B's tool reports it), and A's stream carries A's answer only.
func TestSessionConcurrentCallsKeepTheirMessages(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	sid := rawSession(t, srv.URL)
	path, release := fifo(t)
	a := openStream(t, context.Background(), http.MethodPost, srv.URL, sid,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"A","method":"tools/call","params":{"name":"await","arguments":{"text":%q},"_meta":{"progressToken":"A"}}}`, path))
	require.Equal(t, "notifications/progress", a.next(t)["method"], "A runs")

	b := sessionCall(t, srv.URL, sid, "B", "log", map[string]any{"text": "B's log"})
	assert.Equal(t, "logged", resultText(b))
	b = sessionCall(t, srv.URL, sid, "B2", "sample", map[string]any{"text": "B's question"})
	assert.Contains(t, resultText(b), "noStream", "B's question was refused to the worker, not asked of A's client")

	release()
	m := a.next(t)
	assert.Equal(t, "A", m["id"], "A's next message is its answer, not B's: %v", m)
	assert.Equal(t, "released", resultText(m))
}

// modernStream posts a 2026-07-28 tools/call as user, accepting SSE, and
// returns its stream once the response headers are in.
func modernStream(t *testing.T, url, user, id, tool, params string) *sseStream {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `",` + params + `}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		protoHdr: "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "X-Test-User": user} {
		req.Header.Set(k, v)
	}
	resp, err := bounded.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return &sseStream{resp, bufio.NewReader(resp.Body)}
}

// modernAnswer reads a 2026-07-28 request's answer, on either kind of
// response.
func modernAnswer(t *testing.T, s *sseStream) map[string]any {
	t.Helper()
	if s.resp.Header.Get("Content-Type") == "application/json" {
		var m map[string]any
		require.NoError(t, json.NewDecoder(s.br).Decode(&m))
		return m
	}
	for {
		if m := s.next(t); m["id"] != nil {
			return m
		}
	}
}

// TestModernConcurrentCallsOfOneUserKeepTheirMessages: on 2026-07-28 one
// worker serves all of a user's requests. With a 2025-only worker, B's
// question went to A, whose answer became an input_required result
// carrying B's question (and A's real result was lost), and B's log
// message went to A's stream. Now neither reaches A.
func TestModernConcurrentCallsOfOneUserKeepTheirMessages(t *testing.T) {
	_, url := principalGateway(t, nil, Options{})
	const meta = `"_meta":{"progressToken":"A","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/logLevel":"debug"}`
	path, release := fifo(t)
	a := modernStream(t, url, "alice", "1", "await", `"arguments":{"text":"`+path+`"},`+meta)
	if a.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("A: %v", modernAnswer(t, a))
	}
	require.Equal(t, "notifications/progress", a.next(t)["method"], "A runs")

	// B, another client of the same user (the same worker), logs and asks.
	bMeta := strings.Replace(meta, `"progressToken":"A",`, "", 1)
	b := modernAnswer(t, modernStream(t, url, "alice", "2", "log", `"arguments":{"text":"B's log"},`+bMeta))
	assert.Equal(t, "logged", resultText(b))
	b = modernAnswer(t, modernStream(t, url, "alice", "3", "sample", `"arguments":{"text":"B's question"},`+bMeta))
	assert.Equal(t, "complete", b["result"].(map[string]any)["resultType"], "%v", b)
	assert.Contains(t, resultText(b), "noStream", "B's question was refused to the worker, not asked of A's client")

	release()
	m := a.next(t)
	assert.EqualValues(t, 1, m["id"], "A's next message is its answer, not B's: %v", m)
	assert.Equal(t, "released", resultText(m))
	assert.Equal(t, "complete", m["result"].(map[string]any)["resultType"])
}

// TestMarkedMessagesOfConcurrentCalls: a worker served as the built-in one
// is (go-sdk, tools.Serve, tools.MarkCalls) marks what it sends during a
// call with the call's id, so with two calls of one user in flight each
// log message reaches its own call's stream, without the marker; before,
// B's went to A's stream (the oldest). Both generations: a 2025-11-25
// session, and 2026-07-28 requests of two clients of one user.
func TestMarkedMessagesOfConcurrentCalls(t *testing.T) {
	logData := func(t *testing.T, m map[string]any) string {
		t.Helper()
		require.Equal(t, "notifications/message", m["method"], "%v", m)
		p := m["params"].(map[string]any)
		assert.Nil(t, p["_meta"], "the marker is the gateway's, not the client's")
		return p["data"].(string)
	}
	t.Run("2025-11-25 session", func(t *testing.T) {
		_, srv := newTestGatewayOf(t, []string{sdkWorker}, Options{})
		sid := rawSession(t, srv.URL)
		resp, _ := rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"info"}}`, sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		path, release := fifo(t)
		a := openStream(t, context.Background(), http.MethodPost, srv.URL, sid,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":"A","method":"tools/call","params":{"name":"hold","arguments":{"text":"A's log","path":%q}}}`, path))
		assert.Equal(t, "A's log", logData(t, a.next(t)))
		b := openStream(t, context.Background(), http.MethodPost, srv.URL, sid,
			`{"jsonrpc":"2.0","id":"B","method":"tools/call","params":{"name":"log","arguments":{"text":"B's log"}}}`)
		assert.Equal(t, "B's log", logData(t, b.next(t)))
		assert.Equal(t, "B", b.next(t)["id"])
		release()
		m := a.next(t)
		assert.Equal(t, "A", m["id"], "A's next message is its answer, not B's log: %v", m)
	})
	t.Run("2026-07-28, one user's two clients", func(t *testing.T) {
		_, url := principalGateway(t, []string{sdkWorker}, Options{})
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}`
		path, release := fifo(t)
		a := modernStream(t, url, "alice", "1", "hold", `"arguments":{"text":"A's log","path":"`+path+`"},`+meta)
		assert.Equal(t, "A's log", logData(t, a.next(t)))
		b := modernStream(t, url, "alice", "2", "log", `"arguments":{"text":"B's log"},`+meta)
		assert.Equal(t, "B's log", logData(t, b.next(t)))
		assert.EqualValues(t, 2, b.next(t)["id"])
		release()
		m := a.next(t)
		assert.EqualValues(t, 1, m["id"], "A's next message is its answer, not B's log: %v", m)
		assert.Equal(t, "released", resultText(m))
	})
}
