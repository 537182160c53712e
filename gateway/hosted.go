package gateway

import (
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// A worker that hosts sessions (Options.SharedSessions) is the per-user
// worker of its key (bindKey without a session: server, principal, user,
// read-only flag, grant): every 2025-11-25 session of the key runs in it,
// beside the key's 2026-07-28 requests, each over a Conn of its own
// (worker.Conn.OpenSession), so that ids, progress tokens, the worker's
// requests, cancellation, log levels and subscriptions stay the
// session's. Sessions of different keys never share a process: a
// read-only session and a read-write one of one user, or two tokens of
// one user with different grants, reach different workers.
//
// The limits count sessions, not processes: a worker started for a
// session counts only the sessions it hosts (MaxSessions,
// MaxSessionsPerUser), until a 2026-07-28 request uses it, which counts
// it as that request would have counted a worker of its own. Of its
// database share (DBBudget.PerUserWorker) it is charged the one
// connection it opens at its start, the rest when a 2026-07-28 request
// first uses it; each session's share (PerSession) is charged beside it:
// every session holds a connection of its own. It is reaped once it hosts no session and has been idle for
// SessionIdleTimeout; MaxSessionsPerWorker bounds the sessions it hosts.

// errTooManyInWorker refuses a session over MaxSessionsPerWorker.
var errTooManyInWorker = failure{http.StatusTooManyRequests, jsonrpc.CodeInternalError, "gateway: this user's worker hosts as many sessions as it may (limits.max_sessions_per_worker); end a session (DELETE) or wait for idle ones to expire", nil}

// failureError carries the failure to answer with through an error
// return (startFailure unwraps it).
type failureError struct{ f failure }

func (e failureError) Error() string { return e.f.msg }

// hostKeyOf is the key of the per-user worker that hosts a session of key
// with the given rights: the key without its session id, and without what
// binds a session to one client (its client id, DPoP key, certificate),
// as a 2026-07-28 request's (keyOf).
func hostKeyOf(key bindKey, readOnly bool, tools toolSet) bindKey {
	key.session, key.caps = "", ""
	key.readOnly, key.tools = readOnly, toolsKey(tools)
	key.owner.ClientID, key.owner.KeyThumbprint, key.owner.CertThumbprint = "", "", ""
	return key
}

// hostSession opens session s, with the given rights, in the per-user
// worker of its key, starting that worker when the key has none.
func (g *Gateway) hostSession(s *binding, readOnly bool, tools toolSet) (*worker.Conn, error) {
	ctx, cancel := g.startCtx()
	defer cancel()
	host, f, ok := g.acquireWorker(ctx, hostKeyOf(s.key, readOnly, tools), credential.Set{}, true)
	if !ok {
		switch {
		case f.status != 0:
		case ctx.Err() != nil && isClosed(g.shutdown):
			f = errShuttingDown
		default:
			f = s.gen.timeout
		}
		return nil, failureError{f}
	}
	defer g.release(host)
	var self atomic.Pointer[worker.Conn]
	host.sessions.Add(1)
	conn, err := host.conn.OpenSession(worker.ConnConfig{Logger: s.log, OnExit: func() {
		c := self.Load()
		reason := ExitReplaced // a worker the session has moved on from
		if c == nil || s.worker() == c {
			g.remove(s)
			reason = s.stop.getFor(c)
		}
		if reason == ExitCrashed || reason == ExitLimit {
			s.log.Warn("gateway: the session's worker exited; the session is over", "pid", host.conn.Pid(), "reason", reason)
		}
		host.sessions.Add(-1)
		host.lastUsed.Store(g.opts.Now().UnixNano())
		// No WorkerExited: the metrics count processes, and the
		// worker's own exit is counted as its per-user worker's.
	}}, s.id, g.opts.MaxSessionsPerWorker)
	if err != nil {
		host.sessions.Add(-1)
		if errors.Is(err, worker.ErrSessionsFull) {
			return nil, failureError{errTooManyInWorker}
		}
		return nil, failureError{s.gen.exited}
	}
	self.Store(conn)
	s.log.Debug("gateway: session hosted in its user's worker", "pid", conn.Pid(), "worker", host.id[:len(g.opts.replicaPrefix())+10])
	return conn, nil
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// admitHostLocked admits a per-user worker started for a session, which
// the session counts (hosted.go): the gateway is open, and the database
// budget has the worker's share. g.mu is held.
func (g *Gateway) admitHostLocked(b *binding) (failure, bool) {
	who := b.key.principal()
	if f, ok := g.openLocked(); !ok {
		return f, false
	}
	// The connection it opens at its start; the rest of its share only
	// once a 2026-07-28 request may use them (countHostLocked).
	b.db = min(b.db, 1)
	if f, ok := g.acct.takeDB(who, b.db, g.opts.DB); !ok {
		return f, false
	}
	b.buf = newBudget(b.gen.budget, "limits.max_session_buffer_bytes", g.opts.MaxSessionBufferBytes, g.acct.parentBuf(who))
	g.inits.Add(1) // under mu, after the closing check: Close's Wait sees it
	return failure{}, true
}

// countHostLocked counts a worker its sessions started, on its first
// 2026-07-28 request, under the limits such a request's own worker would
// have met. g.mu is held.
func (g *Gateway) countHostLocked(b *binding) (failure, bool) {
	who := b.key.principal()
	if f, ok := g.acct.count(who, &g.opts, b.gen); !ok {
		return f, false
	}
	if extra := b.gen.db(g.opts.DB) - b.db; extra > 0 {
		if f, ok := g.acct.takeDB(who, extra, g.opts.DB); !ok {
			g.acct.leave(who)
			return f, false
		}
		b.db += extra
	}
	b.counted = true
	return failure{}, true
}

// splitSessions returns the sessions of list, then the rest.
func splitSessions(list []*binding) (sessions, rest []*binding) {
	for _, b := range list {
		if b.gen == sessionGen {
			sessions = append(sessions, b)
		} else {
			rest = append(rest, b)
		}
	}
	return sessions, rest
}
