package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/worker"
)

// builtinGateway serves the built-in worker on a scratch SQLite file with
// poolSize pre-started workers (0: none). The principal comes from test
// headers, standing in for auth's middleware: X-Test-User, X-Test-Read-Only
// ("1") and X-Test-Tools (a policy grant, comma-separated).
func builtinGateway(t testing.TB, poolSize int) (*Gateway, *worker.Launcher, string) {
	t.Helper()
	safe, err := tools.SafeToolNames(nil)
	require.NoError(t, err)
	l, err := worker.NewLauncher([]string{builtinWorker}, worker.LauncherOptions{
		Env:      (db.Config{Driver: db.SQLite, DSN: filepath.Join(t.TempDir(), "data", "mcpgate.db")}).Environ(),
		PoolSize: poolSize, IdentityOnStdin: true, StopGrace: 2 * time.Second, Logger: testLogger(t),
	})
	require.NoError(t, err)
	g, err := New(l, Options{Logger: testLogger(t), SafeTools: safe, MaxSessionsPerUser: 64, WorkerStartTimeout: time.Minute})
	require.NoError(t, err)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			p := &auth.Principal{Issuer: "https://issuer", Subject: "sub-" + u, UserID: u, ReadOnly: r.Header.Get("X-Test-Read-Only") == "1"}
			if tl := r.Header.Get("X-Test-Tools"); tl != "" {
				p.Tools = strings.Split(tl, ",")
			}
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, g.Close(ctx))
	})
	return g, l, hs.URL
}

// headers adds fixed headers to each request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// as connects the go-sdk client as a user on protocol version ("": the
// SDK's default, 2026-07-28).
func as(t testing.TB, url, version string, h headers) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: h}}, nil, version)
}

func statusUser(t testing.TB, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	return res.StructuredContent.(map[string]any)
}

// writingCTE is a write that only the database can refuse: query is a
// read-only tool, and the gateway does not read SQL.
const writingCTE = "WITH x AS (SELECT 99 AS id) INSERT INTO customers (id, name, email) SELECT id, 'x', 'x@example.org' FROM x"

func queryKind(t testing.TB, cs *mcp.ClientSession, sql string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"sql": sql}})
	require.NoError(t, err)
	if !res.IsError {
		return ""
	}
	return fmt.Sprint(res.StructuredContent.(map[string]any)["error"].(map[string]any)["kind"])
}

// TestPrestartedSessions: with the pool on and off, through the gateway and
// the go-sdk client, on both protocol generations: each session or
// per-user worker runs as its user; a read-only session cannot write (the
// database refuses); a grant of read-only tools opens the database
// read-only and lists only its tools; no two sessions share a worker.
func TestPrestartedSessions(t *testing.T) {
	for _, size := range []int{0, 2} {
		t.Run(fmt.Sprintf("pool_size=%d", size), func(t *testing.T) {
			g, l, url := builtinGateway(t, size)
			if size > 0 {
				require.True(t, l.WaitPool(t.Context(), size))
			}
			ro := as(t, url, "2025-11-25", headers{"X-Test-User": "alice", "X-Test-Read-Only": "1"})
			st := statusUser(t, ro)
			assert.Equal(t, "alice", st["user"])
			assert.Equal(t, true, st["readOnly"])
			assert.Equal(t, "readOnly", queryKind(t, ro, writingCTE), "a read-only session wrote")

			rw := as(t, url, "2025-11-25", headers{"X-Test-User": "bob"})
			st = statusUser(t, rw)
			assert.Equal(t, "bob", st["user"])
			assert.Equal(t, false, st["readOnly"])

			granted := as(t, url, "2025-11-25", headers{"X-Test-User": "carol", "X-Test-Tools": "query,status"})
			assert.Equal(t, "carol", statusUser(t, granted)["user"])
			list, err := granted.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			assert.ElementsMatch(t, []string{"query", "status"}, names)
			assert.Equal(t, "readOnly", queryKind(t, granted, writingCTE), "a grant of read-only tools reached a read-write database")

			modern := as(t, url, "", headers{"X-Test-User": "dave", "X-Test-Read-Only": "1"})
			assert.Equal(t, "dave", statusUser(t, modern)["user"])
			assert.Equal(t, "readOnly", queryKind(t, modern, writingCTE), "a read-only per-user worker wrote")

			pids := map[int]string{}
			for _, cs := range []*mcp.ClientSession{ro, rw, granted} {
				pid, ok := g.WorkerPid(cs.ID())
				require.True(t, ok)
				_, dup := pids[pid]
				assert.False(t, dup, "two sessions share worker %d", pid)
				pids[pid] = cs.ID()
			}
			hits, misses := l.PoolStats()
			if size == 0 {
				assert.Zero(t, hits+misses)
			} else {
				assert.Positive(t, hits, "no session used the pool")
				assert.Equal(t, int64(4), hits+misses, "three sessions and one per-user worker")
			}
		})
	}
}

// TestPrestartedConcurrentSessions: sessions of many users started at once
// each get a worker of their own, running as their user.
func TestPrestartedConcurrentSessions(t *testing.T) {
	g, l, url := builtinGateway(t, 3)
	require.True(t, l.WaitPool(t.Context(), 3))
	const n = 6
	sessions := make([]*mcp.ClientSession, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sessions[i] = as(t, url, "2025-11-25", headers{"X-Test-User": fmt.Sprintf("u%d", i)})
		})
	}
	wg.Wait()
	pids := map[int]bool{}
	for i, cs := range sessions {
		assert.Equal(t, fmt.Sprintf("u%d", i), statusUser(t, cs)["user"])
		pid, ok := g.WorkerPid(cs.ID())
		require.True(t, ok)
		assert.False(t, pids[pid], "worker %d serves two sessions", pid)
		pids[pid] = true
	}
}

// TestPrestartedStoppedOnClose: Close stops the pool's workers too; a
// drained gateway keeps none waiting.
func TestPrestartedStoppedOnClose(t *testing.T) {
	g, l, _ := builtinGateway(t, 2)
	require.True(t, l.WaitPool(t.Context(), 2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, g.Drain(ctx))
	assert.False(t, l.WaitPool(ctx, 1), "the pool still holds workers after a drain")
}

// BenchmarkSessionStart measures what a client waits for a new session of
// the built-in worker: initialize and a first tools/call (status) through
// a real gateway on httptest with the go-sdk client, one session after
// another, with the pool off and at its default size. The session's end
// (DELETE, worker stop) is outside the timing. It reports the median and
// the share of sessions that found a pre-started worker.
func BenchmarkSessionStart(b *testing.B) {
	for _, size := range []int{0, 1, 2, 4} {
		b.Run(fmt.Sprintf("pool_size=%d", size), func(b *testing.B) {
			_, l, url := builtinGateway(b, size)
			if size > 0 {
				require.True(b, l.WaitPool(b.Context(), size))
			}
			tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{"X-Test-User": "alice"}}}
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			reportSessionStarts(b, c, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			hits, misses := l.PoolStats()
			if hits+misses > 0 {
				b.ReportMetric(float64(hits)/float64(hits+misses), "pool-hits")
			}
		})
	}
}
