package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// who is one principal of ownerGateway's stand-in middleware: its issuer,
// subject, user id and client, its rights (read-only, the granted tools;
// nil: no policy).
type who struct {
	iss, sub, user, client string
	ro                     bool
	tools                  []string
}

// headers are the request headers that make the middleware sign w in.
func (w who) headers() []string {
	h := []string{"X-Iss", w.iss, "X-Sub", w.sub, "X-User", w.user, "X-Client", w.client}
	if w.ro {
		h = append(h, "X-RO", "1")
	}
	if w.tools != nil {
		h = append(h, "X-Tools", strings.Join(w.tools, ",")+";")
	}
	return h
}

// ownerGateway serves a gateway of the stub worker behind a stand-in for
// auth's middleware that takes every part of the principal from headers,
// so that a test can vary the issuer alone, as two trusted issuers would.
func ownerGateway(t *testing.T, opts Options, wopts ...worker.LauncherOptions) (*Gateway, string) {
	t.Helper()
	opts.Middleware = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Header
			p := &auth.Principal{Issuer: h.Get("X-Iss"), Subject: h.Get("X-Sub"), UserID: h.Get("X-User"), ClientID: h.Get("X-Client"), ReadOnly: h.Get("X-RO") == "1"}
			if v, ok := strings.CutSuffix(h.Get("X-Tools"), ";"); ok {
				p.Tools = []string{}
				if v != "" {
					p.Tools = strings.Split(v, ",")
				}
			}
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}
	g, srv := newTestGatewayOf(t, nil, opts, wopts...)
	return g, srv.URL
}

// openAs initializes a session as w and returns its id.
func openAs(t *testing.T, url string, w who) string {
	t.Helper()
	sid := rawSessionWith(t, url, w.headers()...)
	resp, body := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		append(w.headers(), sidHdr, sid, protoHdr, "2025-11-25")...)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	return sid
}

// sessionPid is the process id the session's worker reports (tool pid).
func sessionPid(t *testing.T, url, sid string, w who) string {
	t.Helper()
	resp, body := rawDo(t, http.MethodPost, url, toolCall("pid"), append(w.headers(), sidHdr, sid, protoHdr, "2025-11-25")...)
	return pidOf(t, resp, body)
}

// pidOf is the process id in the answer to a call of tool pid.
func pidOf(t *testing.T, resp *http.Response, body string) string {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	pid := resultText(m)
	require.NotEmpty(t, pid, body)
	return pid
}

// modernPid is the process id of the per-user worker a 2026-07-28 request
// of w reaches, with extra headers.
func modernPid(t *testing.T, url string, w who, extra ...string) string {
	t.Helper()
	h := append(w.headers(), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "pid")
	resp, body := rawDo(t, http.MethodPost, url, modernBody("1", "tools/call", `"name":"pid"`), append(h, extra...)...)
	return pidOf(t, resp, body)
}

// TestSessionUnreachableByAnyOtherOwner (hostile): kim's session, named by
// its id, is missing to every token that differs from the one that opened
// it in one part: another issuer with kim's subject and user id, kim's
// issuer with another subject, another issuer and subject whose user claim
// is kim's, another client of kim's. POST, the GET stream and DELETE all
// answer 404, and the session and its worker live on.
func TestSessionUnreachableByAnyOtherOwner(t *testing.T) {
	_, url := ownerGateway(t, Options{})
	kim := who{iss: "https://a.example", sub: "s-kim", user: "kim", client: "app"}
	sid := openAs(t, url, kim)
	pid := sessionPid(t, url, sid, kim)
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	for _, tc := range []struct {
		name string
		w    who
	}{
		{"another issuer, same subject and user id", who{iss: "https://b.example", sub: "s-kim", user: "kim", client: "app"}},
		{"same issuer, another subject", who{iss: "https://a.example", sub: "s-other", user: "kim", client: "app"}},
		{"another issuer and subject, same user id", who{iss: "https://b.example", sub: "s-other", user: "kim", client: "app"}},
		{"same everything, another client", who{iss: "https://a.example", sub: "s-kim", user: "kim", client: "other"}},
		{"same issuer and subject, another user id", who{iss: "https://a.example", sub: "s-kim", user: "mallory", client: "app"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append(tc.w.headers(), sidHdr, sid, protoHdr, "2025-11-25")
			resp, body := rawDo(t, http.MethodPost, url, ping, h...)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "POST: %s", body)
			resp, body = rawDo(t, http.MethodPost, url, toolCall("pid"), h...)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "tools/call: %s", body)
			assert.NotContains(t, body, pid)
			assert.Equal(t, http.StatusNotFound, getStatus(t, url, h...), "GET")
			resp, body = rawDo(t, http.MethodDelete, url, "", h...)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "DELETE: %s", body)
			assert.Equal(t, pid, sessionPid(t, url, sid, kim), "the session and its worker live on")
		})
	}
}

