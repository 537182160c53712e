package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/metrics"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/worker/workertest"
)

// stubWorker is the stub stdio MCP server, built by TestMain.
var stubWorker string

func TestMain(m *testing.M) {
	os.Exit(workertest.Main(m, map[string]*string{workertest.Stub: &stubWorker}))
}

const resource = "https://mcp.example.test/mcp"

// trail is a gateway on the stub worker behind the real authenticator and a
// test issuer, writing its audit trail to a file.
type trail struct {
	g    *gateway.Gateway
	url  string
	iss  *authtest.Issuer
	path string
	log  *audit.Log
	mx   *metrics.Metrics
}

func newTrail(t *testing.T, gopts gateway.Options, aopts audit.Options) *trail {
	t.Helper()
	return newTrailAuth(t, auth.Options{WriteScope: "mcp:write"}, gopts, aopts)
}

// newTrailAuth is newTrail with the authenticator's WriteScope and
// Policies from authOpts; the gateway is observed by a metrics.Metrics
// besides the audit trail.
func newTrailAuth(t *testing.T, authOpts auth.Options, gopts gateway.Options, aopts audit.Options) *trail {
	t.Helper()
	iss := authtest.New(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: iss.URL, Resource: resource,
		RequiredScopes: []string{"mcp:use"}, WriteScope: authOpts.WriteScope, Policies: authOpts.Policies,
		UserClaim: "preferred_username", HTTPClient: iss.Client(), Logger: quiet,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	select {
	case <-a.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the authenticator never loaded the issuer's keys")
	}
	aopts.Path = filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(aopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })

	gopts.Middleware = a.Middleware
	gopts.Logger = quiet
	mx := metrics.New(metrics.Options{})
	gopts.Observers = []gateway.Observer{l, mx}
	wl, err := worker.NewLauncher([]string{stubWorker}, worker.LauncherOptions{StopGrace: 2 * time.Second})
	require.NoError(t, err)
	g, err := gateway.New(wl, gopts)
	require.NoError(t, err)
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return &trail{g: g, url: srv.URL, iss: iss, path: aopts.Path, log: l, mx: mx}
}

func (tr *trail) token(t *testing.T, user string, scopes ...string) string {
	t.Helper()
	tok, err := tr.iss.Sign(tr.iss.KeycloakClaims(user, resource, scopes...), authtest.SignOptions{})
	require.NoError(t, err)
	return tok
}

// post sends one JSON-RPC body with tok on session sid (none: "").
func (tr *trail) post(t *testing.T, tok, sid, body string) (*http.Response, map[string]any) {
	t.Helper()
	h := map[string]string{}
	if sid != "" {
		h["MCP-Session-Id"], h["MCP-Protocol-Version"] = sid, "2025-11-25"
	}
	return tr.send(t, tok, body, h)
}

