package gateway

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/worker"
)

// benchGateway serves the built-in worker on a scratch SQLite database,
// its sessions shared or not, with poolSize pre-started workers.
func benchGateway(b *testing.B, shared bool, poolSize int) (*Gateway, *worker.Launcher, string) {
	b.Helper()
	safe, err := tools.SafeToolNames(nil)
	require.NoError(b, err)
	l, err := worker.NewLauncher([]string{builtinWorker}, worker.LauncherOptions{
		Env:      dbtest.Config(b, db.SQLite).Environ(),
		PoolSize: poolSize, IdentityOnStdin: true, StopGrace: 2 * time.Second, Logger: testLogger(b),
	})
	require.NoError(b, err)
	g, url := serveBench(b, l, Options{Logger: testLogger(b), SafeTools: safe, SharedSessions: shared,
		MaxSessions: 4096, MaxSessionsPerUser: 1024, MaxSessionsPerWorker: 1024, WorkerStartTimeout: time.Minute})
	if poolSize > 0 {
		l.StartPool()
		require.True(b, l.WaitPool(b.Context(), poolSize))
	}
	return g, l, url
}

func serveBench(b *testing.B, l *worker.Launcher, opts Options) (*Gateway, string) {
	g, err := New(l, opts)
	require.NoError(b, err)
	srv := testPrincipalServer(g)
	b.Cleanup(func() {
		srv.Close()
		ctx, cancel := stopContext()
		defer cancel()
		_ = g.Close(ctx)
	})
	return g, srv.URL
}

// BenchmarkSharedSessionStart measures what a client waits for a new
// 2025-11-25 session of the built-in worker (initialize and a first
// status call, through a real gateway with the go-sdk client, one session
// after another; its end outside the timing), three ways: a worker process
// of its own started cold (bare), one claimed from the pool at its
// default size (pooled), and a session of a user whose worker already
// runs (shared: the worker is held by another session of the user).
func BenchmarkSharedSessionStart(b *testing.B) {
	for _, tc := range []struct {
		name   string
		shared bool
		pool   int
	}{{"bare", false, 0}, {"pooled", false, worker.DefaultPoolSize}, {"shared", true, 0}} {
		b.Run(tc.name, func(b *testing.B) {
			_, _, url := benchGateway(b, tc.shared, tc.pool)
			tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{"X-Test-User": "alice"}}}
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
			if tc.shared {
				held, err := c.Connect(b.Context(), tr, opts) // the user's worker, running
				require.NoError(b, err)
				b.Cleanup(func() { held.Close() })
			}
			reportSessionStarts(b, c, tr, opts)
		})
	}
}

// BenchmarkHeldSessions holds 64 idle 2025-11-25 sessions of 4 users (each
// having answered one status call) and reports the workers' memory per
// held session: PSS summed over the worker processes (Linux
// /proc/<pid>/smaps_rollup), shared and one process per session. The
// gateway's own memory is not counted (it runs in the test).
func BenchmarkHeldSessions(b *testing.B) {
	const sessions, users = 64, 4
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%t", shared), func(b *testing.B) {
			if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
				b.Skip("no /proc/<pid>/smaps_rollup here")
			}
			for range b.N {
				g, _, url := benchGateway(b, shared, 0)
				c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
				held := make([]*mcp.ClientSession, 0, sessions)
				for i := range sessions {
					tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
						HTTPClient: &http.Client{Transport: headers{"X-Test-User": fmt.Sprintf("u%d", i%users)}}}
					cs, err := c.Connect(b.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
					require.NoError(b, err)
					res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "status"})
					require.NoError(b, err)
					require.False(b, res.IsError)
					held = append(held, cs)
				}
				pids := map[int]bool{}
				g.mu.Lock()
				for _, s := range g.bound {
					if s.gen == sessionGen {
						pids[s.worker().Pid()] = true
					}
				}
				g.mu.Unlock()
				var pss int64
				for pid := range pids {
					pss += pssOf(b, pid)
				}
				b.ReportMetric(float64(len(pids)), "processes")
				b.ReportMetric(float64(pss)/float64(sessions)/(1<<20), "PSS-MiB/session")
				for _, cs := range held {
					cs.Close()
				}
			}
		})
	}
}

// pssOf is the proportional set size of process pid, in bytes.
func pssOf(b *testing.B, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	require.NoError(b, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatalf("no Pss in /proc/%d/smaps_rollup", pid)
	return 0
}

// reportSessionStarts times b.N sessions of c over tr, one after another,
// each from its connect to its first tools/call (status) answered, its
// end outside the timing, and reports the median as p50-ms.
func reportSessionStarts(b *testing.B, c *mcp.Client, tr mcp.Transport, opts *mcp.ClientSessionOptions) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cs, err := c.Connect(b.Context(), tr, opts)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "status"}); err != nil || res.IsError {
			b.Fatalf("status: %v %v", err, res)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}
