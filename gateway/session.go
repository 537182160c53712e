package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// initialize opens a session for an initialize request: reserve a slot,
// start the worker, forward the request and answer with the worker's
// answer and a fresh MCP-Session-Id.
func (g *Gateway) initialize(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, jsonOK, sseOK bool) {
	p := auth.PrincipalFrom(r.Context())
	s := &session{id: g.newSessionID(), user: g.opts.LocalUser, readOnly: g.opts.ReadOnly, init: m}
	if p != nil {
		s.owner, s.user, s.readOnly = p.Owner(), p.UserID, g.opts.ReadOnly || g.readOnlyToken(r)
		s.tools = grantOf(r)
	}
	s.log = g.log.With("session", s.id[:len(g.opts.replicaPrefix())+8], "user", s.user)

	who := principalOf(s.owner, s.user)
	f, ok := g.reserve(who)
	if !ok && f.msg == errTooManyForUser.msg && g.evictIdle(who) {
		f, ok = g.reserve(who)
	}
	if !ok {
		s.log.Warn("gateway: refused a new session", "reason", f.msg)
		g.refusedAtEdge(r, m, callee{kind: WorkerSession}, s.readOnly, f)
		f.write(w, m.ID)
		return
	}
	defer g.inits.Done() // added by reserve
	defer g.calls.enter()()
	g.mu.Lock()
	s.buf = newBudget("one session's responses", "limits.max_session_buffer_bytes", g.opts.MaxSessionBufferBytes, g.userBufs[principalOf(s.owner, s.user)])
	g.mu.Unlock()
	reserved := true
	release := func() {
		if reserved {
			g.unreserve(principalOf(s.owner, s.user))
			reserved = false
		}
	}
	defer release()

	started := g.opts.Now()
	conn, err := g.startSessionWorker(s, s.readOnly, s.tools)
	if err != nil {
		s.log.Error("gateway: starting a worker", "err", err)
		f := startFailure(err, errWorkerStart)
		g.refusedNoAccount(r, m, callee{kind: WorkerSession}, s.readOnly, f)
		f.write(w, m.ID)
		return
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	s.log.Info("gateway: worker started", "pid", conn.Pid(), "read_only", s.readOnly, "pre_started", conn.Pooled())

	st := worker.NewStream(sseOK)
	st.Budget = g.streamBudget(s)
	st.Expect(1)
	s.conn.Call(m, progressToken(m), st, nil)

	timer := time.NewTimer(g.opts.WorkerStartTimeout)
	defer timer.Stop()
	select {
	case <-st.Ready():
		g.freshWriteDeadline(w)
	case <-timer.C:
		g.freshWriteDeadline(w)
		st.Detach()
		s.log.Error("gateway: the worker did not answer initialize in time", "timeout", g.opts.WorkerStartTimeout)
		g.stopFailed(s)
		errWorkerTimeout.write(w, m.ID)
		return
	case <-g.shutdown:
		st.Detach()
		g.stopFailed(s)
		errShuttingDown.write(w, m.ID)
		return
	case <-r.Context().Done():
		// Nobody would learn the session id: do not keep the worker.
		st.Detach()
		s.log.Info("gateway: the client left during initialize")
		g.stopFailed(s)
		return
	}
	select {
	case <-s.conn.Done():
		st.Detach()
		s.log.Error("gateway: the worker exited during initialize")
		errWorkerExited.write(w, m.ID)
		return
	default:
	}

	if st.Answered() && st.Results() == 0 {
		// The worker refused initialize (say, a protocol version it does not
		// speak): pass its error on, without a session.
		s.log.Info("gateway: the worker refused initialize; no session")
		g.writeStream(w, r, st, jsonOK, nil)
		g.stopFailed(s)
		return
	}
	// Register before the answer goes out, so the client's next request
	// finds the session.
	g.mu.Lock()
	closing := g.closing
	if !closing {
		g.sessions[s.id] = s
		g.starting--
		reserved = false // the slot now belongs to the live session
	}
	g.mu.Unlock()
	if closing {
		st.Detach()
		g.stopFailed(s)
		errShuttingDown.write(w, m.ID)
		return
	}
	if st.Results() > 0 {
		g.observer.WorkerStarted(WorkerSession, conn.Pooled(), g.opts.Now().Sub(started))
	}
	done := g.enter(s)
	w.Header().Set("MCP-Session-Id", s.id)
	g.writeStream(w, r, st, jsonOK, nil)
	done()
	if st.Results() == 0 {
		// The worker sent messages first and then refused initialize, or
		// never answered: the client has the error; the session is of no
		// use.
		s.log.Info("gateway: initialize failed; ending the session")
		g.removeSession(s)
		g.stopFailed(s)
	}
}

// startSessionWorker starts a worker for s with the given rights. Its exit ends
// the session while it is the session's worker; a worker a step-up
// replaced ends alone.
func (g *Gateway) startSessionWorker(s *session, readOnly bool, tools toolSet) (*worker.Conn, error) {
	var self atomic.Pointer[worker.Conn]
	conn, err := g.launcher.Start(worker.Session{User: s.user, ID: s.id, ReadOnly: readOnly, Tools: tools.list(), Scope: worker.ScopeSession},
		worker.ConnConfig{Logger: s.log, OnExit: func() {
			c := self.Load()
			reason := ExitReplaced // a worker the session has moved on from
			if c == nil || s.worker() == c {
				g.removeSession(s)
				reason = s.stop.getFor(c)
			}
			g.observer.WorkerExited(WorkerSession, reason)
		}})
	if err == nil {
		self.Store(conn)
	}
	return conn, err
}

// worker returns the session's current worker.
func (s *session) worker() *worker.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// rights returns what the session's current worker was started with.
func (s *session) rights() (readOnly bool, tools toolSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly, s.tools
}

// stopFailed stops the worker of a session that never became usable.
func (g *Gateway) stopFailed(s *session) {
	s.stop.set(ExitStartFailed)
	ctx, cancel := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
	defer cancel()
	if err := s.conn.Close(ctx, worker.KindSessionEnded, "gateway: initialize failed"); err != nil {
		s.log.Error("gateway: stopping a worker", "err", err)
	}
}

// evictIdle ends the least recently used idle session of the principal
// who (no HTTP request being served, no stream open), so that the new
// session fits under MaxSessionsPerUser: a client that never ends its
// session (no DELETE) holds a worker process until SessionIdleTimeout, and
// would otherwise lock its user out of new sessions until then. A session
// in use is never ended; it reports whether it ended one.
func (g *Gateway) evictIdle(who auth.PrincipalKey) bool {
	g.mu.Lock()
	var lru *session
	for _, s := range g.sessions {
		if principalOf(s.owner, s.user) == who && s.busy.Load() == 0 && (lru == nil || s.lastUsed.Load() < lru.lastUsed.Load()) {
			lru = s
		}
	}
	if lru != nil {
		// Taken out now, so that its slot is the new session's.
		delete(g.sessions, lru.id)
		g.leaveLocked(who)
	}
	g.mu.Unlock()
	if lru == nil {
		return false
	}
	lru.log.Info("gateway: ending the user's least recently used idle session for a new one", "max_sessions_per_user", g.opts.MaxSessionsPerUser)
	lru.stop.set(ExitIdle)
	ctx, cancel := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
	defer cancel()
	if err := lru.worker().Close(ctx, worker.KindSessionEnded, "gateway: the session was idle and its user opened another over the per-user limit; initialize a new session"); err != nil {
		lru.log.Error("gateway: stopping a worker", "err", err)
	}
	// The database share comes back once the worker has exited (Close
	// waits for that), as for any ended session.
	g.mu.Lock()
	g.dbGiveLocked(who, g.opts.DB.PerSession)
	g.mu.Unlock()
	return true
}

// reserve takes a session slot for the principal who, and its database
// connection, or says which limit refuses them.
func (g *Gateway) reserve(who auth.PrincipalKey) (failure, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closing:
		return errShuttingDown, false
	case g.draining:
		return errDraining, false
	case len(g.sessions)+g.starting+len(g.workers) >= g.opts.MaxSessions:
		return errTooManySessions, false
	case g.perUser[who] >= g.opts.MaxSessionsPerUser:
		return errTooManyForUser, false
	}
	if f, ok := g.dbTakeLocked(who, g.opts.DB.PerSession); !ok {
		return f, false
	}
	g.starting++
	g.joinLocked(who)
	g.inits.Add(1) // under mu, after the closing check: Close's Wait sees it
	return failure{}, true
}