// send posts body with tok and headers h and decodes the answer.
func (tr *trail) send(t *testing.T, tok, body string, h map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, tr.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp, m
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func (tr *trail) open(t *testing.T, tok string) string {
	t.Helper()
	resp, m := tr.post(t, tok, "", initBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
	sid := resp.Header.Get("MCP-Session-Id")
	require.NotEmpty(t, sid)
	resp, _ = tr.post(t, tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return sid
}

func call(id, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// events reads the audit file: one JSON object a line.
func events(t *testing.T, path string) (lines []map[string]any, raw string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		lines = append(lines, m)
	}
	return lines, string(data)
}

// byRequest finds the one event of a request id.
func byRequest(t *testing.T, lines []map[string]any, id string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, l := range lines {
		if l["request_id"] == id {
			require.Nil(t, found, "two events for request %s", id)
			found = l
		}
	}
	require.NotNil(t, found, "no event for request %s in %v", id, lines)
	return found
}

// checkCommon checks the fields every event of a session call shares, and
// that time and duration are sane; it removes them from e.
func checkCommon(t *testing.T, e map[string]any, tr *trail, user, sid string) {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, e["time"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), ts, time.Minute)
	d, ok := e["duration_ms"].(float64)
	assert.True(t, ok && d >= 0, "duration_ms %v", e["duration_ms"])
	assert.Equal(t, user, e["user"])
	assert.Equal(t, "mcp-client", e["client_id"])
	assert.Equal(t, tr.iss.URL, e["issuer"])
	if sid != "" {
		assert.Equal(t, sid[:8], e["session"])
		pid, _ := tr.g.WorkerPid(sid)
		if pid != 0 {
			assert.Equal(t, float64(pid), e["worker_pid"])
		}
	}
	assert.Equal(t, "", e["worker_key"])
	assert.Equal(t, gateway.WorkerSession, e["worker_kind"])
	for _, k := range []string{"time", "duration_ms", "user", "client_id", "issuer", "worker_key", "worker_kind"} {
		delete(e, k)
	}
}

// TestAuditEvents: an allowed write, a read-only refusal,
// a limit refusal and a worker crash, each one line in the file with every
// field, and no token anywhere in it.
func TestAuditEvents(t *testing.T) {
	tr := newTrail(t, gateway.Options{SafeTools: []string{"echo"}, MaxSessionsPerUser: 1},
		audit.Options{Arguments: true, MaxArgumentBytes: 16, Redact: []string{"Password"}})
	rw := tr.token(t, "alice", "mcp:use", "mcp:write")
	ro := tr.token(t, "bob", "mcp:use")
	alice, bob := tr.open(t, rw), tr.open(t, ro)
	alicePid, _ := tr.g.WorkerPid(alice)

	// An allowed write, with arguments cut and redacted.
	_, ans := tr.post(t, rw, alice, call("w1", "write", map[string]any{
		"sql": "insert into t values (1), (2), (3)", "password": "hunter2", "n": 7}))
	require.NotNil(t, ans["result"], "%v", ans)
	// A read-only refusal.
	// (a step-up challenge: 403 insufficient_scope naming the write scope)
	resp, _ := tr.post(t, ro, bob, call("r1", "write", map[string]any{"sql": "delete from t"}))
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// A limit refusal: bob's second session, while his first is in use (a
	// GET stream open; an idle one would be ended for the new one).
	get, err := http.NewRequest(http.MethodGet, tr.url, nil)
	require.NoError(t, err)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Authorization", "Bearer "+ro)
	get.Header.Set("MCP-Session-Id", bob)
	get.Header.Set("MCP-Protocol-Version", "2025-11-25")
	stream, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	defer stream.Body.Close()
	resp, _ = tr.post(t, ro, "", initBody)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	// A worker crash during a call.
	_, ans = tr.post(t, rw, alice, call("c1", "crash", map[string]any{"code": 3}))
	require.NotNil(t, ans["error"], "%v", ans)

	lines, raw := events(t, tr.path)
	require.Len(t, lines, 4, raw)

	e := byRequest(t, lines, "w1")
	checkCommon(t, e, tr, "alice", alice)
	assert.Equal(t, map[string]any{
		"event": "tools/call", "session": alice[:8], "worker_pid": float64(alicePid), "tool": "write",
		"read_only": false, "decision": "allowed", "outcome": "ok", "protocol": "2025-11-25", "request_id": "w1",
		"arguments": map[string]any{"sql": "insert into t va…(cut, 34 bytes)", "password": "[redacted]", "n": float64(7)},
	}, e)

	e = byRequest(t, lines, "r1")
	checkCommon(t, e, tr, "bob", bob)
	bobPid, _ := tr.g.WorkerPid(bob)
	assert.Equal(t, map[string]any{
		"event": "tools/call", "session": bob[:8], "worker_pid": float64(bobPid), "tool": "write",
		"read_only": true, "decision": "readOnly", "status": float64(403), "outcome": "refused",
		"protocol": "2025-11-25", "request_id": "r1", "arguments": map[string]any{"sql": "delete from t"},
	}, e)

	e = byRequest(t, lines, "1") // the refused initialize
	checkCommon(t, e, tr, "bob", "")
	assert.Equal(t, map[string]any{
		"event": "initialize", "session": "", "worker_pid": float64(0), "tool": "",
		"read_only": true, "decision": "limit", "status": float64(429), "outcome": "refused",
		"error_code": float64(-32603), "protocol": "2025-11-25", "request_id": "1",
	}, e)

	e = byRequest(t, lines, "c1")
	checkCommon(t, e, tr, "alice", alice)
	assert.Equal(t, map[string]any{
		"event": "tools/call", "session": alice[:8], "worker_pid": float64(alicePid), "tool": "crash",
		"read_only": false, "decision": "allowed", "outcome": "-32603", "error_code": float64(-32603),
		"error_kind": "workerExited", "protocol": "2025-11-25", "request_id": "c1", "arguments": map[string]any{"code": float64(3)},
	}, e)

	for _, tok := range []string{rw, ro} {
		assert.NotContains(t, raw, tok)
		assert.NotContains(t, raw, tok[strings.LastIndex(tok, ".")+1:], "a token's signature")
	}
	assert.NotContains(t, raw, "hunter2")
}

// TestArgumentsOffByDefault: without Options.Arguments an event has none.
func TestArgumentsOffByDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := audit.Open(audit.Options{Path: path})
	require.NoError(t, err)
	defer l.Close()
	l.Call(&gateway.CallEvent{Time: time.Now(), Method: "tools/call", Tool: "query", Decision: "allowed",
		Outcome: "sqlError", Arguments: json.RawMessage(`{"sql":"select 1"}`)})
	lines, _ := events(t, path)
	require.Len(t, lines, 1)
	assert.Equal(t, "sqlError", lines[0]["outcome"])
	assert.NotContains(t, lines[0], "arguments", "arguments are off by default")
}

// TestReopen: after the file is moved away (log rotation) and Reopen, new
// events go to a new file at the path; nothing is lost.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(audit.Options{Path: path})
	require.NoError(t, err)
	defer l.Close()
	ev := func(id string) *gateway.CallEvent {
		return &gateway.CallEvent{Time: time.Now(), Method: "tools/call", RequestID: id, Outcome: "ok"}
	}
	l.Call(ev("1"))
	require.NoError(t, os.Rename(path, path+".1"))
	l.Call(ev("2")) // still the old file: nothing reopened yet
	require.NoError(t, l.Reopen())
	l.Call(ev("3"))

	old, _ := events(t, path+".1")
	cur, _ := events(t, path)
	require.Len(t, old, 2)
	require.Len(t, cur, 1)
	assert.Equal(t, "1", old[0]["request_id"])
	assert.Equal(t, "2", old[1]["request_id"])
	assert.Equal(t, "3", cur[0]["request_id"])
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestSinkFailures: a path that cannot be opened fails Open; a write that
// fails later is counted and logged, never silent.
func TestSinkFailures(t *testing.T) {
	_, err := audit.Open(audit.Options{Path: filepath.Join(t.TempDir(), "missing", "audit.jsonl")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "audit.path")

	var logged strings.Builder
	failures := 0
	l, err := audit.Open(audit.Options{
		Path:         filepath.Join(t.TempDir(), "audit.jsonl"),
		ErrorLog:     slog.New(slog.NewTextHandler(&logged, nil)),
		OnWriteError: func() { failures++ },
	})
	require.NoError(t, err)
	require.NoError(t, l.Close()) // every later write fails
	l.Call(&gateway.CallEvent{Time: time.Now(), Method: "tools/call", User: "alice", Tool: "write", Outcome: "ok"})
	assert.Equal(t, 1, failures)
	assert.Contains(t, logged.String(), "level=ERROR")
	assert.Contains(t, logged.String(), "user=alice")
	assert.Contains(t, logged.String(), "tool=write")
}

// TestMainLog: without a path the events go to the main log.
func TestMainLog(t *testing.T) {
	var out strings.Builder
	l, err := audit.Open(audit.Options{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	require.NoError(t, err)
	l.Call(&gateway.CallEvent{Time: time.Now(), Method: "tools/call", User: "alice", Tool: "echo", WorkerPid: 42, Outcome: "ok"})
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &m), out.String())
	assert.Equal(t, "audit", m["msg"])
	assert.Equal(t, "tools/call", m["event"])
	assert.Equal(t, "alice", m["user"])
	assert.Equal(t, strconv.Itoa(42), fmt.Sprint(m["worker_pid"]))
}

// modernPost sends one 2026-07-28 tools/call with tok: no session, the
// caller's per-user worker.
func (tr *trail) modernPost(t *testing.T, tok, id, tool string, args map[string]any) (*http.Response, map[string]any) {
	t.Helper()
	a, _ := json.Marshal(args)
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(a) +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	return tr.send(t, tok, body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
}

// TestAuditEventsModern: a 2026-07-28 call is recorded with its per-user
// worker (kind user, its instance id, no session), and so is a limit's
// refusal of a per-user worker.
func TestAuditEventsModern(t *testing.T) {
	tr := newTrail(t, gateway.Options{MaxSessionsPerUser: 1}, audit.Options{})
	carol := tr.token(t, "carol", "mcp:use", "mcp:write")
	dave := tr.token(t, "dave", "mcp:use", "mcp:write")
	tr.open(t, dave) // dave's one slot

	_, ans := tr.modernPost(t, carol, "m1", "echo", map[string]any{"text": "hi"})
	require.NotNil(t, ans["result"], "%v", ans)
	resp, _ := tr.modernPost(t, dave, "m2", "echo", map[string]any{"text": "hi"})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	lines, raw := events(t, tr.path)
	require.Len(t, lines, 2, raw)
	e := byRequest(t, lines, "m1")
	assert.Equal(t, "user", e["worker_kind"])
	assert.Equal(t, "2026-07-28", e["protocol"])
	assert.Equal(t, "", e["session"])
	assert.Regexp(t, `^u-[0-9a-f]{32}$`, e["worker_key"])
	assert.NotZero(t, e["worker_pid"])
	assert.Equal(t, "carol", e["user"])
	assert.Equal(t, "allowed", e["decision"])
	assert.Equal(t, "ok", e["outcome"])
	assert.Equal(t, "echo", e["tool"])

	e = byRequest(t, lines, "m2")
	assert.Equal(t, "user", e["worker_kind"])
	assert.Equal(t, "", e["worker_key"])
	assert.Equal(t, "limit", e["decision"])
	assert.Equal(t, float64(429), e["status"])
	assert.Equal(t, "echo", e["tool"])
	assert.Equal(t, "dave", e["user"])
	assert.NotContains(t, raw, carol)
	assert.NotContains(t, raw, dave)
}

// TestAction: an operator's action is one line of the trail, with who did
// what to which worker.
func TestAction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(audit.Options{Path: path})
	require.NoError(t, err)
	l.Action(audit.Action{Time: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), Name: "admin/end", Admin: "alice",
		AdminIssuer: "https://kc.example", AdminSub: "s-1", Outcome: "ok",
		TargetKind: "session", TargetID: "01234567", TargetUser: "bob", TargetPid: 42})
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, `{"time":"2026-12-02T03:00:00Z","event":"admin/end","admin":"alice","admin_issuer":"https://kc.example",
		"admin_sub":"s-1","outcome":"ok","worker_kind":"session","target":"01234567","user":"bob","worker_pid":42}`, string(b))
}
