package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/workerproto"
)

// modernMeta is the _meta every 2026-07-28 request carries.
const modernMetaJSON = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// modernBody is a 2026-07-28 request body; params is the inside of the
// params object, without _meta ("" for none).
func modernBody(id, method, params string) string {
	if params != "" {
		params += ","
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params + modernMetaJSON + `}}`
}

// modern is a 2026-07-28 POST step with its standard headers; name is the
// Mcp-Name value ("" for none).
func modern(method, name, body string, headers ...string) step {
	h := []string{protoHdr, "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return post(body, append(h, headers...)...)
}

// modernCall posts a 2026-07-28 tools/call as user (X-Test-User; "" for no
// principal) and returns the status and the decoded answer.
func modernCall(t testing.TB, url, user string, readOnly bool, id, tool string, args map[string]any) (int, map[string]any) {
	t.Helper()
	a, _ := json.Marshal(args)
	body := modernBody(id, "tools/call", `"name":"`+tool+`","arguments":`+string(a))
	ro := ""
	if readOnly {
		ro = "1"
	}
	resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool,
		"X-Test-User", user, "X-Test-Read-Only", ro)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), "answer %s", out)
	return resp.StatusCode, m
}

// principalGateway serves a gateway of command (nil: the stub worker)
// behind a stand-in for auth's middleware: the principal comes from
// X-Test-User and X-Test-Read-Only.
func principalGateway(t testing.TB, command []string, opts Options, wopts ...worker.LauncherOptions) (*Gateway, string) {
	t.Helper()
	opts.Middleware = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u := r.Header.Get("X-Test-User"); u != "" {
				ro := r.Header.Get("X-Test-Read-Only") == "1"
				r = r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Issuer: "https://issuer", Subject: "sub-" + u, UserID: u, ReadOnly: ro}))
			}
			next.ServeHTTP(w, r)
		})
	}
	g, srv := newTestGatewayOf(t, command, opts, wopts...)
	return g, srv.URL
}

// processesOf lists live processes running the binary at path.
func processesOf(path string) []int {
	return liveProcs(func(pid int, _ []string) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && exe == path
	})
}

func TestModernSDKClientAtDefaults(t *testing.T) {
	g, srv := newTestGatewayOf(t, []string{sdkWorker}, Options{})
	cs := connectModern(t, srv.URL, nil)
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "the go-sdk client negotiates 2026-07-28")
	assert.Equal(t, "sdkworker", cs.InitializeResult().ServerInfo.Name)
	assert.Empty(t, cs.ID(), "no session id")

	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, 8)
	assert.Equal(t, "hi", callText(t, cs, "echo", map[string]any{"text": "hi"}))
	// The SDK mirrors the x-mcp-header argument in Mcp-Param-Region, which
	// the gateway checks against the body.
	assert.Equal(t, "region eu-west", callText(t, cs, "region", map[string]any{"region": "eu-west", "text": "x"}))
	assert.Equal(t, 0, g.Sessions())
	assert.Equal(t, 1, g.PerUserWorkers())
}

func TestModernSDKClientThroughA2025Worker(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	cs := connectModern(t, srv.URL, nil)
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "the gateway translates for a 2025-only worker")
	assert.Equal(t, "stub", cs.InitializeResult().ServerInfo.Name)
	assert.Equal(t, "hello", callText(t, cs, "echo", map[string]any{"text": "hello"}))
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, 15) // the stub's tools
	// A client without the sampling capability cannot be asked: it gets
	// MissingRequiredClientCapabilityError, the worker an error answer.
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"text": "x"}})
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.EqualValues(t, -32021, werr.Code)
	// The first request found the worker speaks only 2025-11-25; from
	// then on a worker is started per set of client capabilities (the
	// go-sdk client declares roots).
	assert.Equal(t, 2, g.PerUserWorkers())

	// One that has it gets the worker's sampling request as an input
	// request (MRTR), and its retry carries the answer back to the worker.
	sampler := connectModern(t, srv.URL, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: strings.ToUpper(text)}}, nil
		},
	})
	assert.Equal(t, "sampled: SHOUT", callText(t, sampler, "sample", map[string]any{"text": "shout"}))
	assert.Equal(t, 3, g.PerUserWorkers(), "roots and sampling: another set, another worker")
}

