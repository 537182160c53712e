package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// callRaw posts one tools/call on session sid and returns the decoded answer.
func callRaw(t testing.TB, url, sid, id, tool string, args map[string]any) (int, map[string]any) {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	resp, body := rawDo(t, http.MethodPost, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":%s}`, id, params),
		sidHdr, sid, protoHdr, "2025-11-25", "Accept", "application/json")
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	return resp.StatusCode, m
}

func resultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

func TestTwoSessionsTwoWorkersAndACrash(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	a, b := rawSession(t, srv.URL), rawSession(t, srv.URL)
	_, ra := callRaw(t, srv.URL, a, "1", "pid", nil)
	_, rb := callRaw(t, srv.URL, b, "1", "pid", nil)
	pa, _ := strconv.Atoi(resultText(ra))
	pb, _ := strconv.Atoi(resultText(rb))
	require.NotZero(t, pa)
	require.NotEqual(t, pa, pb, "two sessions must run in two worker processes")
	gpa, _ := g.WorkerPid(a)
	require.Equal(t, pa, gpa)

	// Kill a's worker from outside while a request is in flight: that
	// request gets an error that says the worker exited.
	sess := g.sessionByID(a)
	inflight := make(chan map[string]any, 1)
	go func() {
		_, m := callRaw(t, srv.URL, a, "long", "crash", map[string]any{"code": 3})
		inflight <- m
	}()
	m := <-inflight
	errObj, _ := m["error"].(map[string]any)
	require.NotNil(t, errObj, "got %v, want a JSON-RPC error", m)
	assert.Equal(t, "long", m["id"])
	assert.Contains(t, errObj["message"], "worker process exited (exit status 3)")
	assert.Equal(t, map[string]any{"kind": "workerExited"}, errObj["data"])
	<-sess.conn.Done()
	requireReaped(t, pa)

	status, _ := callRaw(t, srv.URL, a, "2", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusNotFound, status, "the crashed session")
	status, m = callRaw(t, srv.URL, b, "2", "echo", map[string]any{"text": "still here"})
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "still here", resultText(m))

	// A SIGKILL from outside, with no request in flight.
	sb := g.sessionByID(b)
	require.NoError(t, syscall.Kill(pb, syscall.SIGKILL))
	<-sb.conn.Done()
	status, _ = callRaw(t, srv.URL, b, "3", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Zero(t, g.Sessions())
}

func TestSDKClientSeesWorkerExit(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	sampling, release := make(chan struct{}), make(chan struct{})
	defer close(release) // before the client closes (cleanups run later)
	// Without the standalone stream, whose end on the session's end would
	// race the answer to the call.
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, DisableStandaloneSSE: true}
	cs := connectWith(t, tr, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			close(sampling) // the call is in flight in the worker
			select {
			case <-ctx.Done():
			case <-release:
			}
			return nil, errors.New("test: no sampling")
		},
	})
	pid, ok := g.WorkerPid(cs.ID())
	require.True(t, ok)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"text": "x"}})
		errc <- err
	}()
	<-sampling
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err := <-errc
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker process exited (killed by signal killed)")
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	require.Error(t, err, "the session has ended")
}

func TestDeleteAndCloseLeaveNoProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		byClose  bool
		wantExit []string
	}{
		// The stub ends on EOF on its stdin, as stdio servers do; one that
		// ignores SIGTERM too is killed after the grace period.
		{name: "delete", wantExit: []string{"exit status 0"}},
		{name: "delete ignoring SIGTERM", env: []string{"STUB_IGNORE_TERM=1"}, wantExit: []string{"killed by signal killed"}},
		{name: "close", byClose: true, wantExit: []string{"exit status 0"}},
		{name: "close ignoring SIGTERM", env: []string{"STUB_IGNORE_TERM=1"}, byClose: true, wantExit: []string{"killed by signal killed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grace := 5 * time.Second // ample time to end on EOF
			if tc.env != nil {
				grace = 300 * time.Millisecond
			}
			exits := &exitLog{status: map[int64]string{}}
			g, srv := newTestGateway(t, Options{Logger: slog.New(exits)}, worker.LauncherOptions{Env: tc.env, StopGrace: grace})
			type worker struct{ pid, child int }
			var ws []worker
			var sessions []*binding
			for range 2 {
				sid := rawSession(t, srv.URL)
				_, m := callRaw(t, srv.URL, sid, "1", "pid", nil)
				pid, _ := strconv.Atoi(resultText(m))
				_, m = callRaw(t, srv.URL, sid, "2", "spawn", nil)
				child, _ := strconv.Atoi(resultText(m))
				require.NotZero(t, child)
				require.Contains(t, groupMembers(pid), child, "the worker's child is in its process group")
				ws = append(ws, worker{pid: pid, child: child})
				sessions = append(sessions, g.sessionByID(sid))
				if !tc.byClose {
					resp, _ := rawDo(t, http.MethodDelete, srv.URL, "", sidHdr, sid)
					require.Equal(t, http.StatusOK, resp.StatusCode)
				}
			}
			if tc.byClose {
				require.NoError(t, g.Close(context.Background()))
			}
			for i, w := range ws {
				requireReaped(t, w.pid)
				requireGroupGone(t, w.pid)
				<-sessions[i].conn.Done() // after the exit is logged
				assert.Contains(t, tc.wantExit, exits.of(w.pid))
			}
			assert.Zero(t, g.Sessions())
		})
	}
	assert.Empty(t, stubProcesses())
}

