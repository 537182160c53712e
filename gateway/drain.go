package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Drain readies the gateway to stop without cutting anyone off. From its
// start Ready fails (so /readyz turns 503 and load balancers stop sending
// new clients) and a new session or per-user worker is refused with 503 and
// Retry-After; requests on existing sessions and per-user workers are
// still served. Drain returns once Options.DrainMin has passed (the load
// balancer has noticed) and no request is in flight, or with ctx's error
// when ctx ends first; either way it then ends the open SSE streams
// cleanly (sessions' GET streams, 2026-07-28 listen streams). Close,
// called next, stops the workers as usual.
func (g *Gateway) Drain(ctx context.Context) error {
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
	// No new session will claim a pre-started worker.
	if err := g.launcher.StopPool(ctx); err != nil {
		g.log.Warn("gateway: stopping the pre-started workers", "err", err)
	}
	g.log.Info("gateway: draining: refusing new sessions, waiting for the calls in flight", "in_flight", g.calls.count(), "min", g.opts.DrainMin)
	err := waitFor(ctx, g.opts.DrainMin)
	if err == nil {
		err = g.calls.wait(ctx)
	}
	if err != nil {
		g.log.Warn("gateway: drain ended before every call finished", "in_flight", g.calls.count(), "err", err)
		err = fmt.Errorf("gateway: drain: %w", err)
	} else {
		g.log.Info("gateway: drained: no call in flight")
	}
	// Sessions' GET streams end; 2026-07-28 subscriptions/listen streams
	// end with their graceful completion result.
	for _, b := range g.liveBindings(nil) {
		if b.gen == sessionGen {
			b.worker().EndListen()
		} else {
			b.subs.closeAll()
		}
	}
	return err
}

// waitFor waits d, or until ctx ends (its error then).
func waitFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Draining reports whether Drain or Close has begun.
func (g *Gateway) Draining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining || g.closing
}

// errNotReadyDraining is what Ready says while draining.
var errNotReadyDraining = fmt.Errorf("gateway: draining")

// Ready reports whether the gateway should be sent new clients: it is not
// draining and Options.Ready (issuer keys, worker command, database) passes.
// Options.Ready runs at most once per readyCacheFor, and never twice at
// once, so a flood of unauthenticated probes cannot turn into a flood of
// database connections.
func (g *Gateway) Ready(ctx context.Context) error {
	if g.Draining() {
		return errNotReadyDraining
	}
	if g.opts.Ready == nil {
		return nil
	}
	g.readyMu.Lock()
	defer g.readyMu.Unlock()
	now := g.opts.Now()
	if !g.readyAt.IsZero() && now.Sub(g.readyAt) < readyCacheFor {
		return g.readyErr
	}
	cctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
	defer cancel()
	err := g.opts.Ready(cctx)
	if (err == nil) != (g.readyErr == nil) || g.readyAt.IsZero() {
		if err != nil {
			g.log.Warn("gateway: not ready", "err", err)
		} else {
			g.log.Info("gateway: ready")
		}
	}
	g.readyAt, g.readyErr = g.opts.Now(), err
	return err
}

// readyCacheFor is how long one readiness result is reused;
// readyCheckTimeout bounds one run of Options.Ready.
const (
	readyCacheFor     = 2 * time.Second
	readyCheckTimeout = 3 * time.Second
)

// HealthHandler serves the probes, for the main listener's /healthz and
// /readyz, without authentication: GET or HEAD /healthz is 200 "ok" while
// the process serves HTTP; /readyz is 200 "ready" when Ready passes, else
// 503 "not ready" with Retry-After. The bodies say nothing more (the
// reason goes to the log), so an anonymous caller learns only up or down.
func (g *Gateway) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte("ok\n"))
		case "/readyz":
			if g.Ready(r.Context()) != nil {
				h.Set("Retry-After", "5")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready\n"))
				return
			}
			_, _ = w.Write([]byte("ready\n"))
		default:
			http.NotFound(w, r)
		}
	})
}

// inFlight counts the requests being served that a drain waits for (a
// POST that forwards calls, an initialize), and lets one wait until there
// are none. New ones may come while someone waits.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newInFlight() *inFlight {
	f := &inFlight{idle: make(chan struct{})}
	close(f.idle)
	return f
}

// enter counts one request; the returned func ends it.
func (f *inFlight) enter() func() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.n--; f.n == 0 {
				close(f.idle)
			}
			f.mu.Unlock()
		})
	}
}

func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait returns once no request is counted, or with ctx's error.
func (f *inFlight) wait(ctx context.Context) error {
	for {
		f.mu.Lock()
		n, idle := f.n, f.idle
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
			// Look again: a new request may have come in since.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
