package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is a tool call the benchmark makes: a name and its arguments.
type Tool struct {
	Label string          `json:"label"` // short name for tables: "trivial", "realistic"
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args"`
}

// call makes one tools/call and turns a tool error into an error, so that a
// call that "answered" with isError is never counted as a success.
func call(ctx context.Context, s *session, tool Tool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: tool.Args})
	if err != nil {
		return err
	}
	if res.IsError {
		msg := "tool error"
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		return fmt.Errorf("mcpbench: %s answered isError: %.200s", tool.Name, msg)
	}
	return nil
}

// LoadResult is one closed-loop run: Sessions sessions, each calling Tool
// again as soon as its previous call is answered, for Duration.
type LoadResult struct {
	Tool        string        `json:"tool"`
	Sessions    int           `json:"sessions"`
	Duration    time.Duration `json:"duration_ns"`
	Calls       int           `json:"calls"`
	Errors      int           `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
	CallsPerSec float64       `json:"calls_per_sec"`
	Latency     Summary       `json:"latency"`
	// ServerCPU and ClientCPU are the CPU time the system (server and
	// workers) and the harness spent per measured call. On a shared machine
	// CPU per call moves much less than latency does.
	ServerCPU time.Duration `json:"server_cpu_per_call_ns"`
	ClientCPU time.Duration `json:"client_cpu_per_call_ns"`
}

// StartResult is session start: connect, initialize, initialized, and the
// first tools/call answered, one session after another.
type StartResult struct {
	Count      int     `json:"count"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Latency    Summary `json:"latency"`
}

// IdleResult is the memory cost of idle sessions.
type IdleResult struct {
	Sessions      int    `json:"sessions"`
	Opened        int    `json:"opened"`
	FirstError    string `json:"first_error,omitempty"`
	Before        Memory `json:"before"`
	After         Memory `json:"after"`
	PerSessionRSS int64  `json:"per_session_rss_bytes"`
	PerSessionPSS int64  `json:"per_session_pss_bytes"`
}

// HoldResult is many sessions held open at once.
type HoldResult struct {
	Sessions   int           `json:"sessions"`
	Users      int           `json:"users"` // distinct users the sessions act as
	Opened     int           `json:"opened"`
	Answered   int           `json:"answered"`
	FirstError string        `json:"first_error,omitempty"`
	OpenTime   time.Duration `json:"open_time_ns"`
	Memory     Memory        `json:"memory"`
	Call       Summary       `json:"call"` // one call at a time, round robin over the held sessions
	CallErrors int           `json:"call_errors"`
	// IdleCPU is the CPU the system spends with every session held and no
	// call in flight, in cores (1.0 is one CPU busy).
	IdleCPU float64 `json:"idle_cpu_cores"`
}

// errOnce keeps the first of many errors, for the report.
type errOnce struct {
	mu  sync.Mutex
	err error
	n   atomic.Int64
}

func (e *errOnce) add(err error) {
	e.n.Add(1)
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

// String is the first error, or "" when there was none.
func (e *errOnce) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// bench runs the phases against one target.
type bench struct {
	cfg     Config
	t       target
	trivial Tool
	procfs  ProcFS // default /proc
	// profile, when set, starts recording a CPU profile of the system's
	// pids before a closed loop and returns the function that ends it.
	profile func(tool Tool, sessions int, pids []int) (stop func())
}

// proc is the proc file system the bench reads.
func (b *bench) proc() ProcFS {
	if b.procfs.Root == "" {
		return ProcFS{Root: "/proc"}
	}
	return b.procfs
}

// memory is the resident memory of everything the system runs.
func (b *bench) memory() (Memory, error) {
	pids, err := b.t.pids()
	if err != nil {
		return Memory{}, err
	}
	return b.proc().Memory(pids)
}

// cpuSample is the CPU time used so far by the system's processes and by
// the harness.
type cpuSample struct {
	server, client time.Duration
}

func (b *bench) cpu(pids []int) (cpuSample, error) {
	server, err := b.proc().CPUTime(pids)
	if err != nil {
		return cpuSample{}, err
	}
	client, err := b.proc().CPUTime([]int{os.Getpid()})
	return cpuSample{server: server, client: client}, err
}

// An opener opens the i-th client of a phase: a session, or (MCP
// 2026-07-28) a stateless client.
type opener func(ctx context.Context, i int) (*session, error)

// openSession is the opener of every phase but the stateless one: a new
// session of the system's one user.
func (b *bench) openSession(ctx context.Context, _ int) (*session, error) { return b.t.open(ctx) }

// openAnswered opens a session and makes its first call of the trivial
// tool: a session counts as started only once a call is answered.
func (b *bench) openAnswered(ctx context.Context, open opener, i int) (*session, error) {
	octx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	s, err := open(octx, i)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("first call: %w", err)
	}
	return s, nil
}

// openMany opens n sessions, par at a time; each answers one call of the
// trivial tool before it counts as open. Sessions that fail are not
// returned; the first error is.
func (b *bench) openMany(ctx context.Context, n, par int, open opener) ([]*session, *errOnce) {
	out := make([]*session, n)
	var errs errOnce
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(par, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				s, err := b.openAnswered(ctx, open, i)
				if err != nil {
					errs.add(err)
					continue
				}
				out[i] = s
			}
		})
	}
	wg.Wait()
	live := out[:0]
	for _, s := range out {
		if s != nil {
			live = append(live, s)
		}
	}
	return live, &errs
}

// closeAll closes sessions, par at a time: closing a stdio worker waits for
// it to exit.
func closeAll(sessions []*session, par int) {
	ch := make(chan *session)
	var wg sync.WaitGroup
	for range max(1, min(par, len(sessions))) {
		wg.Go(func() {
			for s := range ch {
				_ = s.Close()
			}
		})
	}
	for _, s := range sessions {
		ch <- s
	}
	close(ch)
	wg.Wait()
}