func TestWorkerStartFailuresLeaveNoProcess(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want int
	}{
		{[]string{"STUB_HANG_INIT=1"}, http.StatusGatewayTimeout},
		{[]string{"STUB_INIT_ERROR=1"}, http.StatusOK}, // the worker's own JSON-RPC error
		{[]string{"STUB_HANG_INIT=1", "STUB_IGNORE_TERM=1"}, http.StatusGatewayTimeout},
	} {
		t.Run(strings.Join(tc.env, ","), func(t *testing.T) {
			g, srv := newTestGateway(t, Options{WorkerStartTimeout: 200 * time.Millisecond}, worker.LauncherOptions{Env: tc.env, StopGrace: 200 * time.Millisecond})
			resp, body := rawDo(t, http.MethodPost, srv.URL, initBody)
			assert.Equal(t, tc.want, resp.StatusCode, body)
			assert.Empty(t, resp.Header.Get(sidHdr))
			assert.Contains(t, body, `"error"`)
			assert.Zero(t, g.Sessions())
			assert.Empty(t, stubProcesses(), "a failed initialize leaves no worker")
		})
	}
}

func TestCloseDuringInitialize(t *testing.T) {
	lines := make(chan slog.Record, 64)
	g, srv := newTestGateway(t, Options{Logger: slog.New(recordHandler{lines}), WorkerStartTimeout: time.Hour},
		worker.LauncherOptions{Env: []string{"STUB_HANG_INIT=1", "STUB_IGNORE_TERM=1"}, StopGrace: 200 * time.Millisecond})
	answered := make(chan int, 1)
	go func() {
		resp, _ := rawDo(t, http.MethodPost, srv.URL, initBody)
		answered <- resp.StatusCode
	}()
	awaitLog(t, lines, "stub: hanging in initialize")
	require.NoError(t, g.Close(context.Background()))
	assert.Empty(t, stubProcesses(), "Close waits for the initialize to stop its worker")
	assert.Equal(t, http.StatusServiceUnavailable, <-answered)
}