// TestModernA2025WorkerIsToldOnlyTheClientsCapabilities: the gateway's own
// initialize of a 2025-only worker declares the capabilities the request's
// client declared, no more, and one user's clients with different sets get
// different workers. Before, it declared sampling, elicitation and roots
// for every client, and the worker ran what it should have refused.
func TestModernA2025WorkerIsToldOnlyTheClientsCapabilities(t *testing.T) {
	_, url := principalGateway(t, nil, Options{})
	call := func(caps string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"clientcaps","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "clientcaps", "X-Test-User", "alice")
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return resultText(m)
	}
	for _, tc := range []struct{ client, declared string }{
		{`{}`, `{}`},
		{`{"sampling":{}}`, `{"sampling":{}}`},
		{`{"elicitation":{},"roots":{"listChanged":true},"experimental":{"x":{}}}`, `{"elicitation":{"form":{}},"roots":{}}`},
		{`{"elicitation":{"form":{},"url":{}}}`, `{"elicitation":{"form":{},"url":{}}}`},
		{`{}`, `{}`}, // the first worker again
	} {
		assert.JSONEq(t, tc.declared, call(tc.client), "client %s", tc.client)
	}
}

// TestModernPerUserWorkers counts processes: 64 concurrent clients of one
// user share one worker; another user, or the same user read-only, get
// their own.
func TestModernPerUserWorkers(t *testing.T) {
	g, url := principalGateway(t, []string{sdkWorker}, Options{SafeTools: []string{"pid", "echo"}})
	pids := make(chan string, 64)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			status, m := modernCall(t, url, "alice", false, strconv.Itoa(i), "pid", nil)
			assert.Equal(t, http.StatusOK, status)
			pids <- resultText(m)
		})
	}
	wg.Wait()
	close(pids)
	seen := map[string]bool{}
	for p := range pids {
		seen[p] = true
	}
	require.Len(t, seen, 1, "64 concurrent requests of one user: one worker")
	require.Len(t, processesOf(sdkWorker), 1)

	_, m := modernCall(t, url, "bob", false, "1", "pid", nil)
	bob := resultText(m)
	_, m = modernCall(t, url, "alice", true, "1", "pid", nil)
	aliceRO := resultText(m)
	for p := range seen {
		assert.NotEqual(t, p, bob, "another user gets another worker")
		assert.NotEqual(t, p, aliceRO, "read-only and read-write never share")
	}
	assert.NotEqual(t, bob, aliceRO)
	assert.Len(t, processesOf(sdkWorker), 3)
	assert.Equal(t, 3, g.PerUserWorkers())

	_, m = modernCall(t, url, "alice", false, "2", "env", nil)
	env := resultText(m)
	assert.Contains(t, env, "MCPGATE_WORKER_USER=alice")
	assert.Contains(t, env, "MCPGATE_WORKER_READ_ONLY=false")
	assert.Contains(t, env, "MCPGATE_WORKER_SCOPE=user")
}

