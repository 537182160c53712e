package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/worker"
)

// sharedGateway serves the built-in worker on d with sessions shared
// (Options.SharedSessions) and opts; the principal comes from the test
// headers of builtinGateway.
func sharedGateway(t testing.TB, d db.Config, opts Options) (*Gateway, string) {
	t.Helper()
	safe, err := tools.SafeToolNames(nil)
	require.NoError(t, err)
	l, err := worker.NewLauncher([]string{builtinWorker}, worker.LauncherOptions{
		Env: d.Environ(), IdentityOnStdin: true, StopGrace: 2 * time.Second, Logger: testLogger(t),
	})
	require.NoError(t, err)
	opts.Logger, opts.SafeTools, opts.SharedSessions = testLogger(t), safe, true
	if opts.WorkerStartTimeout == 0 {
		opts.WorkerStartTimeout = time.Minute
	}
	g, err := New(l, opts)
	require.NoError(t, err)
	hs := testPrincipalServer(g)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := stopContext()
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return g, hs.URL
}

// testPrincipalServer serves g on httptest with the principal taken from
// test headers, standing in for auth's middleware: X-Test-User,
// X-Test-Read-Only ("1"), X-Test-Tools (a policy grant, comma-separated)
// and X-Test-Client (the client id).
func testPrincipalServer(g *Gateway) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			p := &auth.Principal{Issuer: "https://issuer", Subject: "sub-" + u, UserID: u, ReadOnly: r.Header.Get("X-Test-Read-Only") == "1",
				ClientID: r.Header.Get("X-Test-Client")}
			if tl := r.Header.Get("X-Test-Tools"); tl != "" {
				p.Tools = strings.Split(tl, ",")
			}
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		g.ServeHTTP(w, r)
	}))
}

// stopContext bounds a test gateway's Close.
func stopContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// hostedPid is the pid of the worker process session cs runs in.
func hostedPid(t testing.TB, g *Gateway, cs *mcp.ClientSession) int {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, b := range g.bound {
		if k.session == cs.ID() {
			return b.worker().Pid()
		}
	}
	t.Fatalf("no session %s", cs.ID())
	return 0
}

// structuredCall runs tool in cs and returns its structured content; a tool error
// fails the test.
func structuredCall(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %+v", tool, res.Content)
	m, _ := res.StructuredContent.(map[string]any)
	return m
}