func TestClientLeavesDuringInitialize(t *testing.T) {
	lines := make(chan slog.Record, 64)
	g, srv := newTestGateway(t, Options{Logger: slog.New(recordHandler{lines}), WorkerStartTimeout: time.Hour},
		worker.LauncherOptions{Env: []string{"STUB_HANG_INIT=1"}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	awaitLog(t, lines, "stub: hanging in initialize")
	cancel()
	g.inits.Wait() // the initialize handler has finished
	assert.Empty(t, stubProcesses())
	assert.Zero(t, g.Sessions())
}

// awaitLog waits for a log record whose line attribute is line.
func awaitLog(t *testing.T, records <-chan slog.Record, line string) slog.Record {
	t.Helper()
	for r := range records {
		found := false
		r.Attrs(func(a slog.Attr) bool { found = found || (a.Key == "line" && a.Value.String() == line); return !found })
		if found {
			return r
		}
	}
	t.Fatalf("log closed before %q", line)
	return slog.Record{}
}

func TestIdleReaper(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g, srv := newTestGateway(t, Options{Now: clock, SessionIdleTimeout: 10 * time.Minute})

	idle, listening := rawSession(t, srv.URL), rawSession(t, srv.URL)
	idlePid, _ := g.WorkerPid(idle)
	// An open GET stream keeps its session busy.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set(sidHdr, listening)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	require.Equal(t, ": ok\n", line)

	// A request still running in the worker whose client has gone does
	// not keep its session.
	working := rawSession(t, srv.URL)
	workingPid, _ := g.WorkerPid(working)
	st := worker.NewStream(false)
	st.Expect(1)
	g.sessionByID(working).conn.Call(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: "tools/call",
		Params: json.RawMessage(`{"name":"sleep","arguments":{"ms":600000}}`)}, "", st, nil)
	st.Detach()

	advance(9 * time.Minute)
	g.reapIdle()
	require.Equal(t, 3, g.Sessions(), "nothing idle for 10 minutes yet")

	advance(2 * time.Minute)
	g.reapIdle()
	require.Equal(t, 1, g.Sessions())
	requireReaped(t, idlePid)
	requireReaped(t, workingPid)
	status, _ := callRaw(t, srv.URL, idle, "1", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusNotFound, status)
	_, ok := g.WorkerPid(listening)
	assert.True(t, ok, "the session with an open stream stays")
	_, ok = g.WorkerPid(working)
	assert.False(t, ok, "the session whose only activity is an abandoned request is reaped")
}

func TestCancellationAndDisconnect(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	sid := rawSession(t, srv.URL)

	inflight := func() string {
		_, m := callRaw(t, srv.URL, sid, "n", "inflight", nil)
		return resultText(m)
	}

	t.Run("notifications/cancelled reaches the worker", func(t *testing.T) {
		st := startSleep(t, srv.URL, sid, "s1")
		require.Equal(t, "1", inflight())
		r, _ := rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1","reason":"test"}}`, sidHdr, sid)
		require.Equal(t, http.StatusAccepted, r.StatusCode)
		// The cancelled request's stream ends without an answer.
		var rest strings.Builder
		_, err := st.br.WriteTo(&rest)
		require.NoError(t, err)
		assert.NotContains(t, rest.String(), `"id":"s1"`)
		assert.Equal(t, "0", inflight(), "the worker stopped the request: it got the rewritten id")
	})
	t.Run("a client disconnect does not cancel", func(t *testing.T) {
		startSleep(t, srv.URL, sid, "s2").resp.Body.Close()
		// A ping round trip orders anything the gateway might have sent
		// the worker before our next question.
		r, _ := rawDo(t, http.MethodPost, srv.URL, `{"jsonrpc":"2.0","id":"p","method":"ping"}`, sidHdr, sid)
		require.Equal(t, http.StatusOK, r.StatusCode)
		assert.Equal(t, "1", inflight(), "the request still runs in the worker")
	})
}

func TestWorkerEnvironmentAndStderr(t *testing.T) {
	t.Setenv("MCPGATE_TEST_SECRET", "do-not-leak")
	lines := make(chan slog.Record, 16)
	logger := slog.New(recordHandler{lines})
	_, srv := newTestGateway(t, Options{Logger: logger, LocalUser: "alice"},
		worker.LauncherOptions{Env: []string{"DB_URL=sqlite://x"}, Toolsets: []string{"session"}, ServerTitle: "Test Gate"})
	sid := rawSession(t, srv.URL)
	_, m := callRaw(t, srv.URL, sid, "1", "env", nil)
	var env []string
	require.NoError(t, json.Unmarshal([]byte(resultText(m)), &env))
	assert.Contains(t, env, "DB_URL=sqlite://x")
	assert.Contains(t, env, "MCPGATE_WORKER_USER=alice")
	assert.Contains(t, env, "MCPGATE_WORKER_SESSION_ID="+sid)
	assert.Contains(t, env, "MCPGATE_WORKER_READ_ONLY=false")
	assert.Contains(t, env, "MCPGATE_WORKER_TOOLSETS=session")
	assert.Contains(t, env, "MCPGATE_WORKER_SERVER_TITLE=Test Gate")
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "MCPGATE_WORKER_") && !slices.Contains([]string{"PATH", "HOME", "LANG", "TZ", "DB_URL"}, name) {
			t.Errorf("worker environment: got %s, want only PATH, HOME, LANG, TZ, identity and the launcher's Env", name)
		}
	}

	_, m = callRaw(t, srv.URL, sid, "2", "stderr", map[string]any{"text": "from-the-worker"})
	require.Equal(t, "written to stderr", resultText(m))
	r := awaitLog(t, lines, "from-the-worker")
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	assert.Equal(t, sid[:8], attrs["session"], "stderr lines are tagged with the session")
}

// recordHandler sends every record, with its logger's attributes, to a
// channel (dropping when full).
// exitLog is a log that keeps only the exit status of each worker, by pid.
type exitLog struct {
	mu     sync.Mutex
	status map[int64]string
}

func (h *exitLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *exitLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "worker exited" {
		return nil
	}
	var pid int64
	var status string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "pid":
			pid = a.Value.Int64()
		case "status":
			status = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.status[pid] = status
	h.mu.Unlock()
	return nil
}
func (h *exitLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *exitLog) WithGroup(string) slog.Handler      { return h }

func (h *exitLog) of(pid int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status[int64(pid)]
}

type recordHandler struct{ c chan slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.c <- r:
	default:
	}
	return nil
}
func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler { return attrsHandler{h, as} }
func (h recordHandler) WithGroup(string) slog.Handler         { return h }

type attrsHandler struct {
	recordHandler
	attrs []slog.Attr
}

