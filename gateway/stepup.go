package gateway

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// initialized is the notification that completes a replacing worker's
// handshake.
var initialized, _ = jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

// replaceWorker gives session s a worker with the rights of the request's
// token, when the token grants a tool the session's worker was not started
// with (under auth.policies), or the write scope (the simple form), and
// that worker is read-only (MCP 2025-11-25 §Scope
// Challenge Handling: the client steps up and carries on). A read-only
// worker holds no uncommitted writes, so nothing is lost; one that may
// write is never replaced (its transaction would go) nor widened in place:
// the token's extra tools are then refused with kind sessionRights. The new
// worker is started from scratch with the new rights and gets the client's
// initialize again; the old one is stopped, ending its requests in flight
// and its GET stream (the client reopens it). It reports false with the
// failure to answer when the new worker could not be started.
func (g *Gateway) replaceWorker(c *call, s *binding) (failure, bool) {
	readOnly, granted := c.readOnly, c.granted
	if !g.widens(s, granted, readOnly) {
		return failure{}, true
	}
	s.swap.Lock()
	defer s.swap.Unlock()
	if !g.widens(s, granted, readOnly) {
		return failure{}, true // another request replaced it meanwhile
	}
	g.mu.Lock()
	draining := g.draining || g.closing
	g.mu.Unlock()
	if draining {
		return errDraining, false // no new worker while the gateway drains
	}
	conn, err := g.startSessionWorker(s, readOnly, granted)
	if err != nil {
		s.log.Error("gateway: starting a worker for a step-up", "err", err)
		return startFailure(err, s.gen.start), false
	}
	if f, ok := g.replayInit(c.r.Context(), s, conn); !ok {
		g.stopWorker(s, conn, "gateway: the replacing worker failed its start")
		return f, false
	}
	g.mu.Lock()
	live := !g.closing && g.bound[s.key.slot()] == s
	var old *worker.Conn
	if live {
		s.mu.Lock()
		old, s.conn, s.readOnly, s.tools = s.conn, conn, readOnly, granted
		s.mu.Unlock()
	}
	g.mu.Unlock()
	if !live {
		g.stopWorker(s, conn, "gateway: the session ended during a step-up")
		return errUnknownSession, false
	}
	s.log.Info("gateway: replaced the session's worker for a token with more rights", "pid", conn.Pid(), "read_only", readOnly, "tools", len(granted))
	g.stopWorker(s, old, "gateway: the session's worker was replaced by one with the new token's rights; retry the request")
	return failure{}, true
}

// widens reports whether a token that grants granted (nil: no policy) and
// is read-only or not would reach more than s's read-only worker was
// started with: tools beyond its set, or, in the simple form, writes.
func (g *Gateway) widens(s *binding, granted toolSet, readOnly bool) bool {
	ro, tools := s.rights()
	switch {
	case !ro:
		return false
	case granted != nil:
		return !tools.covers(granted)
	}
	return !readOnly
}

// replayInit replays the session's initialize to a replacing worker and
// completes it with notifications/initialized.
func (g *Gateway) replayInit(ctx context.Context, s *binding, conn *worker.Conn) (failure, bool) {
	// The answer is the worker's, not the client's: nothing is kept of it
	// and nothing is charged to the client's budgets.
	st := worker.NewStream(false)
	defer st.Detach()
	st.Expect(1)
	conn.Call(s.init, "", st, nil)
	timer := time.NewTimer(g.opts.WorkerStartTimeout)
	defer timer.Stop()
	for !st.Answered() {
		select {
		case <-st.Ready():
			st.Take(false)
		case <-timer.C:
			return errWorkerTimeout, false
		case <-g.shutdown:
			return errShuttingDown, false
		case <-ctx.Done():
			return errWorkerExited, false
		}
	}
	if st.Results() == 0 {
		return errWorkerExited, false
	}
	if err := conn.Notify(initialized); err != nil {
		return errWorkerExited, false
	}
	return failure{}, true
}

// stopWorker stops one worker of s, bounded by the stop grace.
func (g *Gateway) stopWorker(s *binding, conn *worker.Conn, why string) {
	ctx, cancel := g.stopCtx()
	defer cancel()
	if err := conn.Close(ctx, worker.KindSessionEnded, why); err != nil {
		s.log.Error("gateway: stopping a worker", "err", err)
	}
}
