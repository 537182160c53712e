package tools_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWorkerCall measures one query call in the built-in worker, in
// process: in a session worker (the session's transaction), in a per-user
// worker without a handle (a transaction of its own per call: a pooled
// connection's ROLLBACK, BEGIN and mark first), and with a handle. 1 client
// calls in sequence; in a per-user worker, 64 also call at once (a user's
// stateless clients). It reports the median latency beside ns/op.
func BenchmarkWorkerCall(b *testing.B) {
	cfg := dbtest.Config(b, db.SQLite)
	open := func(ctx context.Context) (*db.Session, error) {
		return db.Open(ctx, sqlite.Engine{}, cfg, "ada", false)
	}
	modes := []struct {
		name   string
		server func(b *testing.B) (*mcp.Server, string)
	}{
		{"session", func(b *testing.B) (*mcp.Server, string) {
			s, err := open(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			srv, err := tools.NewServer(tools.Options{User: "ada", DB: s})
			if err != nil {
				b.Fatal(err)
			}
			return srv, ""
		}},
		{"per-user-no-handle", func(b *testing.B) (*mcp.Server, string) { return perUserServer(b, open), "" }},
		{"per-user-handle", func(b *testing.B) (*mcp.Server, string) { return perUserServer(b, open), "begin" }},
	}
	for _, m := range modes {
		for _, clients := range []int{1, 64} {
			if m.name == "session" && clients > 1 {
				continue // a session has one client; 64 sessions are 64 workers
			}
			b.Run(m.name+"/"+strconv.Itoa(clients)+"clients", func(b *testing.B) {
				srv, withHandle := m.server(b)
				sessions := make([]*mcp.ClientSession, clients)
				handles := make([]string, clients)
				for i := range sessions {
					cs := connectInMemory(b, srv)
					sessions[i] = cs
					if withHandle != "" {
						res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "begin"})
						if err != nil || res.IsError {
							b.Fatalf("begin: %v %v", err, res)
						}
						handles[i] = res.StructuredContent.(map[string]any)["transaction"].(string)
					}
				}
				var mu sync.Mutex
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				var wg sync.WaitGroup
				per := (b.N + clients - 1) / clients
				for i, cs := range sessions {
					args := map[string]any{"sql": customers}
					if handles[i] != "" {
						args["transaction"] = handles[i]
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							start := time.Now()
							res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "query", Arguments: args})
							d := time.Since(start)
							if err != nil || res.IsError {
								b.Errorf("query: %v %v", err, res)
								return
							}
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				}
			})
		}
	}
}

func perUserServer(b *testing.B, open func(context.Context) (*db.Session, error)) *mcp.Server {
	txs, err := tools.NewTransactions(b.Context(), tools.TransactionOptions{Instance: "u-bench", Open: open, Max: 64})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { txs.Close() })
	srv, err := tools.NewServer(tools.Options{User: "ada", SessionID: "u-bench", Transactions: txs})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}