func (h attrsHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs...)
	return h.recordHandler.Handle(ctx, r)
}
func (h attrsHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return attrsHandler{h.recordHandler, append(append([]slog.Attr{}, h.attrs...), as...)}
}

func TestPrincipalOwnsSession(t *testing.T) {
	g, err := New(launcher(t, nil, worker.LauncherOptions{}), Options{Logger: testLogger(t), SafeTools: []string{"echo"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	// A stand-in for auth's middleware: the principal comes from a header.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			ro := r.Header.Get("X-Test-Read-Only") == "1"
			r = r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Issuer: "https://issuer", Subject: "sub-" + u, UserID: u, ReadOnly: ro}))
		}
		g.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	srv := hs.URL

	resp, body := rawDo(t, http.MethodPost, srv, initBody, "X-Test-User", "alice")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	sid := resp.Header.Get(sidHdr)

	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name string
		user string
		want int
	}{
		{"owner", "alice", http.StatusOK},
		{"another user", "bob", http.StatusNotFound},
		{"no token", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := rawDo(t, http.MethodPost, srv, ping, sidHdr, sid, "X-Test-User", tc.user)
			assert.Equal(t, tc.want, resp.StatusCode)
		})
	}
	resp, _ = rawDo(t, http.MethodDelete, srv, "", sidHdr, sid, "X-Test-User", "bob")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "bob cannot end alice's session")

	t.Run("read-only token", func(t *testing.T) {
		resp, _ := rawDo(t, http.MethodPost, srv, initBody, "X-Test-User", "carol", "X-Test-Read-Only", "1")
		sid := resp.Header.Get(sidHdr)
		_, body := rawDo(t, http.MethodPost, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, sidHdr, sid, "X-Test-User", "carol", "X-Test-Read-Only", "1")
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"inputSchema":{"type":"object"},"name":"echo"}]}}`, body)
		_, body = rawDo(t, http.MethodPost, srv, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write"}}`, sidHdr, sid, "X-Test-User", "carol", "X-Test-Read-Only", "1")
		assert.Contains(t, body, `"code":-32601`)
		assert.Contains(t, body, `"kind":"readOnly"`)

		// The owner's read-write token steps the session up:
		// its read-only worker, which holds nothing uncommitted, is
		// replaced by a read-write one; never widened in place.
		before, _ := g.WorkerPid(sid)
		_, body = rawDo(t, http.MethodPost, srv, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write"}}`, sidHdr, sid, "X-Test-User", "carol")
		assert.Contains(t, body, "written")
		after, _ := g.WorkerPid(sid)
		assert.NotEqual(t, before, after)
		_, body = rawDo(t, http.MethodPost, srv, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write"}}`, sidHdr, sid, "X-Test-User", "carol", "X-Test-Read-Only", "1")
		assert.Contains(t, body, `"kind":"readOnly"`, "the read-only token again")
	})
}

func TestManySessionsManyCalls(t *testing.T) {
	const sessions, calls = 50, 100
	_, srv := newTestGateway(t, Options{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Go(func() {
			sid := rawSession(t, srv.URL)
			for j := range calls {
				want := fmt.Sprintf("s%d-c%d", i, j)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, j, want)
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set(sidHdr, sid)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				var m map[string]any
				err = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if got := resultText(m); err != nil || got != want || m["id"] != float64(j) {
					errs <- fmt.Errorf("session %d call %d: got %v (%v), want %q", i, j, m, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSlowBody408: a client that stalls mid-body gets 408, also with the
// body's read timeout as long as the write timeout (the defaults: 30s
// each, on a server whose own WriteTimeout is the same, as mcpgate serve
// runs it), where the 408 once missed its write deadline and the client
// saw a bare EOF.
func TestSlowBody408(t *testing.T) {
	const d = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"read timeout shorter", Options{BodyReadTimeout: 200 * time.Millisecond}},
		{"read timeout as long as the write timeout", Options{BodyReadTimeout: d, WriteTimeout: d}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newTestGatewayOn(t, tc.opts, nil, func(s *http.Server) { s.WriteTimeout = tc.opts.WriteTimeout })
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			// Promise 100 bytes, send 10, then stall.
			_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "the 408 must arrive")
			defer resp.Body.Close()
			assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		})
	}
}

// TestWorkerStart504AfterWriteTimeout: a worker that never answers
// initialize gets its 504 to the client even when the start timeout is
// longer than the write timeout the request began with.
func TestWorkerStart504AfterWriteTimeout(t *testing.T) {
	const write = 200 * time.Millisecond
	l := launcher(t, nil, worker.LauncherOptions{Env: []string{"STUB_HANG_INIT=1"}})
	_, srv := serveTestGateway(t, l, Options{WriteTimeout: write, WorkerStartTimeout: 3 * write}, nil,
		func(s *http.Server) { s.WriteTimeout = write })
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the 504 must arrive")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
}