// TestModernReadOnlyOnBothWorkers: a read-only caller never reaches a gated
// tool on 2026-07-28, whether the worker speaks it or the gateway
// translates, and never receives a read-write caller's list.
func TestModernReadOnlyOnBothWorkers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		worker string
	}{{"2026-07-28 worker", sdkWorker}, {"2025-11-25 worker", stubWorker}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			_, url := principalGateway(t, []string{tc.worker}, Options{SafeTools: []string{"echo"}},
				worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + calls}})
			list := func(ro string) (int, string) {
				resp, body := rawDo(t, http.MethodPost, url, modernBody("1", "tools/list", ""), protoHdr, "2026-07-28", "Mcp-Method", "tools/list",
					"X-Test-User", "carol", "X-Test-Read-Only", ro)
				return resp.StatusCode, body
			}
			status, roList := list("1")
			require.Equal(t, http.StatusOK, status, roList)
			_, rwList := list("")
			assert.NotContains(t, roList, `"name":"write"`)
			assert.Contains(t, roList, `"name":"echo"`)
			assert.Contains(t, rwList, `"name":"write"`)
			for _, l := range []string{roList, rwList} {
				assert.Contains(t, l, `"cacheScope":"private"`)
				assert.Contains(t, l, `"resultType":"complete"`)
			}

			status, m := modernCall(t, url, "carol", true, "2", "write", nil)
			assert.Equal(t, http.StatusNotFound, status, "-32601 is 404 on 2026-07-28")
			assert.Contains(t, m["error"].(map[string]any)["data"], "kind")
			assert.Equal(t, "readOnly", m["error"].(map[string]any)["data"].(map[string]any)["kind"])

			// Hostile: the header and a case-twin key say echo, the key a
			// worker reads says write.
			for _, body := range []string{
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","Name":"echo",` + modernMetaJSON + `}}`,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"write",` + modernMetaJSON + `}}`,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write",` + modernMetaJSON + `}}`,
			} {
				resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo",
					"X-Test-User", "carol", "X-Test-Read-Only", "1")
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, out)
				assert.Contains(t, out, `"code":-32020`)
			}
			if b, err := os.ReadFile(calls); err == nil {
				assert.NotContains(t, string(b), "write", "a gated tool ran")
			}

			// Methods are fail-closed too: one nobody vouched for is refused.
			resp, out := rawDo(t, http.MethodPost, url, modernBody("4", "custom/write", ""), protoHdr, "2026-07-28", "Mcp-Method", "custom/write",
				"X-Test-User", "carol", "X-Test-Read-Only", "1")
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, out)
			assert.Contains(t, out, `"kind":"readOnly"`)
		})
	}
}

func TestModernWorkerExitAndRestart(t *testing.T) {
	g, url := principalGateway(t, nil, Options{})
	_, m := modernCall(t, url, "dave", false, "1", "pid", nil)
	pid, err := strconv.Atoi(resultText(m))
	require.NoError(t, err)
	type answer struct {
		status int
		m      map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		s, m := modernCall(t, url, "dave", false, "2", "sleep", map[string]any{"ms": 600000})
		done <- answer{s, m}
	}()
	require.Eventually(t, func() bool { uw := g.workerOf(testKey("dave", false)); return uw != nil && uw.conn.InFlight() == 1 },
		10*time.Second, 5*time.Millisecond)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	a := <-done
	require.Contains(t, a.m, "error")
	assert.Equal(t, "workerExited", a.m["error"].(map[string]any)["data"].(map[string]any)["kind"])
	requireReaped(t, pid)
	_, m = modernCall(t, url, "dave", false, "3", "pid", nil)
	assert.NotEqual(t, strconv.Itoa(pid), resultText(m), "a fresh worker")
}

// testKey is the pool key of a test principal (principalGateway).
func testKey(user string, readOnly bool) bindKey {
	return bindKey{owner: auth.Owner{Issuer: "https://issuer", Subject: "sub-" + user, UserID: user}, user: user, readOnly: readOnly, tools: workerproto.AllTools}
}

// workerOf returns the started per-user worker of key, if any.
func (g *Gateway) workerOf(key bindKey) *binding {
	g.mu.Lock()
	uw := g.bound[key.slot()]
	g.mu.Unlock()
	if uw == nil {
		return nil
	}
	select {
	case <-uw.ready:
		if uw.failed {
			return nil
		}
		return uw
	default:
		return nil
	}
}

func TestModernIdleStop(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g, url := principalGateway(t, nil, Options{Now: clock, SessionIdleTimeout: 10 * time.Minute})
	_, m := modernCall(t, url, "erin", false, "1", "pid", nil)
	pid, _ := strconv.Atoi(resultText(m))
	modernCall(t, url, "frank", false, "1", "pid", nil)

	advance(9 * time.Minute)
	g.reapIdle()
	require.Equal(t, 2, g.PerUserWorkers(), "nothing idle for 10 minutes yet")
	modernCall(t, url, "frank", false, "2", "echo", map[string]any{"text": "x"})
	advance(2 * time.Minute)
	g.reapIdle()
	require.Equal(t, 1, g.PerUserWorkers(), "erin's worker stopped, frank's used a minute ago")
	requireReaped(t, pid)
	_, m = modernCall(t, url, "erin", false, "2", "pid", nil)
	assert.NotEqual(t, strconv.Itoa(pid), resultText(m))
}

func TestModernWorkerLimits(t *testing.T) {
	_, url := principalGateway(t, nil, Options{MaxSessions: 2, MaxSessionsPerUser: 1})
	status, _ := modernCall(t, url, "gina", false, "1", "echo", map[string]any{"text": "x"})
	require.Equal(t, http.StatusOK, status)
	status, m := modernCall(t, url, "gina", true, "1", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusTooManyRequests, status, "%v", m)
	resp, _ := rawDo(t, http.MethodPost, url, initBody, "X-Test-User", "gina")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a session counts with the user's workers")
	status, _ = modernCall(t, url, "hank", false, "1", "echo", map[string]any{"text": "x"})
	require.Equal(t, http.StatusOK, status)
	status, _ = modernCall(t, url, "ivan", false, "1", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusServiceUnavailable, status)
}

// TestModernListen: a listen stream gets its acknowledgement, then the
// changes it opted in to from its own user's worker only, tagged with its
// subscription id. A listen over the per-user bound is refused with 429,
// and recorded as the limit it is.
func TestModernListen(t *testing.T) {
	rec := &recorder{}
	_, url := principalGateway(t, []string{sdkWorker}, Options{Observers: []Observer{rec}})
	listen := func(user, id string) *bufio.Reader {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		body := modernBody(id, "subscriptions/listen", `"notifications":{"toolsListChanged":true,"promptsListChanged":true}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			protoHdr: "2026-07-28", "Mcp-Method": "subscriptions/listen", "X-Test-User": user} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		return bufio.NewReader(resp.Body)
	}
	next := func(r *bufio.Reader) string { return nextData(t, r) }
	alice := listen("alice", `"sub-a"`)
	ack := next(alice)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-a"},"notifications":{"toolsListChanged":true}}}`, ack,
		"prompts are not offered by the worker, so not acknowledged")
	bob := listen("bob", `7`)
	next(bob)

	status, _ := modernCall(t, url, "alice", false, "1", "addtool", map[string]any{"name": "fresh"})
	require.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-a"}}}`, next(alice))
	// Bob's worker did not change; his next message is his own change.
	modernCall(t, url, "bob", false, "1", "addtool", map[string]any{"name": "other"})
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`, next(bob))

	// Hostile: listen streams are slots; one user's are bounded.
	for i := range maxListeners - 1 {
		next(listen("alice", strconv.Itoa(100+i)))
	}
	resp, body := rawDo(t, http.MethodPost, url, modernBody(`"over"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`),
		protoHdr, "2026-07-28", "Mcp-Method", "subscriptions/listen", "X-Test-User", "alice")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	e, ok := rec.byID()["over"]
	require.True(t, ok, "the refused listen is not recorded")
	assert.Equal(t, DecisionLimit, e.Decision)
	assert.Equal(t, http.StatusTooManyRequests, e.Status)
	assert.Equal(t, "subscriptions/listen", e.Method)
	assert.Equal(t, "alice", e.User)
}

// TestModernClosedStreamCancels: closing a 2026-07-28 response stream
// cancels the request in the worker (MCP 2026-07-28 §Cancellation).
func TestModernClosedStreamCancels(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	body := modernBody("1", "tools/call", `"name":"sleep","arguments":{"ms":600000}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		protoHdr: "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sleep"} {
		req.Header.Set(k, v)
	}
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	key := bindKey{user: g.opts.LocalUser, tools: workerproto.AllTools}
	inflight := func() int {
		uw := g.workerOf(key)
		if uw == nil {
			return -1
		}
		return uw.conn.InFlight()
	}
	require.Eventually(t, func() bool { return inflight() == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return inflight() == 0 }, 10*time.Second, 5*time.Millisecond)
	// The stub counts what it still runs: nothing but this call.
	_, m := modernCall(t, srv.URL, "", false, "2", "inflight", nil)
	assert.Equal(t, "0", resultText(m))
}