// TestModernRequestNeverReachesASession (hostile): a 2026-07-28 request
// has no session: an MCP-Session-Id header on it, another principal's
// session id or its own, reaches the caller's own per-user worker, never
// the session's worker, and leaves the session alone.
func TestModernRequestNeverReachesASession(t *testing.T) {
	g, url := ownerGateway(t, Options{})
	kim := who{iss: "https://a.example", sub: "s-kim", user: "kim"}
	mallory := who{iss: "https://b.example", sub: "s-kim", user: "kim"} // kim's subject and user id, another issuer
	sid := openAs(t, url, kim)
	pid := sessionPid(t, url, sid, kim)

	theirs := modernPid(t, url, mallory, sidHdr, sid)
	assert.NotEqual(t, pid, theirs, "another principal's modern request reached kim's session worker")
	own := modernPid(t, url, kim, sidHdr, sid)
	assert.NotEqual(t, pid, own, "a modern request reached a session's worker")
	assert.NotEqual(t, theirs, own, "two principals share a per-user worker")
	assert.Equal(t, own, modernPid(t, url, kim), "the header changes nothing")
	assert.Equal(t, 2, g.PerUserWorkers())
	assert.Equal(t, 1, g.Sessions())
	assert.Equal(t, pid, sessionPid(t, url, sid, kim))

	// And back: a 2025-11-25 request naming a per-user worker's instance
	// id finds no session.
	g.mu.Lock()
	var ids []string
	for _, b := range g.bound {
		if b.gen == userGen {
			ids = append(ids, b.id)
		}
	}
	g.mu.Unlock()
	require.Len(t, ids, 2)
	for _, id := range ids {
		resp, body := rawDo(t, http.MethodPost, url, toolCall("pid"), append(kim.headers(), sidHdr, id, protoHdr, "2025-11-25")...)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	}
}

// TestQuotaAndEvictionPerPrincipal (hostile): two issuers that both name
// one subject and user id are two principals: each has its own
// MaxSessionsPerUser, and a new session over one's limit ends that
// principal's own least recently used idle session, never the other's.
func TestQuotaAndEvictionPerPrincipal(t *testing.T) {
	_, url := ownerGateway(t, Options{MaxSessionsPerUser: 1})
	a := who{iss: "https://a.example", sub: "s-kim", user: "kim"}
	b := who{iss: "https://b.example", sub: "s-kim", user: "kim"}
	sa := openAs(t, url, a)
	pa := sessionPid(t, url, sa, a)
	sb := openAs(t, url, b) // b's first: a's idle session is not b's to end
	assert.Equal(t, pa, sessionPid(t, url, sa, a), "b's session ended a's")
	sessionPid(t, url, sb, b) // a's session is now the least recently used
	openAs(t, url, b)         // over b's limit: b's own idle session goes
	resp, _ := rawDo(t, http.MethodPost, url, toolCall("pid"), append(b.headers(), sidHdr, sb, protoHdr, "2025-11-25")...)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "b's own least recently used session was ended")
	assert.Equal(t, pa, sessionPid(t, url, sa, a), "a's session outlives b's evictions")
}