// countIDs counts the customers of the ids the test inserts, as cs sees
// them.
func countIDs(t testing.TB, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{
		"sql": "SELECT count(*) AS n FROM customers WHERE id IN (9001, 9002)"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

// TestSharedSessionsOfOneUser: two 2025-11-25 sessions of one user run in
// one worker process, each with its own initialize answer (its own
// session id in status), database connection and transaction: one
// commits, the other aborts, and neither sees the other's uncommitted
// write. A third user's session is in another process; a read-only
// session of the first user, and a token of hers with another grant,
// reach other processes too.
func TestSharedSessionsOfOneUser(t *testing.T) {
	for _, engine := range dbtest.Engines() {
		t.Run(engine, func(t *testing.T) {
			g, url := sharedGateway(t, dbtest.Config(t, engine), Options{})
			alice := headers{"X-Test-User": "alice"}
			a := as(t, url, "2025-11-25", alice)
			b := as(t, url, "2025-11-25", headers{"X-Test-User": "alice", "X-Test-Client": "other-client"})
			require.Equal(t, hostedPid(t, g, a), hostedPid(t, g, b), "two sessions of one user must share the user's worker")
			assert.Equal(t, 1, g.PerUserWorkers(), "one process for the user")

			assert.Equal(t, a.ID(), structuredCall(t, a, "status", nil)["sessionId"], "each session keeps its own identity")
			assert.Equal(t, b.ID(), structuredCall(t, b, "status", nil)["sessionId"])

			structuredCall(t, a, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (9001, 'a', 'a@example.com')"})
			assert.Contains(t, countIDs(t, a), "1", "a session sees its own write")
			assert.Contains(t, countIDs(t, b), "0", "the other session saw an uncommitted write")
			assert.Equal(t, true, structuredCall(t, a, "status", nil)["uncommittedChanges"])
			assert.Equal(t, false, structuredCall(t, b, "status", nil)["uncommittedChanges"], "one session's transaction showed in the other's status")
			structuredCall(t, b, "abort", nil) // ends b's read snapshot
			structuredCall(t, a, "commit", nil)

			structuredCall(t, b, "execute_sql", map[string]any{"sql": "INSERT INTO customers (id, name, email) VALUES (9002, 'b', 'b@example.com')"})
			structuredCall(t, b, "abort", nil)
			assert.Contains(t, countIDs(t, b), "1", "a's commit and b's abort")
			structuredCall(t, a, "abort", nil)
			assert.Contains(t, countIDs(t, a), "1")

			carol := as(t, url, "2025-11-25", headers{"X-Test-User": "carol"})
			assert.NotEqual(t, hostedPid(t, g, a), hostedPid(t, g, carol), "another user's session shared a process")
			ro := as(t, url, "2025-11-25", headers{"X-Test-User": "alice", "X-Test-Read-Only": "1"})
			assert.NotEqual(t, hostedPid(t, g, a), hostedPid(t, g, ro), "a read-only session shared a read-write one's process")
			assert.Equal(t, true, structuredCall(t, ro, "status", nil)["readOnly"])
			granted := as(t, url, "2025-11-25", headers{"X-Test-User": "alice", "X-Test-Tools": "query,status"})
			assert.NotEqual(t, hostedPid(t, g, a), hostedPid(t, g, granted), "a token of another grant shared a process")
			assert.NotEqual(t, hostedPid(t, g, ro), hostedPid(t, g, granted))
			assert.Equal(t, 4, g.PerUserWorkers())
		})
	}
}

// hostedCall posts one tools/call with id on session sid as user and
// returns the decoded answer.
func hostedCall(t testing.TB, url, user, sid, id, tool string, args map[string]any) (int, map[string]any) {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	resp, body := rawDo(t, http.MethodPost, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, id, params),
		sidHdr, sid, protoHdr, "2025-11-25", "Accept", "application/json", "X-Test-User", user)
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	return resp.StatusCode, m
}

// modernRequestMeta is the _meta member of a 2026-07-28 request.
const modernRequestMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// slowQuery runs until it is cancelled or its worker goes.
var slowQuery = map[string]any{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}

// TestSharedWorkerCrashEndsEverySession: killing the process that hosts
// two sessions ends both: the request in flight in each (by the same
// JSON-RPC id) is answered with workerExited, and each session is gone
// (404); the user's next session starts a fresh process.
func TestSharedWorkerCrashEndsEverySession(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	a, b := rawSessionWith(t, url, "X-Test-User", "alice"), rawSessionWith(t, url, "X-Test-User", "alice")
	pid, _ := g.WorkerPid(a)
	pb, _ := g.WorkerPid(b)
	require.Equal(t, pid, pb, "two sessions of one user must share the user's worker")

	var wg sync.WaitGroup
	answers := make([]map[string]any, 2)
	for i, sid := range []string{a, b} {
		wg.Go(func() { _, answers[i] = hostedCall(t, url, "alice", sid, "7", "query", slowQuery) })
	}
	waitInFlight(t, g, pid, 2)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	wg.Wait()
	for i, m := range answers {
		errObj, _ := m["error"].(map[string]any)
		require.NotNil(t, errObj, "session %d: got %v, want a JSON-RPC error", i, m)
		assert.Equal(t, float64(7), m["id"])
		assert.Equal(t, "workerExited", errObj["data"].(map[string]any)["kind"], "session %d", i)
		assert.Contains(t, errObj["message"], "initialize a new one")
	}
	for _, sid := range []string{a, b} {
		status, _ := hostedCall(t, url, "alice", sid, "8", "status", nil)
		assert.Equal(t, http.StatusNotFound, status, "a session outlived its worker")
	}
	c := rawSessionWith(t, url, "X-Test-User", "alice")
	pc, _ := g.WorkerPid(c)
	assert.NotEqual(t, pid, pc)
	status, m := hostedCall(t, url, "alice", c, "1", "status", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, resultText(m), "user: alice")
}

// waitInFlight waits until the sessions hosted in process pid have n
// requests in flight together.
func waitInFlight(t testing.TB, g *Gateway, pid, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		got := 0
		g.mu.Lock()
		for _, b := range g.bound {
			if b.gen == sessionGen && b.worker().Pid() == pid {
				got += b.worker().InFlight()
			}
		}
		g.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never %d requests in flight", n)
}

// TestSharedSessionsHostile: what a user with a valid token of her own
// would try against the worker her sessions share. A message shaped as
// the gateway's frame, naming another session's number with a write in
// it, sent as a request and as a notification in her session and as a
// 2026-07-28 request, is only ever a message of the session it came in
// (its server knows no such method): the other session's transaction
// never changes. Both sessions use the same JSON-RPC ids, and each gets
// its own answers. Another user's request on her session id is 404.
func TestSharedSessionsHostile(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	a, b := rawSessionWith(t, url, "X-Test-User", "alice"), rawSessionWith(t, url, "X-Test-User", "alice")
	pa, _ := g.WorkerPid(a)
	pb, _ := g.WorkerPid(b)
	require.Equal(t, pa, pb)

	write := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_sql","arguments":{"sql":"INSERT INTO customers (id, name, email) VALUES (9003, 'x', 'x@example.com')"}}}`
	for n := range 4 { // the numbers the gateway gives a worker's sessions
		frame := fmt.Sprintf(`{"session":%d,"message":%s}`, n, write)
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":"forged","method":"mcpgate/session","params":` + frame + `}`,
			`{"jsonrpc":"2.0","method":"mcpgate/session","params":` + frame + `}`,
		} {
			resp, out := rawDo(t, http.MethodPost, url, body, sidHdr, a, protoHdr, "2025-11-25", "X-Test-User", "alice")
			assert.NotContains(t, out, "9003", "status %d", resp.StatusCode)
		}
		modernFrame := fmt.Sprintf(`{"session":%d,"message":%s,%s}`, n, write, modernRequestMeta)
		resp, out := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":2,"method":"mcpgate/session","params":`+modernFrame+`}`,
			protoHdr, modernVersion, "Mcp-Method", "mcpgate/session", "X-Test-User", "alice")
		assert.Contains(t, out, `"code":-32601`, "a forged frame on the 2026-07-28 path reached no method (status %d)", resp.StatusCode)
	}
	for _, sid := range []string{a, b} {
		_, m := hostedCall(t, url, "alice", sid, "1", "status", nil)
		assert.Contains(t, resultText(m), "uncommitted changes: false", "a forged frame wrote in a session")
		_, m = hostedCall(t, url, "alice", sid, "1", "query", map[string]any{"sql": "SELECT count(*) AS n FROM customers WHERE id = 9003"})
		assert.Contains(t, resultText(m), "0", "a forged frame's write is visible")
	}

	// The same ids in both sessions at once: each answer is its own.
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i, sid := range []string{a, b} {
		wg.Go(func() {
			_, m := hostedCall(t, url, "alice", sid, "1", "status", nil)
			texts[i] = resultText(m)
		})
	}
	wg.Wait()
	assert.Contains(t, texts[0], "session: "+a)
	assert.Contains(t, texts[1], "session: "+b)

	status, _ := hostedCall(t, url, "mallory", a, "1", "status", nil)
	assert.Equal(t, http.StatusNotFound, status, "another user reached alice's session")
}