func (g *Gateway) unreserve(who auth.PrincipalKey) {
	g.mu.Lock()
	g.starting--
	g.leaveLocked(who)
	g.dbGiveLocked(who, g.opts.DB.PerSession)
	g.mu.Unlock()
}

// joinLocked counts one more session or per-user worker of who, and gives
// who a buffer budget with the first. Quotas are the principal's (issuer
// and subject), not the user id's: two accounts the user claim maps to one
// id do not share them.
func (g *Gateway) joinLocked(who auth.PrincipalKey) {
	if g.perUser[who]++; g.userBufs[who] == nil {
		g.userBufs[who] = newBudget("one user's responses", "limits.max_user_buffer_bytes", g.opts.MaxUserBufferBytes, g.buffered)
	}
}

// leaveLocked counts one session of who gone; the last one takes the
// principal's buffer budget with it (a response still writing gives back
// to the budget it holds, and so to the gateway's total).
func (g *Gateway) leaveLocked(who auth.PrincipalKey) {
	if g.perUser[who]--; g.perUser[who] <= 0 {
		delete(g.perUser, who)
		delete(g.userBufs, who)
	}
}

// streamBudget returns the budget of one response of s.
func (g *Gateway) streamBudget(s *session) *budget {
	return newBudget("one response", "limits.max_stream_buffer_bytes", g.opts.MaxStreamBufferBytes, s.buf)
}
