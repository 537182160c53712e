package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/worker"
)

// Hostile tests of the relay of large answers: the
// forms a worker may write an answer in, a line cut by the worker's exit or
// over the size limit, and clients that read slowly or go away mid-answer.

// blobCall is a tools/call of the stub's blob tool with the client's id
// (raw JSON), a result of size bytes in form (see the stub), and a progress
// notification first when sse.
func blobCall(id string, size int, form string, sse bool) string {
	meta := ""
	if sse {
		meta = `,"_meta":{"progressToken":"p"}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"blob","arguments":{"size":%d,"form":%q}%s}}`,
		id, size, form, meta)
}

// blobResult is the stub's blob result of size bytes.
func blobResult(size int) string {
	const head, tail = `{"content":[{"type":"text","text":"`, `"}]}`
	return head + strings.Repeat("b", max(size-len(head)-len(tail), 0)) + tail
}

// lastEvent returns the data of the last SSE event in body.
func lastEvent(t *testing.T, body string) string {
	t.Helper()
	var data string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = d
		}
	}
	require.NotEmpty(t, data, "no event in %.300s", body)
	return data
}

// TestRelayAnswerForms: whatever the order of its members, an answer reaches
// the client byte for byte as the gateway always wrote it (the client's id
// restored, the result untouched), short or long, client id short or long,
// as JSON or on an SSE stream; a line with two ids is matched by the last,
// as encoding/json reads it.
func TestRelayAnswerForms(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	sid := rawSession(t, srv.URL)
	longID := `"` + strings.Repeat("i", 300) + `"`
	for _, form := range []string{"", "id-last", "dup-id"} {
		for _, size := range []int{1000, 300 << 10, 3 << 20} {
			for _, id := range []string{"7", `"c-7"`, longID} {
				for _, sse := range []bool{false, true} {
					name := fmt.Sprintf("%s/%d/%.8s/sse=%v", form, size, id, sse)
					resp, body := rawDo(t, http.MethodPost, srv.URL, blobCall(id, size, form, sse), sidHdr, sid, protoHdr, "2025-11-25")
					require.Equal(t, http.StatusOK, resp.StatusCode, name)
					if sse {
						require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), name)
						body = lastEvent(t, body)
					}
					want := `{"jsonrpc":"2.0","id":` + id + `,"result":` + blobResult(size) + `}`
					if body != want {
						t.Fatalf("%s: got %d bytes %.200s…, want %d bytes %.200s…", name, len(body), body, len(want), want)
					}
				}
			}
		}
	}
}

// answerError decodes a JSON-RPC error answer.
func answerError(t *testing.T, body string) (id json.RawMessage, kind, msg string) {
	t.Helper()
	var a struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &a), "%.300s", body)
	require.NotNil(t, a.Error, "want an error, got %.300s", body)
	return a.ID, a.Error.Data["kind"], a.Error.Message
}

// TestRelayLineCutByExit: a worker that dies halfway through a long answer
// fails the request with workerExited; the half line is never sent.
func TestRelayLineCutByExit(t *testing.T) {
	for _, sse := range []bool{false, true} {
		_, srv := newTestGateway(t, Options{})
		sid := rawSession(t, srv.URL)
		resp, body := rawDo(t, http.MethodPost, srv.URL, blobCall("5", 3<<20, "cut", sse), sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if sse {
			body = lastEvent(t, body)
		}
		id, kind, _ := answerError(t, body)
		assert.Equal(t, "5", string(id))
		assert.Equal(t, worker.KindWorkerExited, kind)
		assert.NotContains(t, body, "bbbb", "no part of the cut line reaches the client")
	}
}

// TestRelayOverLimit: an answer over limits.max_worker_message_bytes fails
// its request alone with messageTooLarge, as JSON or on an SSE stream whose
// progress notification went first; the session goes on.
func TestRelayOverLimit(t *testing.T) {
	_, srv := newTestGateway(t, Options{}, worker.LauncherOptions{MaxMessageBytes: 1 << 20})
	sid := rawSession(t, srv.URL)
	for _, sse := range []bool{false, true} {
		resp, body := rawDo(t, http.MethodPost, srv.URL, blobCall("9", 2<<20, "", sse), sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if sse {
			body = lastEvent(t, body)
		}
		id, kind, msg := answerError(t, body)
		assert.Equal(t, "9", string(id))
		assert.Equal(t, worker.KindTooLarge, kind)
		assert.Contains(t, msg, "limits.max_worker_message_bytes")
		resp, body = rawDo(t, http.MethodPost, srv.URL, blobCall("10", 1000, "", false), sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, `{"jsonrpc":"2.0","id":10,"result":`+blobResult(1000)+`}`, body, "the next call on the session is answered")
	}
}

// TestRelaySlowClient: a client that stops reading a 16 MiB answer loses
// the response at the write deadline; what the gateway held is given back,
// and the session serves the next call.
func TestRelaySlowClient(t *testing.T) {
	for _, accept := range []string{"application/json", "text/event-stream"} {
		g, srv := newTestGatewayOn(t, Options{WriteTimeout: time.Second}, func(l net.Listener) net.Listener { return smallSendBuffer{l} }, nil)
		sid := rawSession(t, srv.URL)
		postRaw(t, dialNonReader(t, srv.URL), sid, accept, blobCall("1", 16<<20, "", false))
		// The answer is held for the client (awaitIdle alone could look
		// before the request is served), then the write deadline ends it.
		require.Eventually(t, func() bool { return g.acct.buffered.peak.Load() >= 16<<20 }, 60*time.Second, 10*time.Millisecond,
			"the 16 MiB answer is never held for the client")
		awaitIdle(t, g, sid)
		assert.Zero(t, g.BufferedBytes(), "every byte held is given back")
		resp, body := rawDo(t, http.MethodPost, srv.URL, blobCall("2", 1000, "", false), sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, body, `"id":2`)
	}
}

// TestRelayClientGoesMidAnswer: a client that reads the start of a 16 MiB
// answer on an SSE stream and hangs up leaves no goroutine behind, and the
// worker's answers to other requests still flow.
func TestRelayClientGoesMidAnswer(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	sid := rawSession(t, srv.URL)
	// Warm up: the connections and goroutines a normal call leaves.
	rawDo(t, http.MethodPost, srv.URL, blobCall("1", 1000, "", true), sidHdr, sid, protoHdr, "2025-11-25")
	before := runtime.NumGoroutine()

	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	body := blobCall("2", 16<<20, "", true)
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", sid, len(body), body)
	require.NoError(t, err)
	head := make([]byte, 64<<10)
	_, err = io.ReadFull(c, head) // well into the answer
	require.NoError(t, err)
	require.Contains(t, string(head), "text/event-stream")
	c.Close()
	awaitIdle(t, g, sid)

	for i := range 3 {
		resp, out := rawDo(t, http.MethodPost, srv.URL, blobCall(fmt.Sprint(10+i), 300<<10, "", i%2 == 0), sidHdr, sid, protoHdr, "2025-11-25")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, out, fmt.Sprintf(`"id":%d`, 10+i))
	}
	assert.Zero(t, g.BufferedBytes())
	http.DefaultClient.CloseIdleConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before }, 10*time.Second, 10*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}
