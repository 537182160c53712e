package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/worker"
)

// sseStream is an open SSE response being read event by event.
type sseStream struct {
	resp *http.Response
	br   *bufio.Reader
}

// open sends a request that answers with a stream and returns once the
// response headers are in.
func openStream(t *testing.T, ctx context.Context, method, url, sid, body string) *sseStream {
	t.Helper()
	var req *http.Request
	if body != "" {
		req, _ = http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequestWithContext(ctx, method, url, nil)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sidHdr, sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &sseStream{resp, bufio.NewReader(resp.Body)}
}

// next returns the data of the next event, skipping comments.
func (s *sseStream) next(t *testing.T) map[string]any {
	t.Helper()
	for {
		line, err := s.br.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			return m
		}
	}
}

// startSleep starts a long sleep with a progress token and returns its
// stream once the worker runs it.
func startSleep(t *testing.T, url, sid, id string) *sseStream {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},"_meta":{"progressToken":%q}}}`, id, id)
	s := openStream(t, context.Background(), http.MethodPost, url, sid, body)
	require.Equal(t, "notifications/progress", s.next(t)["method"])
	return s
}

func TestRoutingOfWorkerMessages(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	logCall := func(sid, text string) string {
		_, body := rawDo(t, http.MethodPost, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":"L","method":"tools/call","params":{"name":"log","arguments":{"text":%q}}}`, text), sidHdr, sid)
		return body
	}

	t.Run("several in flight, GET open: the standalone stream", func(t *testing.T) {
		sid := rawSession(t, srv.URL)
		get := openStream(t, context.Background(), http.MethodGet, srv.URL, sid, "")
		startSleep(t, srv.URL, sid, "s1")
		// The log call's own answer comes alone, as JSON: its log
		// notification went to the GET stream.
		assert.Equal(t, `{"jsonrpc":"2.0","id":"L","result":{"content":[{"text":"logged","type":"text"}]}}`, logCall(sid, "to-get"))
		m := get.next(t)
		assert.Equal(t, "notifications/message", m["method"])
		assert.Equal(t, "to-get", m["params"].(map[string]any)["data"])
	})
	t.Run("several in flight, no GET: dropped, not sent to the oldest request", func(t *testing.T) {
		sid := rawSession(t, srv.URL)
		s1 := startSleep(t, srv.URL, sid, "s1")
		startSleep(t, srv.URL, sid, "s2")
		assert.Equal(t, `{"jsonrpc":"2.0","id":"L","result":{"content":[{"text":"logged","type":"text"}]}}`, logCall(sid, "dropped"))
		// The session's end answers s1: its next message, not the log.
		resp, _ := rawDo(t, http.MethodDelete, srv.URL, "", sidHdr, sid)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		m := s1.next(t)
		assert.Equal(t, "s1", m["id"], "%v", m)
	})
	t.Run("sampling: the worker's request gets a gateway id and the answer goes back", func(t *testing.T) {
		sid := rawSession(t, srv.URL)
		st := openStream(t, context.Background(), http.MethodPost, srv.URL, sid, `{"jsonrpc":"2.0","id":"smp","method":"tools/call","params":{"name":"sample","arguments":{"text":"ping"}}}`)
		req := st.next(t)
		require.Equal(t, "sampling/createMessage", req["method"])
		id, _ := json.Marshal(req["id"])
		// The stub numbers its own requests from 1; the client sees the
		// gateway's id instead.
		assert.NotEqual(t, "1", string(id))
		resp, _ := rawDo(t, http.MethodPost, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"pong"}}}`, id), sidHdr, sid)
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		answer := st.next(t)
		assert.Equal(t, "smp", answer["id"])
		assert.Equal(t, "sampled: pong", resultText(answer))
	})
	t.Run("the same client id twice in flight", func(t *testing.T) {
		sid := rawSession(t, srv.URL)
		var wg sync.WaitGroup
		for _, text := range []string{"first", "second", "third"} {
			wg.Go(func() {
				_, m := callRaw(t, srv.URL, sid, "same", "echo", map[string]any{"text": text})
				assert.Equal(t, "same", m["id"])
				assert.Equal(t, text, resultText(m))
			})
		}
		wg.Wait()
	})
}

func TestKeepAliveComments(t *testing.T) {
	_, srv := newTestGateway(t, Options{KeepAliveInterval: 20 * time.Millisecond})
	sid := rawSession(t, srv.URL)
	t.Run("standalone stream", func(t *testing.T) {
		get := openStream(t, context.Background(), http.MethodGet, srv.URL, sid, "")
		for _, want := range []string{": ok\n", "\n", ": keep-alive\n"} {
			line, err := get.br.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, want, line)
		}
	})
	t.Run("a request's stream", func(t *testing.T) {
		s := startSleep(t, srv.URL, sid, "ka")
		for {
			line, err := s.br.ReadString('\n')
			require.NoError(t, err)
			if line == ": keep-alive\n" {
				break
			}
		}
	})
}

func TestZeroOptions(t *testing.T) {
	g, err := New(launcher(t, nil, worker.LauncherOptions{}), Options{})
	require.NoError(t, err)
	defer g.Close(context.Background())
	o := g.opts
	assert.Equal(t, int64(8<<20), o.MaxBodyBytes)
	assert.Equal(t, 30*time.Minute, o.SessionIdleTimeout)
	assert.Equal(t, 10*time.Second, o.WorkerStartTimeout)
	assert.NotEmpty(t, o.LocalUser)
	assert.Empty(t, g.safe, "fail-closed: nothing is read-only-safe unless listed")
	assert.False(t, o.LoopbackHostCheck || o.ReadOnly)
}
