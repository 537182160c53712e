package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A pool keeps LauncherOptions.PoolSize workers started ahead of need, each
// waiting for its identity on stdin (workerproto.EnvPrestarted), so that a session
// pays for a pipe write rather than for a worker's exec and start. A
// claimed worker is the session's alone and never comes back; the pool
// starts another in the background.
type pool struct {
	l    *Launcher
	size int
	log  *slog.Logger
	// after is time.After; tests replace it to see and drive the backoff.
	after func(time.Duration) <-chan time.Time

	mu       sync.Mutex
	idle     []*pooled // oldest first: the likeliest to have finished its start
	starting int       // processes being started
	fails    int       // consecutive workers that did not start or died unclaimed
	running  bool      // run has been started
	stopped  bool
	changed  *sync.Cond // on mu: broadcast when idle or stopped changes

	hits, misses atomic.Int64 // Starts that found a worker ready, and that did not
	starts       atomic.Int64 // processes the pool has started

	wake     chan struct{} // one pending wake-up for run
	stop     chan struct{} // closed by close
	done     chan struct{} // closed when run returns
	starters sync.WaitGroup
	watchers sync.WaitGroup
}

// pooled is one worker waiting in the pool.
type pooled struct {
	proc  *Process
	taken chan struct{} // closed when claimed or stopped by the pool
}

// Pool backoff: after a pre-started worker fails, the pool starts one at a
// time, each after poolBackoff(fails), so that a worker that cannot start
// (a broken database setting, a missing file) costs a fork every few
// seconds rather than a fork loop; sessions meanwhile start cold, as they
// would without a pool, and fail with the worker's own error.
const (
	poolBackoffMin = 100 * time.Millisecond
	poolBackoffMax = 30 * time.Second
)

func poolBackoff(fails int) time.Duration {
	if fails <= 0 {
		return 0
	}
	return min(poolBackoffMin<<min(fails-1, 16), poolBackoffMax)
}

func newPool(l *Launcher, size int, log *slog.Logger) *pool {
	p := &pool{l: l, size: size, log: log, after: time.After,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.changed = sync.NewCond(&p.mu)
	return p
}

// start begins filling the pool; it is idempotent, and does nothing once
// the pool is closed.
func (p *pool) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.stopped {
		return
	}
	p.running = true
	go p.run()
}

// signal wakes run without blocking.
func (p *pool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run keeps the pool full until close: it starts what is missing, all at
// once while workers start fine (so that sessions started one after
// another keep finding one), one at a time after a backoff once one has
// failed.
func (p *pool) run() {
	defer close(p.done)
	for {
		p.mu.Lock()
		need, fails := p.size-len(p.idle)-p.starting, p.fails
		p.mu.Unlock()
		if need > 0 && fails > 0 {
			select {
			case <-p.after(poolBackoff(fails)):
			case <-p.stop:
				return
			}
			p.mu.Lock()
			need = min(1, p.size-len(p.idle)-p.starting) // one at a time while they fail
			p.mu.Unlock()
		}
		if need > 0 {
			p.mu.Lock()
			if p.stopped {
				p.mu.Unlock()
				return
			}
			p.starting += need
			p.starts.Add(int64(need))
			for range need {
				p.starters.Go(p.startOne)
			}
			p.mu.Unlock()
		}
		select {
		case <-p.wake:
		case <-p.stop:
			return
		}
	}
}

// startOne starts one worker into the pool.
func (p *pool) startOne() {
	proc, err := StartProcess(p.l.processConfig(p.l.pooledEnv(), p.log))
	p.mu.Lock()
	p.starting--
	stopped := p.stopped
	switch {
	case err != nil:
		p.fails++
		p.log.Warn("worker: starting a pre-started worker failed; sessions start their own meanwhile", "err", err, "retry_in", poolBackoff(p.fails))
	case !stopped:
		e := &pooled{proc: proc, taken: make(chan struct{})}
		p.idle = append(p.idle, e)
		p.watchers.Go(func() { p.watch(e) })
		p.changed.Broadcast()
	}
	p.mu.Unlock()
	if err == nil && stopped {
		p.stopProc(proc)
	}
	p.signal()
}

// watch notices a pooled worker that exits before it is claimed: it leaves
// the pool, counts as a failure (so the backoff holds a failing command
// back) and is replaced.
func (p *pool) watch(e *pooled) {
	select {
	case <-e.proc.Done():
	case <-e.taken:
		return
	}
	p.mu.Lock()
	i := slices.Index(p.idle, e)
	if i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
		p.fails++
		p.changed.Broadcast()
	}
	fails := p.fails
	p.mu.Unlock()
	if i >= 0 {
		p.log.Warn("worker: a pre-started worker exited before a session claimed it; replacing it",
			"pid", e.proc.Pid(), "exit", ExitDescription(e.proc.ExitErr()), "retry_in", poolBackoff(fails))
		p.signal()
	}
}

// claim takes the oldest live worker out of the pool, or returns nil when
// there is none. The caller owns it: no one else can write to it.
func (p *pool) claim() *Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.signal() // refill, or notice a run that is behind
	for len(p.idle) > 0 {
		e := p.idle[0]
		p.idle = slices.Delete(p.idle, 0, 1)
		close(e.taken)
		select {
		case <-e.proc.Done():
			p.fails++ // died waiting; watch saw it too late to count it
			continue
		default:
		}
		return e.proc
	}
	return nil
}

// wait waits until n workers are ready in the pool, or it is stopped
// (false), or ctx ends (false).
func (p *pool) wait(ctx context.Context, n int) bool {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.changed.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) < n && !p.stopped && ctx.Err() == nil {
		p.changed.Wait()
	}
	return len(p.idle) >= n
}

// claimed says a claimed worker took its identity: the command works, so a
// past failure no longer holds refills back.
func (p *pool) claimed() {
	p.mu.Lock()
	p.fails = 0
	p.mu.Unlock()
}

// close stops filling the pool and stops every worker in it, waiting for
// them, bounded by ctx. It is idempotent.
func (p *pool) close(ctx context.Context) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	p.changed.Broadcast()
	running := p.running
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	close(p.stop)
	if running {
		<-p.done
	}
	p.starters.Wait() // each stops what it started once stopped is set
	errs := make([]error, len(idle))
	var wg sync.WaitGroup
	for i, e := range idle {
		close(e.taken)
		wg.Go(func() { errs[i] = e.proc.Stop(ctx, p.l.opts.StopGrace) })
	}
	wg.Wait()
	p.watchers.Wait()
	return errors.Join(errs...)
}

// stopProc stops a pooled worker nobody will claim: closing its stdin is
// its signal to exit.
func (p *pool) stopProc(proc *Process) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*p.l.opts.StopGrace)
	defer cancel()
	_ = proc.Stop(ctx, p.l.opts.StopGrace)
}