// TestModernInputRequestsFromA2025Worker drives the translation of a 2025
// worker's sampling request into an input request and back, and attacks the
// requestState: unknown, another user's, or replayed for another tool.
func TestModernInputRequestsFromA2025Worker(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	_, url := principalGateway(t, nil, Options{}, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + calls}})
	const samplingMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	call := func(user, id, tool, extra string) (int, map[string]any) {
		if extra != "" {
			extra = "," + extra
		}
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hey"}` + extra + `,` + samplingMeta + `}}`
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool, "X-Test-User", user)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return resp.StatusCode, m
	}
	ask := func(user string) (key, state string) {
		status, m := call(user, "1", "sample", "")
		require.Equal(t, http.StatusOK, status, "%v", m)
		res := m["result"].(map[string]any)
		require.Equal(t, "input_required", res["resultType"])
		for k, v := range res["inputRequests"].(map[string]any) {
			assert.Equal(t, "sampling/createMessage", v.(map[string]any)["method"])
			key = k
		}
		return key, res["requestState"].(string)
	}
	answer := func(key string) string {
		return `"inputResponses":{"` + key + `":{"role":"assistant","model":"m","content":{"type":"text","text":"HEY"}}}`
	}

	key, state := ask("alice")
	// A retry without the answer gets the question again, under a new state.
	status, m := call("alice", "2", "sample", `"requestState":"`+state+`"`)
	require.Equal(t, http.StatusOK, status, "%v", m)
	state = m["result"].(map[string]any)["requestState"].(string)
	status, m = call("alice", "3", "sample", `"requestState":"`+state+`",`+answer(key))
	require.Equal(t, http.StatusOK, status, "%v", m)
	assert.Equal(t, "sampled: HEY", resultText(m))
	assert.Equal(t, "complete", m["result"].(map[string]any)["resultType"])

	// A state the gateway did not mint for this worker (used, tampered,
	// another user's) is the worker's business: the request runs afresh,
	// and so asks again; it never completes a parked call.
	asksAgain := func(t *testing.T, status int, m map[string]any) {
		t.Helper()
		require.Equal(t, http.StatusOK, status, "%v", m)
		assert.Equal(t, "input_required", m["result"].(map[string]any)["resultType"])
	}
	t.Run("used state", func(t *testing.T) {
		status, m := call("alice", "4", "sample", `"requestState":"`+state+`",`+answer(key))
		asksAgain(t, status, m)
	})
	t.Run("tampered state", func(t *testing.T) {
		status, m := call("alice", "5", "sample", `"requestState":"`+state+`x",`+answer(key))
		asksAgain(t, status, m)
	})
	t.Run("another user's state", func(t *testing.T) {
		key, state := ask("alice")
		status, m := call("bob", "6", "sample", `"requestState":"`+state+`",`+answer(key))
		asksAgain(t, status, m) // bob cannot answer alice's worker
		status, m = call("alice", "7", "sample", `"requestState":"`+state+`",`+answer(key))
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "sampled: HEY", resultText(m), "alice's call was not disturbed")
	})
	t.Run("client without the capability", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sample","arguments":{"text":"x"},` + modernMetaJSON + `}}`
		resp, out := rawDo(t, http.MethodPost, url, body, protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "sample", "X-Test-User", "alice")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":9,"error":{"code":-32021,"message":"gateway: this request needs the client capability \"sampling\", which the request's _meta did not declare","data":{"requiredCapabilities":{"sampling":{}}}}}`, out)
	})
	t.Run("state replayed for another tool", func(t *testing.T) {
		key, state := ask("alice")
		status, _ := call("alice", "8", "write", `"requestState":"`+state+`",`+answer(key))
		assert.Equal(t, http.StatusBadRequest, status)
		b, _ := os.ReadFile(calls)
		assert.NotContains(t, string(b), "write", "the retry ran another tool")
	})
}

// TestModernProgressOfOneUsersClients: two clients of one user share a
// worker and happen to use the same progress token; each still gets only
// its own progress (the worker sees tokens unique to each request).
func TestModernProgressOfOneUsersClients(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	open := func(ms int) (*bufio.Reader, func()) { return sleepStream(t, srv.URL, ms, `"progressToken":"p"`) }
	next := func(r *bufio.Reader) string { return nextData(t, r) }
	first, end1 := open(3000)
	defer end1()
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0,"progressToken":"p"}}`, next(first))
	second, end2 := open(600000) // registered while the first still runs
	defer end2()
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0,"progressToken":"p"}}`, next(second))
	// The first call's last progress comes to the first client, not to the
	// client whose request came last with the same token.
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":"p"}}`, next(first))
	assert.Contains(t, next(first), `"slept"`)
}

