package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/tools/db/sqlite"
)

// The test binary doubles as the stand-in worker, so the floor's stdio path
// runs against a real subprocess without building anything, and as a
// stand-in gateway (fake-gateway ADDR) for the combined and local pairs.
func TestMain(m *testing.M) {
	if os.Getenv("MCPBENCH_TEST_HELPER") == "1" && len(os.Args) == 3 && os.Args[1] == "fake-gateway" {
		if err := runFakeGateway(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("MCPBENCH_TEST_STDIO_SERVER") == "1" {
		if err := runStdioServer(context.Background(), nil); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testTargets(t *testing.T) map[string]target {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	srv := newToolServer("test")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return map[string]target{
		"http": &httpTarget{client: client, endpoint: hs.URL, procfs: ProcFS{Root: "/proc"}},
		"stdio": &stdioTarget{client: client, argv: []string{os.Args[0]},
			env: append(os.Environ(), "MCPBENCH_TEST_STDIO_SERVER=1"), stderr: os.Stderr, procfs: ProcFS{Root: "/proc"}},
	}
}

func TestPhases(t *testing.T) {
	// No warmup: every call a session starts in the window is measured, so each
	// session counts at least one however slow a loaded machine makes it.
	cfg := Config{Duration: 200 * time.Millisecond, CallTimeout: 10 * time.Second}
	echo := Tool{Label: "trivial", Name: "echo", Args: json.RawMessage(`{"text":"hi"}`)}
	for name, tg := range testTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := &bench{cfg: cfg, t: tg, trivial: echo}

			lr := b.load(ctx, echo, 3)
			if lr.Errors != 0 || lr.Calls == 0 || lr.Latency.Count != lr.Calls {
				t.Errorf("load: got %d calls, %d errors (%s), want calls and no errors", lr.Calls, lr.Errors, lr.FirstError)
			}
			if lr.ClientCPU <= 0 || (name == "stdio" && lr.ServerCPU <= 0) {
				t.Errorf("load: got CPU per call server %v client %v, want both measured", lr.ServerCPU, lr.ClientCPU)
			}

			run := b.startLoad(ctx, echo, 2)
			b.round(ctx, run, 0, 50*time.Millisecond)
			b.round(ctx, run, 0, 50*time.Millisecond)
			if lr := b.finishLoad(run); lr.Duration != 100*time.Millisecond || lr.Calls == 0 || lr.Errors != 0 {
				t.Errorf("two rounds: got duration %v, %d calls, %d errors, want 100ms, calls, none", lr.Duration, lr.Calls, lr.Errors)
			}

			bad := b.load(ctx, Tool{Label: "bad", Name: "no-such-tool"}, 2)
			if bad.Errors != 2 || bad.Calls != 0 {
				t.Errorf("load of an unknown tool: got %d calls, %d errors, want 0 and 2", bad.Calls, bad.Errors)
			}

			st := b.starts(ctx, 3)
			if st.Errors != 0 || st.Latency.Count != 3 {
				t.Errorf("starts: got %d measured, %d errors (%s), want 3 and 0", st.Latency.Count, st.Errors, st.FirstError)
			}

			h, err := b.hold(ctx, 5)
			if err != nil {
				t.Fatal(err)
			}
			if h.Opened != 5 || h.Answered != 5 || h.Call.Count == 0 {
				t.Errorf("hold: got %d opened, %d answered, %d calls (%s), want 5, 5, some", h.Opened, h.Answered, h.Call.Count, h.FirstError)
			}
		})
	}
}

func TestIdleCountsWorkers(t *testing.T) {
	tg := testTargets(t)["stdio"]
	b := &bench{cfg: Config{CallTimeout: 10 * time.Second}, t: tg,
		trivial: Tool{Label: "trivial", Name: "echo", Args: json.RawMessage(`{"text":"x"}`)}}
	res, err := b.idle(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Opened != 3 || res.After.Procs != 3 || res.Before.Procs != 0 || res.PerSessionRSS <= 0 {
		t.Errorf("got %+v, want 3 workers counted and memory per session", res)
	}
	if m, _ := b.memory(); m.Procs != 0 {
		t.Errorf("after the sessions closed: got %d workers counted, want 0", m.Procs)
	}
}

// The go-sdk handler asks for a server on every request; a per-session
// server (and database session) must still be made once per session.
func TestPerSessionServers(t *testing.T) {
	var made atomic.Int64
	get := perSessionServers(func() (*mcp.Server, error) {
		made.Add(1)
		return newToolServer("test"), nil
	}, slog.New(slog.DiscardHandler))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(get, nil))
	t.Cleanup(hs.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	b := &bench{cfg: Config{Duration: 100 * time.Millisecond, CallTimeout: 10 * time.Second},
		t: &httpTarget{client: client, endpoint: hs.URL}, trivial: Tool{Label: "trivial", Name: "echo", Args: json.RawMessage(`{"text":"x"}`)}}
	lr := b.load(context.Background(), b.trivial, 3)
	if lr.Errors != 0 || lr.Calls == 0 {
		t.Fatalf("got %d calls, %d errors (%s)", lr.Calls, lr.Errors, lr.FirstError)
	}
	if got := made.Load(); got != 3 {
		t.Errorf("got %d servers made for 3 sessions and %d calls, want 3", got, lr.Calls)
	}
}

func TestBuiltinServerOverSQLite(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "demo.db")
	if _, err := sqlite.Ensure(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	get := perSessionServers(func() (*mcp.Server, error) {
		return newBuiltinServer(context.Background(), dsn, "bench", slog.New(slog.DiscardHandler))
	}, slog.New(slog.DiscardHandler))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(get, nil))
	t.Cleanup(hs.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	b := &bench{cfg: Config{Duration: 100 * time.Millisecond, CallTimeout: 10 * time.Second},
		t: &httpTarget{client: client, endpoint: hs.URL}, trivial: Tool{Label: "trivial", Name: "status", Args: json.RawMessage(`{}`)}}
	q := Tool{Label: "realistic", Name: "query", Args: json.RawMessage(`{"sql":"SELECT * FROM order_totals ORDER BY order_id"}`)}
	for _, tool := range []Tool{b.trivial, q} {
		if lr := b.load(context.Background(), tool, 2); lr.Errors != 0 || lr.Calls == 0 {
			t.Errorf("%s: got %d calls, %d errors (%s)", tool.Name, lr.Calls, lr.Errors, lr.FirstError)
		}
	}
}

// heldCounter wraps a target and counts its sessions opened and still open.
type heldCounter struct {
	target
	opened, held *atomic.Int64
}

func (c heldCounter) open(ctx context.Context) (*session, error) {
	s, err := c.target.open(ctx)
	if err != nil {
		return nil, err
	}
	c.opened.Add(1)
	c.held.Add(1)
	release := s.release
	s.release = func() {
		c.held.Add(-1)
		if release != nil {
			release()
		}
	}
	return s, nil
}

// The held phase opens the sessions of every system first, holds them all
// at once, and takes the rounds of calls in turn: the calls the servers see
// switch from one system to the other at every round, and the sessions of
// both are open together. (Run one system after another, the calls would
// switch once and at most one system's sessions would be open.)
func TestHoldInterleaved(t *testing.T) {
	const n, rounds = 3, 3
	var mu sync.Mutex
	var calls []string // the system of every call, in the order served
	var open, maxOpen atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench-test", Version: "0"}, nil)
	cfg := Config{Hold: n, Rounds: rounds, Duration: 150 * time.Millisecond, CallTimeout: 10 * time.Second}
	echo := Tool{Label: "trivial", Name: "echo", Args: json.RawMessage(`{"text":"hi"}`)}
	var systems []live
	opened := map[string]*atomic.Int64{}
	for _, name := range []string{"a", "b"} {
		srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "0"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, echoResult, error) {
			mu.Lock()
			calls = append(calls, name)
			mu.Unlock()
			maxOpen.Store(max(maxOpen.Load(), open.Load()))
			return nil, echoResult(in), nil
		})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		t.Cleanup(hs.Close)
		opened[name] = new(atomic.Int64)
		tg := heldCounter{target: &httpTarget{client: client, endpoint: hs.URL}, opened: opened[name], held: &open}
		systems = append(systems, live{res: &SystemResult{Name: name}, b: &bench{cfg: cfg, t: tg, trivial: echo}})
	}
	runHold(context.Background(), cfg, systems, io.Discard)

	for _, s := range systems {
		h := s.res.Hold
		if h == nil || h.Opened != n || h.Answered != n || h.Call.Count == 0 || h.CallErrors != 0 || s.res.Error != "" {
			t.Fatalf("%s: got %+v (%s), want %d opened and answered, calls, no errors", s.res.Name, h, s.res.Error, n)
		}
		if got := opened[s.res.Name].Load(); got != n {
			t.Errorf("%s: got %d sessions opened, want %d (opened once, held through every round)", s.res.Name, got, n)
		}
	}
	if got := maxOpen.Load(); got != 2*n {
		t.Errorf("got at most %d sessions open at once, want %d: both systems' held together", got, 2*n)
	}
	if got := open.Load(); got != 0 {
		t.Errorf("got %d sessions still open after the phase, want 0", got)
	}
	switches := 0
	for i := 1; i < len(calls); i++ {
		if calls[i] != calls[i-1] {
			switches++
		}
	}
	// a opens, b opens, then a b a b a b: 2*rounds switches.
	if switches < 2*rounds {
		t.Errorf("got the calls switching system %d times, want %d (rounds taken in turn)", switches, 2*rounds)
	}
}
