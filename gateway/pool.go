package gateway

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"

	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/workerproto"
)

// initializeCaps is the capabilities object of the gateway's initialize
// for a 2025 worker of key caps: what the clients it serves declared.
func initializeCaps(caps string) map[string]any {
	out := map[string]any{}
	for _, c := range strings.Split(caps, ",") {
		switch c {
		case "sampling", "roots":
			out[c] = map[string]any{}
		case "elicitation":
			out[c] = map[string]any{"form": map[string]any{}}
		case "elicitation.url":
			out["elicitation"].(map[string]any)["url"] = map[string]any{}
		}
	}
	return out
}

// startWorker starts uw's process and holds the handshake with it, then
// closes uw.ready.
func (g *Gateway) startWorker(uw *binding) {
	defer g.inits.Done()
	defer close(uw.ready)
	fail := func(f failure) {
		uw.fail, uw.failed = f, true
		g.remove(uw)
	}
	started := g.opts.Now()
	ws, err := withCredentials(uw, worker.Session{User: uw.key.user, ID: uw.id, ReadOnly: uw.key.readOnly, Tools: uw.key.grant().list(), Scope: workerproto.ScopeUser, Sessions: g.opts.SharedSessions})
	if err != nil {
		uw.log.Error("gateway: starting a per-user worker", "err", err)
		fail(uw.gen.start)
		return
	}
	conn, err := g.launcher.Start(ws,
		worker.ConnConfig{
			Logger: uw.log,
			OnExit: func() {
				uw.closeFeed()
				g.remove(uw)
				uw.subs.closeAll()
				uw.parked.clear()
				g.observer.WorkerExited(WorkerUser, uw.stop.get())
			},
			OnNotification: uw.intercept,
			OnIdle:         func() { g.gatherParked(uw) },
			ExitAdvice:     "send the request again: it starts a fresh worker",
			UniqueProgress: true, // clients of one user share the worker
		})
	if err != nil {
		uw.log.Error("gateway: starting a per-user worker", "err", err)
		fail(startFailure(err, uw.gen.start))
		return
	}
	uw.conn = conn
	uw.stop.conn.Store(conn)
	uw.log.Info("gateway: per-user worker started", "pid", conn.Pid())

	ctx, cancel := g.startCtx()
	defer cancel()
	err = g.handshake(ctx, uw)
	if err == nil {
		err = uw.headers.load(ctx, uw)
	}
	if err != nil {
		uw.log.Error("gateway: per-user worker handshake failed", "err", err)
		f := uw.gen.timeout
		select {
		case <-g.shutdown:
			f = errShuttingDown
		default:
			if !errors.Is(err, context.DeadlineExceeded) {
				f = uw.gen.start
			}
		}
		fail(f)
		uw.stop.set(ExitStartFailed)
		stopCtx, stop := g.stopCtx()
		defer stop()
		_ = uw.conn.Close(stopCtx, worker.KindSessionEnded, "gateway: the worker's handshake failed")
		return
	}
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if !closing {
		g.observer.WorkerStarted(WorkerUser, uw.conn.Pooled(), g.opts.Now().Sub(started))
	}
	if closing {
		fail(errShuttingDown)
		uw.stop.set(ExitShutdown)
		stopCtx, stop := g.stopCtx()
		defer stop()
		_ = uw.conn.Close(stopCtx, worker.KindSessionEnded, "gateway: shutting down")
	}
}

// PerUserWorkers returns the number of per-user (2026-07-28) workers,
// starting ones included.
func (g *Gateway) PerUserWorkers() int {
	return g.count(userGen)
}

// gatewayClientInfo is the clientInfo of the gateway's own requests to a
// worker (its handshake, tools/list for the header table).
var gatewayClientInfo = map[string]string{"name": "mcpgate-gateway", "version": buildVersion()}

// buildVersion is the main module's version, "dev" for a development build.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