// nextData returns the data of the next SSE event on r.
func nextData(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return strings.TrimSpace(d)
		}
	}
}

// TestModernKeyOf: a worker is never shared across principals, user ids
// (a token of the same subject with another user claim) or read-only flags.
func TestModernKeyOf(t *testing.T) {
	g, _ := newTestGateway(t, Options{})
	key := func(p *auth.Principal) bindKey {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if p != nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		return g.keyOf(g.newCall(r))
	}
	base := &auth.Principal{Issuer: "https://i", Subject: "s1", UserID: "alice"}
	otherUser := &auth.Principal{Issuer: "https://i", Subject: "s1", UserID: "mallory"}
	otherIssuer := &auth.Principal{Issuer: "https://j", Subject: "s1", UserID: "alice"}
	readOnly := &auth.Principal{Issuer: "https://i", Subject: "s1", UserID: "alice", ReadOnly: true}
	otherClient := &auth.Principal{Issuer: "https://i", Subject: "s1", UserID: "alice", ClientID: "app-2"}
	keys := map[bindKey]bool{}
	for _, p := range []*auth.Principal{base, otherUser, otherIssuer, readOnly, nil} {
		keys[key(p)] = true
	}
	assert.Len(t, keys, 5)
	assert.Equal(t, key(base), key(&auth.Principal{Issuer: "https://i", Subject: "s1", UserID: "alice"}))
	assert.Equal(t, key(base), key(otherClient), "one user's clients share the user's worker")
}