// TestReadOnlyTokenNeverReachesAWiderWorker (hostile): one user with a
// write token and a read-only token, or two grants, at once: each 2026-07-28
// request reaches the worker of its own token's rights; the read-only one
// is refused a write on it.
func TestReadOnlyTokenNeverReachesAWiderWorker(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	_, url := ownerGateway(t, Options{SafeTools: []string{"echo", "pid"}}, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran}})
	rw := who{iss: "https://a.example", sub: "s-kim", user: "kim"}
	ro := rw
	ro.ro = true
	narrow := rw
	narrow.tools = []string{"pid", "echo"}
	wide := rw
	wide.tools = []string{"pid", "echo", "write"}
	pids := map[string]string{}
	for _, w := range []who{rw, ro, narrow, wide} {
		p := modernPid(t, url, w)
		assert.NotContains(t, pids, p, "two rights share a worker")
		pids[p] = "x"
	}
	for _, w := range []who{ro, narrow} {
		h := append(w.headers(), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "write")
		_, body := rawDo(t, http.MethodPost, url, modernBody("2", "tools/call", `"name":"write","arguments":{"text":"x"}`), h...)
		assert.Contains(t, body, `"error"`, "a narrower token wrote: %s", body)
	}
	log, _ := os.ReadFile(ran)
	assert.NotContains(t, string(log), "write", "the worker ran a write for a narrower token")
}

