package gateway

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/workerproto"
)

// initialize opens a session for an initialize request: reserve a slot,
// start the worker, forward the request and answer with the worker's
// answer and a fresh MCP-Session-Id.
func (g *Gateway) initialize(w http.ResponseWriter, c *call, m *jsonrpc.Message) {
	r := c.r
	key := bindKey{server: g.opts.Server, user: g.opts.LocalUser, readOnly: g.opts.ReadOnly, tools: workerproto.AllTools, session: g.newSessionID()}
	if p := c.principal; p != nil {
		key.owner, key.user, key.readOnly = c.owner, p.UserID, c.readOnly
		key.tools = toolsKey(c.granted)
	}
	s := g.newBinding(key)
	s.init = m
	s.tools = c.granted // as granted, not as the key spells it
	s.log = g.log.With("session", s.id[:len(g.opts.replicaPrefix())+8], "user", key.user)
	creds, credsOK := g.credentialsFor(w, c, m, callee{kind: WorkerSession}, s.readOnly)
	if !credsOK {
		return
	}
	s.creds = creds

	who := key.principal()
	f, ok := g.reserve(s)
	if !ok && f.msg == s.gen.tooManyForUser.msg && g.evictIdle(who) {
		f, ok = g.reserve(s)
	}
	if !ok {
		s.log.Warn("gateway: refused a new session", "reason", f.msg)
		g.refusedAtEdge(c, m, callee{kind: WorkerSession}, s.readOnly, f)
		f.write(w, m.ID)
		return
	}
	defer g.inits.Done() // added by reserve
	defer g.calls.enter()()
	reserved := true
	release := func() {
		if reserved {
			g.unreserve(s)
			reserved = false
		}
	}
	defer release()

	started := g.opts.Now()
	conn, err := g.startSessionWorker(s, s.readOnly, s.tools)
	if err != nil {
		s.log.Error("gateway: starting a worker", "err", err)
		f := startFailure(err, s.gen.start)
		g.refusedNoAccount(c, m, callee{kind: WorkerSession}, s.readOnly, f)
		f.write(w, m.ID)
		return
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	s.log.Info("gateway: worker started", "pid", conn.Pid(), "read_only", s.readOnly, "pre_started", conn.Pooled())

	st := worker.NewStream(c.sseOK)
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
		s.gen.timeout.write(w, m.ID)
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
		s.gen.exited.write(w, m.ID)
		return
	default:
	}

	if st.Answered() && st.Results() == 0 {
		// The worker refused initialize (say, a protocol version it does not
		// speak): pass its error on, without a session.
		s.log.Info("gateway: the worker refused initialize; no session")
		g.writeStream(w, r, st, c.jsonOK, nil)
		g.stopFailed(s)
		return
	}
	// Register before the answer goes out, so the client's next request
	// finds the session.
	g.mu.Lock()
	closing := g.closing
	if !closing {
		g.bound[s.key.slot()] = s
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
	g.watchCredentials(s)
	if st.Results() > 0 && !conn.Hosted() { // a hosted session started no worker
		g.observer.WorkerStarted(WorkerSession, conn.Pooled(), g.opts.Now().Sub(started))
	}
	done := g.enter(s)
	w.Header().Set("MCP-Session-Id", s.id)
	g.writeStream(w, r, st, c.jsonOK, nil)
	done()
	if st.Results() == 0 {
		// The worker sent messages first and then refused initialize, or
		// never answered: the client has the error; the session is of no
		// use.
		s.log.Info("gateway: initialize failed; ending the session")
		g.remove(s)
		g.stopFailed(s)
	}
}

// startSessionWorker starts a worker for s with the given rights. Its exit ends
// the session while it is the session's worker; a worker a step-up
// replaced ends alone.
func (g *Gateway) startSessionWorker(s *binding, readOnly bool, tools toolSet) (*worker.Conn, error) {
	if g.opts.SharedSessions {
		return g.hostSession(s, readOnly, tools)
	}
	var self atomic.Pointer[worker.Conn]
	ws, err := withCredentials(s, worker.Session{User: s.key.user, ID: s.id, ReadOnly: readOnly, Tools: tools.list(), Scope: workerproto.ScopeSession})
	if err != nil {
		return nil, err
	}
	conn, err := g.launcher.Start(ws,
		worker.ConnConfig{Logger: s.log, OnExit: func() {
			c := self.Load()
			reason := ExitReplaced // a worker the session has moved on from
			if c == nil || s.worker() == c {
				s.closeFeed()
				g.remove(s)
				reason = s.stop.getFor(c)
				if t := s.credsTimer.Load(); t != nil {
					t.Stop()
				}
			}
			g.observer.WorkerExited(WorkerSession, reason)
		}})
	if err == nil {
		self.Store(conn)
	}
	return conn, err
}

// stopFailed stops the worker of a session that never became usable.
func (g *Gateway) stopFailed(s *binding) {
	s.stop.set(ExitStartFailed)
	ctx, cancel := g.stopCtx()
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
	var lru *binding
	for _, s := range g.bound {
		if s.gen == sessionGen && s.key.principal() == who && s.busy.Load() == 0 && (lru == nil || s.lastUsed.Load() < lru.lastUsed.Load()) {
			lru = s
		}
	}
	if lru != nil {
		// Taken out now, so that its slot is the new session's.
		g.takeLocked(lru)
	}
	g.mu.Unlock()
	if lru == nil {
		return false
	}
	lru.log.Info("gateway: ending the user's least recently used idle session for a new one", "max_sessions_per_user", g.opts.MaxSessionsPerUser)
	ctx, cancel := g.stopCtx()
	defer cancel()
	if err := g.stopTaken(ctx, lru, true, ExitIdle, "gateway: the session was idle and its user opened another over the per-user limit"); err != nil {
		lru.log.Error("gateway: stopping a worker", "err", err)
	}
	return true
}

// reserve takes a slot for the starting session s, and its database
// connection, or says which limit refuses them (admitLocked).
func (g *Gateway) reserve(s *binding) (failure, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.admitLocked(s)
	if ok {
		g.starting++
	}
	return f, ok
}

// unreserve gives back what reserve took, for a session that did not
// start.
func (g *Gateway) unreserve(s *binding) {
	g.mu.Lock()
	g.starting--
	g.leaveLocked(s.key.principal())
	g.dbGiveLocked(s.key.principal(), s.db)
	g.mu.Unlock()
}

// leaveLocked counts one session or per-user worker of who gone
// (Accounting.leave). Quotas are the principal's (issuer and subject), not
// the user id's: two accounts the user claim maps to one id do not share
// them.
func (g *Gateway) leaveLocked(who auth.PrincipalKey) {
	g.acct.leave(who)
}

// streamBudget returns the budget of one response of s.
func (g *Gateway) streamBudget(s *binding) *budget {
	return newBudget("one response", "limits.max_stream_buffer_bytes", g.opts.MaxStreamBufferBytes, s.buf)
}