// TestModernEchoedValuesClipped: a refusal that names what the peer sent
// clips it, in the answer and the log, however long the header or body.
func TestModernEchoedValuesClipped(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	long := strings.Repeat("x", 64<<10)
	body := modernBody("1", "tools/call", `"name":"`+long+`"`)
	for _, headers := range [][]string{
		{protoHdr, "2026-07-28", "Mcp-Method", long},
		{protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo"},
		{protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", long + "y"},
	} {
		resp, out := rawDo(t, http.MethodPost, srv.URL, body, headers...)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Less(t, len(out), 1024, "answer %.200s…", out)
	}
}

// TestModernBufferBounded: a 2026-07-28 answer is held within the response
// budget like a session's: one over it becomes the
// bufferFull error, and nothing stays charged afterwards.
func TestModernBufferBounded(t *testing.T) {
	g, srv := newTestGateway(t, Options{MaxStreamBufferBytes: 1 << 20})
	status, m := modernCall(t, srv.URL, "", false, "1", "big", map[string]any{"size": 2 << 20})
	assert.Equal(t, http.StatusOK, status)
	e := m["error"].(map[string]any)
	assert.Equal(t, "bufferFull", e["data"].(map[string]any)["kind"])
	assert.Contains(t, e["message"], "limits.max_stream_buffer_bytes")
	status, m = modernCall(t, srv.URL, "", false, "2", "big", map[string]any{"size": 1000})
	assert.Equal(t, http.StatusOK, status)
	assert.Len(t, resultText(m), 1000)
	assert.Zero(t, g.BufferedBytes())
}
