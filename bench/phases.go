package main

import (
	"context"
	"encoding/json"
	"errors"
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

// loadRun is one closed loop on one system, measured in rounds: the
// runner interleaves the rounds of all systems, so that a burst of
// background load on the shared machine lands on every system alike.
type loadRun struct {
	tool     Tool
	res      LoadResult
	sessions []*session
	pids     []int
	cpuErr   error
	lat      []Latencies
	calls    int // every answered call, warm-ups included
	server   time.Duration
	client   time.Duration
	errs     errOnce
	rounds   int
	stop     func() // ends the profile, if any
}

// startLoad opens the n sessions of a closed loop. When some fail to open
// the run is over before it starts, with the error in its result.
func (b *bench) startLoad(ctx context.Context, tool Tool, n int) *loadRun {
	return b.startLoadWith(ctx, tool, n, b.openSession, tool)
}

// startLoadWith is startLoad with the clients that open opens; a profile,
// if any, is named after profiled's label.
func (b *bench) startLoadWith(ctx context.Context, tool Tool, n int, open opener, profiled Tool) *loadRun {
	lr := &loadRun{tool: tool, res: LoadResult{Tool: tool.Label, Sessions: n}, lat: make([]Latencies, n)}
	sessions, errs := b.openMany(ctx, n, 16, open)
	lr.sessions = sessions
	if len(sessions) < n {
		lr.res.Errors = n - len(sessions)
		lr.res.FirstError = errs.String()
		return lr
	}
	lr.pids, lr.cpuErr = b.t.pids()
	if b.profile != nil && lr.cpuErr == nil {
		lr.stop = b.profile(profiled, n, lr.pids)
	}
	return lr
}

// ok tells whether the run's sessions are open and none has failed.
func (lr *loadRun) ok() bool {
	return len(lr.sessions) == lr.res.Sessions && lr.errs.n.Load() == 0
}

// round runs the closed loop for warmup plus d: every session calls again
// as soon as its previous call is answered; calls that start during the
// warm-up are not recorded. CPU is read while the sessions are quiet, just
// before the loop and just after every call has returned: reading /proc for
// tens of workers while 64 goroutines compete for the harness's CPUs takes
// seconds, which would smear a reading taken mid-run. Between the two
// readings the load runs without a pause, so CPU per call is the difference
// over every call made, warm-up included.
func (b *bench) round(ctx context.Context, lr *loadRun, warmup, d time.Duration) {
	if !lr.ok() {
		return
	}
	var cpu0, cpu1 cpuSample
	if lr.cpuErr == nil {
		cpu0, lr.cpuErr = b.cpu(lr.pids)
	}
	measureFrom := time.Now().Add(warmup)
	measureTo := measureFrom.Add(d)
	total := make([]int, len(lr.sessions))
	var wg sync.WaitGroup
	for i, s := range lr.sessions {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(measureTo) || ctx.Err() != nil {
					break
				}
				err := call(ctx, s, lr.tool, b.cfg.CallTimeout)
				d := time.Since(t0)
				if err != nil {
					lr.errs.add(err)
					// A broken session would spin; it has said what it had to.
					break
				}
				total[i]++
				if !t0.Before(measureFrom) {
					lr.lat[i] = append(lr.lat[i], d)
				}
			}
		})
	}
	wg.Wait()
	if lr.cpuErr == nil {
		cpu1, lr.cpuErr = b.cpu(lr.pids)
		lr.server += cpu1.server - cpu0.server
		lr.client += cpu1.client - cpu0.client
	}
	for _, c := range total {
		lr.calls += c
	}
	lr.res.Duration += d
	lr.rounds++
}

// finishLoad closes the run's sessions and summarises its rounds.
func (b *bench) finishLoad(lr *loadRun) LoadResult {
	if lr.stop != nil {
		lr.stop()
	}
	closeAll(lr.sessions, 32)
	res := lr.res
	if res.Errors > 0 { // the sessions did not open
		return res
	}
	all := Merge(lr.lat...)
	res.Calls = len(all)
	res.Errors = int(lr.errs.n.Load())
	res.FirstError = lr.errs.String()
	res.Latency = Summarize(all)
	if res.Duration > 0 {
		res.CallsPerSec = float64(res.Calls) / res.Duration.Seconds()
	}
	if lr.cpuErr == nil && lr.calls > 0 {
		res.ServerCPU = lr.server / time.Duration(lr.calls)
		res.ClientCPU = lr.client / time.Duration(lr.calls)
	}
	return res
}

