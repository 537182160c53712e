package tools_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/dbtest"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchSession is a session worker's server on SQLite, in process, and a
// client connected to it in memory.
func benchSession(b *testing.B) *mcp.ClientSession {
	cfg := dbtest.Config(b, db.SQLite)
	s, err := db.Open(b.Context(), sqlite.Engine{}, cfg, "ada", false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	srv, err := tools.NewServer(tools.Options{User: "ada", SessionID: "s-bench", DB: s})
	if err != nil {
		b.Fatal(err)
	}
	return connectInMemory(b, srv)
}

// connectInMemory connects a client to srv over in-memory transports; both
// ends close when b ends.
func connectInMemory(b *testing.B, srv *mcp.Server) *mcp.ClientSession {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func benchCall(b *testing.B, name string, args map[string]any) {
	cs := benchSession(b)
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), p)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's CPU time, user and system: on a loaded machine
// a steadier figure than the wall clock's ns/op (client, server and the
// garbage collector all count).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStatus and BenchmarkQuery are the two tools of the gateway's
// benchmark (bench/), in a session worker on SQLite, in process: the
// worker's own cost per call, the client's included.
func BenchmarkStatus(b *testing.B) { benchCall(b, "status", map[string]any{}) }

func BenchmarkQuery(b *testing.B) {
	benchCall(b, "query", map[string]any{"sql": "SELECT * FROM order_totals ORDER BY order_id"})
}