// TestToolNameReadOneWay (hostile): under a policy that grants echo only,
// a tools/call whose name member is ambiguous (another spelling of the key
// beside it or alone, a duplicate) is refused on a session and on a
// per-user worker, so the name the policy allows is the one the worker
// runs; an escaped key that spells name is the name, allowed or refused
// by what it names.
func TestToolNameReadOneWay(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	_, url := ownerGateway(t, Options{SafeTools: []string{"echo"}}, worker.LauncherOptions{Env: []string{"STUB_CALL_LOG=" + ran}})
	kim := who{iss: "https://a.example", sub: "s-kim", user: "kim", tools: []string{"echo"}}
	sid := openAs(t, url, kim)
	for _, tc := range []struct {
		params string // inside params, no _meta
		ok     bool   // echo runs
	}{
		{`"name":"echo","Name":"write"`, false},
		{`"Name":"write","name":"echo"`, false},
		{`"name":"echo","NAME":"write"`, false},
		{`"name":"write","name":"echo"`, false},
		{`"name":"echo","name":"write"`, false},
		{`"nAme":"write"`, false},
		{`"na\u006de":"write"`, false},
		{`"name":"echo","na\u006de":"write"`, false},
		{`"name":"echo","n\u0041me":"write"`, false},
		{`"name":"write","arguments":{"text":"x"},"name":"echo"`, false},
		{`"na\u006de":"echo"`, true},
		{`"name":"echo"`, true},
	} {
		t.Run(tc.params, func(t *testing.T) {
			_ = os.Remove(ran)
			body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{` + tc.params + `}}`
			_, out := rawDo(t, http.MethodPost, url, body, append(kim.headers(), sidHdr, sid, protoHdr, "2025-11-25")...)
			log, _ := os.ReadFile(ran)
			assert.NotContains(t, string(log), "write", "session: the worker ran write: %s", out)
			if tc.ok {
				assert.NotContains(t, out, `"error"`, "session: %s", out)
			} else {
				assert.Contains(t, out, `"error"`, "session: %s", out)
			}

			_ = os.Remove(ran)
			h := append(kim.headers(), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
			_, out = rawDo(t, http.MethodPost, url, modernBody("6", "tools/call", tc.params), h...)
			log, _ = os.ReadFile(ran)
			assert.NotContains(t, string(log), "write", "per-user worker: the worker ran write: %s", out)
			if tc.ok {
				assert.NotContains(t, out, `"error"`, "per-user worker: %s", out)
			} else {
				assert.Contains(t, out, `"error"`, "per-user worker: %s", out)
			}
		})
	}
}

// TestRequestStateIsTheWorkersOwn (hostile): the requestState of a call
// parked in kim's per-user worker, retried by another principal with kim's
// subject and user id (another issuer), or by kim's read-only token, does
// not resume kim's call nor answer its question: it reaches the caller's
// own worker, and kim's retry still completes with kim's answer.
func TestRequestStateIsTheWorkersOwn(t *testing.T) {
	_, url := ownerGateway(t, Options{SafeTools: []string{"sample"}})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	call := func(w who, id, extra string) map[string]any {
		t.Helper()
		if extra != "" {
			extra = "," + extra
		}
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"sample","arguments":{"text":"q"}` + extra + `,` + meta + `}}`
		resp, out := rawDo(t, http.MethodPost, url, body, append(w.headers(), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "sample")...)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
		return m
	}
	question := func(m map[string]any) (key, state string) {
		t.Helper()
		res, _ := m["result"].(map[string]any)
		require.Equal(t, "input_required", res["resultType"], "%v", m)
		for k := range res["inputRequests"].(map[string]any) {
			key = k
		}
		return key, res["requestState"].(string)
	}
	answer := func(key, text string) string {
		return `"inputResponses":{"` + key + `":{"role":"assistant","model":"m","content":{"type":"text","text":"` + text + `"}}}`
	}
	kim := who{iss: "https://a.example", sub: "s-kim", user: "kim"}
	key, state := question(call(kim, "1", ""))
	for i, w := range []who{
		{iss: "https://b.example", sub: "s-kim", user: "kim"},
		{iss: "https://a.example", sub: "s-kim", user: "kim", ro: true},
	} {
		m := call(w, strconv.Itoa(10+i), `"requestState":"`+state+`",`+answer(key, "MALLORY"))
		assert.NotEqual(t, "sampled: MALLORY", resultText(m), "another token's retry resumed kim's call")
	}
	m := call(kim, "2", `"requestState":"`+state+`",`+answer(key, "KIM"))
	assert.Equal(t, "sampled: KIM", resultText(m), "kim's call was resumed by someone else: %v", m)
}

// TestModernProgressTokenSpelledOtherwise (hostile): on a worker shared by
// one user's clients each request's progress token is made unique; a
// client that spells the key otherwise ("ProgressToken", which
// encoding/json folds) and gives it the value another client's request
// was made unique with must not take that request's progress.
func TestModernProgressTokenSpelledOtherwise(t *testing.T) {
	_, srv := newTestGateway(t, Options{})
	open := func(ms int, meta string) (*bufio.Reader, func()) { return sleepStream(t, srv.URL, ms, meta) }
	victim, end := open(3000, `"progressToken":"v"`)
	defer end()
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0,"progressToken":"v"}}`, nextData(t, victim))
	// The victim's unique token is mcpgate-progress-N for a small N: claim
	// them all while its call runs.
	for k := 1; k <= 12; k++ {
		_, end := open(600000, `"ProgressToken":"mcpgate-progress-`+strconv.Itoa(k)+`"`)
		defer end()
	}
	next := nextData(t, victim)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":"v"}}`, next,
		"the victim's progress went to another client")
}

// sleepStream opens a 2026-07-28 call of the stub's sleep tool for ms
// milliseconds, with one progress step at the end; meta holds the _meta
// members besides the protocol's own. It returns the SSE answer and the
// func that ends the request.
func sleepStream(t *testing.T, url string, ms int, meta string) (*bufio.Reader, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":` + strconv.Itoa(ms) + `,"steps":1},"_meta":{` + meta + `,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		protoHdr: "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sleep"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
}

// getStatus opens a GET stream with headers and returns its status,
// without waiting for the stream to end.
func getStatus(t *testing.T, url string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