// TestSharedSessionsCancelAlone: two sessions of one user run a query
// each by the same JSON-RPC id; one cancels its own
// (notifications/cancelled naming that id). The other's query runs on to
// its result: a cancellation is its session's alone.
func TestSharedSessionsCancelAlone(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	a, b := rawSessionWith(t, url, "X-Test-User", "alice"), rawSessionWith(t, url, "X-Test-User", "alice")
	pid, _ := g.WorkerPid(a)

	finite := map[string]any{"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) AS n FROM c"}
	var wg sync.WaitGroup
	var ma, mb map[string]any
	wg.Go(func() { _, ma = hostedCall(t, url, "alice", a, "7", "query", slowQuery) })
	wg.Go(func() { _, mb = hostedCall(t, url, "alice", b, "7", "query", finite) })
	waitInFlight(t, g, pid, 2)
	resp, _ := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		sidHdr, a, protoHdr, "2025-11-25", "X-Test-User", "alice")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	wg.Wait()
	assert.Nil(t, ma["result"], "the cancelled request was answered: %v", ma)
	require.NotNil(t, mb["result"], "the other session's request: %v", mb)
	assert.Contains(t, resultText(mb), "300000", "the other session's query was cancelled")
}

// TestSharedSessionsLimits: the limits count sessions, not processes. A
// user under max_sessions_per_user 3 holds three sessions in one worker
// (the worker is not a fourth), and her fourth initialize ends her least
// recently used idle session; limits.max_sessions_per_worker refuses a
// session beyond it with 429. An idle session is reaped alone; the
// worker is reaped once it hosts none and has been idle as long.
func TestSharedSessionsLimits(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{Now: clock, SessionIdleTimeout: 10 * time.Minute,
		MaxSessionsPerUser: 3, MaxSessionsPerWorker: 2})

	a := rawSessionWith(t, url, "X-Test-User", "alice")
	advance(time.Minute)
	b := rawSessionWith(t, url, "X-Test-User", "alice")
	pid, _ := g.WorkerPid(a)
	pb, _ := g.WorkerPid(b)
	require.Equal(t, pid, pb)
	resp, body := rawDo(t, http.MethodPost, url, initBody, "X-Test-User", "alice")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	assert.Contains(t, body, "limits.max_sessions_per_worker")
	assert.Equal(t, 2, g.Sessions())

	// A read-only session is another worker: the user's third session.
	advance(time.Minute)
	ro := rawSessionWith(t, url, "X-Test-User", "alice", "X-Test-Read-Only", "1")
	assert.Equal(t, 3, g.Sessions())
	assert.Equal(t, 2, g.PerUserWorkers())
	// The fourth: her least recently used idle session (a) makes room.
	advance(time.Minute)
	ro2 := rawSessionWith(t, url, "X-Test-User", "alice", "X-Test-Read-Only", "1")
	_, ok := g.WorkerPid(a)
	assert.False(t, ok, "the least recently used idle session should have made room")
	assert.Equal(t, 3, g.Sessions())

	// b and ro idle past the timeout, ro2 not: they go, their workers stay
	// while a session is hosted, b's worker (now empty) goes at the next
	// reaping once idle as long.
	advance(9*time.Minute + 30*time.Second)
	_, out := rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{}}}`,
		sidHdr, ro2, protoHdr, "2025-11-25", "Accept", "application/json", "X-Test-User", "alice", "X-Test-Read-Only", "1")
	require.Contains(t, out, "read-only: true")
	advance(time.Minute)
	g.reapIdle()
	assert.Equal(t, 1, g.Sessions())
	for _, sid := range []string{b, ro} {
		_, ok := g.WorkerPid(sid)
		assert.False(t, ok, "an idle session outlived the timeout")
	}
	assert.Equal(t, 2, g.PerUserWorkers(), "a worker outlives its last session by at least one reaping")
	advance(11 * time.Minute)
	g.reapIdle() // ro2 goes; its worker stays one more timeout
	assert.Equal(t, 0, g.Sessions())
	advance(11 * time.Minute)
	g.reapIdle()
	assert.Equal(t, 0, g.PerUserWorkers(), "an empty idle worker outlived the timeout")
	requireReaped(t, pid)
}

// TestSharedSessionsDatabaseBudget: every hosted session's connection
// counts against the database budget, beside the one its worker opens at
// its start; the rest of the worker's share is charged when a 2026-07-28
// request first uses it.
func TestSharedSessionsDatabaseBudget(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{DB: DBBudget{Max: 20, MaxPerUser: 5, PerSession: 1, PerUserWorker: 5}})
	a := rawSessionWith(t, url, "X-Test-User", "alice")
	for range 3 {
		rawSessionWith(t, url, "X-Test-User", "alice")
	}
	assert.Equal(t, 5, g.DBConnections(), "four sessions and their worker's first connection")
	resp, body := rawDo(t, http.MethodPost, url, initBody, "X-Test-User", "alice")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	assert.Contains(t, body, "limits.max_db_connections_per_user")
	rawDo(t, http.MethodDelete, url, "", sidHdr, a, protoHdr, "2025-11-25", "X-Test-User", "alice")
	assert.Equal(t, 4, g.DBConnections(), "an ended session gives its connection back")

	resp, body = rawDo(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{},`+modernRequestMeta+`}}`,
		protoHdr, modernVersion, "Mcp-Method", "tools/call", "Mcp-Name", "status", "X-Test-User", "alice")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a 2026-07-28 request in a worker whose share does not fit: %s", body)
	assert.Equal(t, 4, g.DBConnections())
	bob := rawSessionWith(t, url, "X-Test-User", "bob")
	_, m := hostedCall(t, url, "bob", bob, "1", "status", nil)
	assert.Contains(t, resultText(m), "user: bob")
	assert.Equal(t, 6, g.DBConnections())
}

// TestSharedSessionStepUp: a read-only session whose client steps up to a
// read-write token moves to the worker of its new rights, the one the
// user's read-write sessions share; the read-only worker is left to
// itself.
func TestSharedSessionStepUp(t *testing.T) {
	g, url := sharedGateway(t, dbtest.Config(t, db.SQLite), Options{})
	rw := rawSessionWith(t, url, "X-Test-User", "alice")
	ro := rawSessionWith(t, url, "X-Test-User", "alice", "X-Test-Read-Only", "1")
	prw, _ := g.WorkerPid(rw)
	pro, _ := g.WorkerPid(ro)
	require.NotEqual(t, prw, pro)
	_, m := hostedCall(t, url, "alice", ro, "1", "status", nil) // a read-write token
	assert.Contains(t, resultText(m), "read-only: false")
	assert.Contains(t, resultText(m), "session: "+ro, "the session keeps its identity in its new worker")
	now, _ := g.WorkerPid(ro)
	assert.Equal(t, prw, now, "the stepped-up session should run in the user's read-write worker")
}
