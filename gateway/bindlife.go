package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/worker"
)

// stopBindings is the one stop path: it stops the workers of list
// concurrently and waits. reason is why, for the metrics (Exit*); why is
// what the worker's requests in flight are told.
func (g *Gateway) stopBindings(ctx context.Context, list []*binding, reason, why string) error {
	// Sessions first: one hosted in a per-user worker then ends as a
	// session, not with its worker.
	sessions, workers := splitSessions(list)
	return errors.Join(g.stopEach(ctx, sessions, reason, why), g.stopEach(ctx, workers, reason, why))
}

// stopEach stops the workers of list concurrently and waits.
func (g *Gateway) stopEach(ctx context.Context, list []*binding, reason, why string) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, b := range list {
		wg.Go(func() {
			errs[i] = g.stopTaken(ctx, b, g.removeKeepDB(b), reason, why)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopTaken stops b's worker once b is out of the table; owed says the
// caller took it out and so owes its database share, which comes back
// once the worker has exited (Close waits for that, up to the grace and
// the kill): until then its connection may still be open.
func (g *Gateway) stopTaken(ctx context.Context, b *binding, owed bool, reason, why string) error {
	b.stop.set(reason)
	b.subs.closeAll()
	err := b.worker().Close(ctx, worker.KindSessionEnded, why+b.gen.stopAdvice)
	if owed {
		g.mu.Lock()
		g.dbGiveLocked(b.key.principal(), b.db)
		g.mu.Unlock()
	}
	return err
}

// stopCtx bounds one stop: the launcher's grace, the kill and some.
func (g *Gateway) stopCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
}

// startCtx bounds one worker's start: WorkerStartTimeout, or until the
// gateway shuts down.
func (g *Gateway) startCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.WorkerStartTimeout)
	go func() {
		select {
		case <-g.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// liveBindings returns the bindings of kind gen (nil: every kind) whose
// start is over and that have a process.
func (g *Gateway) liveBindings(gen *generation) []*binding {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := make([]*binding, 0, len(g.bound))
	for _, b := range g.bound {
		if (gen == nil || b.gen == gen) && b.started() && !b.failed {
			list = append(list, b)
		}
	}
	return list
}

// reaper stops bindings idle for longer than SessionIdleTimeout.
func (g *Gateway) reaper() {
	defer close(g.reaperDone)
	every := min(g.opts.SessionIdleTimeout/4, time.Minute)
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-g.shutdown:
			return
		case <-t.C:
			g.reapIdle()
		}
	}
}

// reapIdle stops every binding that serves no HTTP request and has been
// idle for longer than SessionIdleTimeout by Options.Now.
//
// A request still in flight in a session's worker does not keep the
// session whose client has left: no one is waiting for its answer, and a
// worker that never answers would otherwise hold the session, and its
// process, forever. A client waiting on its answer keeps its request, and
// so the session, busy; with write deadlines, one that stops reading does
// not. A per-user worker, shared by the user's clients, is stopped only
// once no request is in flight in it; one that holds a credential due for
// renewal (credentials.go) is stopped then too, however recently used.
func (g *Gateway) reapIdle() {
	now := g.opts.Now().UnixNano()
	limit := g.opts.SessionIdleTimeout.Nanoseconds()
	idle := map[*generation][]*binding{}
	var due []*binding // per-user workers holding a credential due for renewal
	g.mu.Lock()
	for _, b := range g.bound {
		if !b.started() || b.failed || b.busy.Load() != 0 || b.sessions.Load() != 0 {
			continue
		}
		if b.gen == userGen && b.credsDue(time.Unix(0, now)) && b.requestsInFlight() == 0 {
			due = append(due, b)
			continue
		}
		if now-b.lastUsed.Load() <= limit {
			continue
		}
		if b.gen.reapBusy || b.requestsInFlight() == 0 {
			idle[b.gen] = append(idle[b.gen], b)
		}
	}
	g.mu.Unlock()
	ctx, cancel := g.stopCtx()
	defer cancel()
	if len(due) > 0 {
		// An idle worker never holds an expired credential for long.
		if err := g.stopBindings(ctx, due, ExitReplaced, "gateway: the worker's downstream credential expires; send the request again"); err != nil {
			g.log.Error("gateway: stopping workers whose credentials are due", "err", err)
		}
	}
	for gen, list := range idle {
		for _, b := range list {
			b.log.Info(gen.idleLog, "idle_timeout", g.opts.SessionIdleTimeout)
		}
		if err := g.stopBindings(ctx, list, ExitIdle, gen.idleWhy); err != nil {
			g.log.Error("gateway: reaping", "err", err)
		}
	}
}
