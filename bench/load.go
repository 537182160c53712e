package main

import (
	"context"
	"sync"
	"time"
)

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
	open, _ := b.sessionOpener()
	return b.startLoadWith(ctx, tool, n, open, tool)
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