// load is one closed loop of n sessions on tool in a single round.
func (b *bench) load(ctx context.Context, tool Tool, n int) LoadResult {
	lr := b.startLoad(ctx, tool, n)
	b.round(ctx, lr, b.cfg.Warmup, b.cfg.Duration)
	return b.finishLoad(lr)
}

// starts measures session start, one at a time, count times.
func (b *bench) starts(ctx context.Context, count int) StartResult {
	res := StartResult{Count: count}
	var errs errOnce
	lat := make(Latencies, 0, count)
	for range count {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		s, err := b.openAnswered(ctx, b.openSession, 0)
		d := time.Since(t0)
		if err != nil {
			errs.add(err)
			continue
		}
		_ = s.Close()
		lat = append(lat, d)
	}
	res.Errors = int(errs.n.Load())
	res.FirstError = errs.String()
	res.Latency = Summarize(lat)
	return res
}

// idle measures what n idle sessions add to the system's memory.
func (b *bench) idle(ctx context.Context, n int) (IdleResult, error) {
	res := IdleResult{Sessions: n}
	before, err := b.memory()
	if err != nil {
		return res, err
	}
	sessions, errs := b.openMany(ctx, n, 8, b.openSession)
	defer closeAll(sessions, 32)
	res.Opened = len(sessions)
	res.FirstError = errs.String()
	// Let the sessions' background work (standalone SSE streams, worker
	// start-up allocations) finish before reading /proc; there is no event
	// to wait for in another process.
	select {
	case <-time.After(b.cfg.Settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	after, err := b.memory()
	if err != nil {
		return res, err
	}
	res.Before, res.After = before, after
	if res.Opened > 0 {
		res.PerSessionRSS = (after.RSS - before.RSS) / int64(res.Opened)
		res.PerSessionPSS = (after.PSS - before.PSS) / int64(res.Opened)
	}
	return res, nil
}

// hold opens n sessions at once, checks that every one answers while all are
// open, reads the memory, and measures calls one at a time meanwhile.
func (b *bench) hold(ctx context.Context, n int) (HoldResult, error) {
	res := HoldResult{Sessions: n}
	t0 := time.Now()
	sessions, errs := b.openMany(ctx, n, 16, b.openSession)
	res.OpenTime = time.Since(t0)
	defer closeAll(sessions, 32)
	res.Opened = len(sessions)
	res.FirstError = errs.String()
	if len(sessions) == 0 {
		return res, errors.New("mcpbench: no session opened")
	}
	// Every held session answers once more, now that all are open.
	var answered atomic.Int64
	var callErrs errOnce
	ch := make(chan *session)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for s := range ch {
				if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
					callErrs.add(err)
					continue
				}
				answered.Add(1)
			}
		})
	}
	for _, s := range sessions {
		ch <- s
	}
	close(ch)
	wg.Wait()
	res.Answered = int(answered.Load())
	if res.FirstError == "" {
		res.FirstError = callErrs.String()
	}
	mem, err := b.memory()
	if err != nil {
		return res, err
	}
	res.Memory = mem
	// What the held sessions cost while nobody calls: CPU over a quiet
	// window, in cores.
	if pids, err := b.t.pids(); err == nil {
		if c0, err := b.cpu(pids); err == nil {
			t0 := time.Now()
			select {
			case <-time.After(b.cfg.Settle):
			case <-ctx.Done():
				return res, ctx.Err()
			}
			if c1, err := b.cpu(pids); err == nil {
				res.IdleCPU = float64(c1.server-c0.server) / float64(time.Since(t0))
			}
		}
		if b.profile != nil {
			defer b.profile(Tool{Label: "held", Name: b.trivial.Name}, n, pids)()
		}
	}
	// Meanwhile: one call at a time, round robin over the held sessions.
	lat := make(Latencies, 0, 1024)
	var callErr errOnce
	end := time.Now().Add(b.cfg.Duration)
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		s := sessions[i%len(sessions)]
		c0 := time.Now()
		if err := call(ctx, s, b.trivial, b.cfg.CallTimeout); err != nil {
			callErr.add(err)
			continue
		}
		lat = append(lat, time.Since(c0))
	}
	res.Call = Summarize(lat)
	res.CallErrors = int(callErr.n.Load())
	if res.FirstError == "" {
		res.FirstError = callErr.String()
	}
	return res, nil
}
