package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// Gateway serves /mcp. It is an http.Handler; Close stops every worker.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	handler  http.Handler // guard, then Options.Middleware, then serveMCP
	launcher *worker.Launcher
	safe     map[string]bool // Options.SafeTools
	undo     map[string]bool // Options.UndoTools
	// safeMethods is Options.SafeMethods.
	safeMethods map[string]bool
	observer    Observer // Options.Observers
	observed    bool     // there is one: worth reading answers for

	mu        sync.Mutex
	sessions  map[string]*session
	perUser   map[auth.PrincipalKey]int // live and starting sessions and per-user workers per principal
	dbUsed    int                       // database connections the workers may hold (Options.DB)
	dbPerUser map[auth.PrincipalKey]int // the same, per principal
	workers   map[poolKey]*userWorker   // 2026-07-28 per-user workers, starting ones included
	// legacyWorkers is set once a per-user worker turned out to speak only
	// 2025-11-25: from then on a poolKey holds the client's capabilities.
	legacyWorkers atomic.Bool
	userBufs      map[auth.PrincipalKey]*budget // bytes held for each principal with a session or per-user worker
	buffered      *budget                       // bytes held for every client
	starting      int                           // sessions whose worker is starting
	closing       bool
	draining      bool // Drain has begun: no new session or per-user worker

	calls *inFlight // requests a drain waits for

	readyMu  sync.Mutex // one run of Options.Ready at a time
	readyAt  time.Time  // when readyErr was found; zero: never
	readyErr error

	shutdown   chan struct{}  // closed by Close; cuts initializes short
	inits      sync.WaitGroup // initializes in progress
	reaperDone chan struct{}
}

// session is one MCP session and its worker.
type session struct {
	id    string
	owner auth.Owner // auth.Principal.Owner(); zero in localhost mode
	user  string
	init  *jsonrpc.Message // the client's initialize, replayed to a replacing worker
	log   *slog.Logger

	// mu guards the worker and the rights it was started with: a step-up
	// replaces them (stepup.go). Read them with worker and rights.
	mu       sync.Mutex
	conn     *worker.Conn
	readOnly bool
	tools    toolSet    // what the worker was started with; nil: no policy
	swap     sync.Mutex // one replacement at a time
	buf      *budget    // bytes held for the session's responses

	lastUsed atomic.Int64 // unix nanoseconds by Options.Now
	busy     atomic.Int32 // HTTP requests being served

	stop exitReason // why the gateway stops the worker
}

// New returns a Gateway whose sessions get their workers from launcher. It
// starts the idle reaper and fills the launcher's pool of pre-started
// workers (worker.LauncherOptions.PoolSize); Close stops both.
func New(launcher *worker.Launcher, opts Options) (*Gateway, error) {
	if launcher == nil {
		return nil, errors.New("gateway: no worker launcher")
	}
	if err := CheckReplicaID(opts.ReplicaID); err != nil {
		return nil, err
	}
	if err := CheckDBBudget(opts.DB); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	g := &Gateway{
		opts:       opts,
		log:        opts.Logger,
		launcher:   launcher,
		safe:       set(opts.SafeTools),
		undo:       set(opts.UndoTools),
		sessions:   make(map[string]*session),
		perUser:    make(map[auth.PrincipalKey]int),
		dbPerUser:  make(map[auth.PrincipalKey]int),
		workers:    make(map[poolKey]*userWorker),
		userBufs:   make(map[auth.PrincipalKey]*budget),
		buffered:   newBudget("every client", "", 0, nil),
		shutdown:   make(chan struct{}),
		reaperDone: make(chan struct{}),
		calls:      newInFlight(),
	}
	g.safeMethods = set(opts.SafeMethods)
	g.observer, g.observed = observers(opts.Observers), len(opts.Observers) > 0
	var inner http.Handler = http.HandlerFunc(g.serveMCP)
	if opts.Middleware != nil {
		inner = opts.Middleware(inner)
	}
	g.handler = g.guard(inner)
	go g.reaper()
	launcher.StartPool() // pre-started workers, if the launcher keeps any
	return g, nil
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// ServeHTTP serves the MCP endpoint: the Host and Origin checks, then
// Options.Middleware, then the transport.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A fresh write deadline for this request: it bounds the small answers
	// (refusals, 202) and replaces one a previous request on this
	// connection left. Long answers move it forward as they write.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.opts.WriteTimeout))
	g.handler.ServeHTTP(w, r)
}

// freshWriteDeadline gives what is written next a full WriteTimeout. After
// a wait the request could not shorten (its body coming in, a worker's
// start), the deadline it began with may have passed, and an answer written
// under it, a 408 or a 504, would be lost.
func (g *Gateway) freshWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.opts.WriteTimeout))
}

// serveMCP is the transport proper, reached once every check has passed.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	// Past the Host, Origin and token checks: the connection is no longer
	// an unauthenticated one (ListenerOptions), unless its principal holds
	// every connection of its share.
	if !markAuthenticated(r) {
		g.log.Warn("gateway: refused a connection over its principal's share", "remote", r.RemoteAddr)
		w.Header().Set("Connection", "close")
		errTooManyConnections.write(w, nil)
		return
	}
	switch r.Method {
	case http.MethodPost:
		g.servePOST(w, r)
	case http.MethodGet:
		g.serveGET(w, r)
	case http.MethodDelete:
		g.serveDELETE(w, r)
	default:
		errMethod.write(w, nil)
	}
}

// Close ends every session, stopping its worker (SIGTERM, SIGKILL after the
// grace period), and waits for them all, bounded by ctx. New sessions are
// refused from the start of Close.
func (g *Gateway) Close(ctx context.Context) error {
	g.mu.Lock()
	first := !g.closing
	g.closing = true
	sessions := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	if first {
		close(g.shutdown)
	}
	<-g.reaperDone
	err := errors.Join(g.launcher.StopPool(ctx), g.endSessions(ctx, sessions, ExitShutdown, "gateway: the gateway is shutting down"),
		g.stopWorkers(ctx, g.readyWorkers(), ExitShutdown, "gateway: the gateway is shutting down"))
	// An initialize in progress stops its own worker on shutdown.
	done := make(chan struct{})
	go func() { g.inits.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("gateway: initializes still in progress: %w", ctx.Err()))
	}
	return err
}

// endSessions stops the workers of sessions concurrently and waits.
// reason is why, for the metrics (Exit*).
func (g *Gateway) endSessions(ctx context.Context, sessions []*session, reason, why string) error {
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			s.stop.set(reason)
			removed := g.removeSessionKeepDB(s)
			errs[i] = s.worker().Close(ctx, worker.KindSessionEnded, why+"; initialize a new session")
			// The database share comes back once the worker has exited
			// (Close waits for that, up to the grace and the kill): until
			// then its connection may still be open.
			if removed {
				g.mu.Lock()
				g.dbGiveLocked(principalOf(s.owner, s.user), g.opts.DB.PerSession)
				g.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Sessions returns the number of live sessions.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// Workers returns the number of live worker processes of kind
// (WorkerSession, WorkerUser).
func (g *Gateway) Workers(kind string) int {
	switch kind {
	case WorkerSession:
		return g.Sessions()
	case WorkerUser:
		return len(g.readyWorkers())
	}
	return 0
}

// WorkerPid returns the process id of a session's worker, for operators'
// tooling and tests; false when the session does not exist.
func (g *Gateway) WorkerPid(sessionID string) (int, bool) {
	g.mu.Lock()
	s := g.sessions[sessionID]
	g.mu.Unlock()
	if s == nil {
		return 0, false
	}
	return s.worker().Pid(), true
}

// sessionOf returns the request's session, or answers 400 (no
// MCP-Session-Id) or 404 (unknown, ended or another principal's) and returns
// nil; id is the JSON-RPC id for that answer.
func (g *Gateway) sessionOf(w http.ResponseWriter, r *http.Request, id json.RawMessage) *session {
	sid := r.Header.Get("MCP-Session-Id")
	if sid == "" {
		errNoSession.write(w, id)
		return nil
	}
	s := g.lookup(r, sid)
	if s == nil {
		errUnknownSession.write(w, id)
	}
	return s
}

// lookup finds a live session for the request's principal. A session
// owned by someone else (another issuer, subject, user id or client: see
// auth.Owner) is reported as missing (docs/design.md, Session ownership), and logged with
// the part that differed.
func (g *Gateway) lookup(r *http.Request, id string) *session {
	g.mu.Lock()
	s := g.sessions[id]
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	var owner auth.Owner
	if p := auth.PrincipalFrom(r.Context()); p != nil {
		owner = p.Owner()
	}
	if owner != s.owner {
		differs := s.owner.Differs(owner)
		if owner == (auth.Owner{}) {
			differs = "no principal"
		}
		s.log.Warn("gateway: a request named a session it does not own", "differs", differs,
			"session_user", s.owner.UserID, "request_user", owner.UserID,
			"session_client", s.owner.ClientID, "request_client", owner.ClientID, "remote", r.RemoteAddr)
		return nil
	}
	return s
}

// removeSession takes s out of the table and gives its database share
// back; it is idempotent.
func (g *Gateway) removeSession(s *session) {
	g.mu.Lock()
	if g.sessions[s.id] == s {
		delete(g.sessions, s.id)
		g.leaveLocked(principalOf(s.owner, s.user))
		g.dbGiveLocked(principalOf(s.owner, s.user), g.opts.DB.PerSession)
	}
	g.mu.Unlock()
}

// removeSessionKeepDB takes s out of the table but keeps its database
// share, for a caller that gives it back once the worker has exited; it
// reports whether it removed s (and so owes the share).
func (g *Gateway) removeSessionKeepDB(s *session) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions[s.id] != s {
		return false
	}
	delete(g.sessions, s.id)
	g.leaveLocked(principalOf(s.owner, s.user))
	return true
}

// newSessionID returns 128 bits from crypto/rand, hex-encoded (MCP: a
// session id is globally unique and cryptographically secure).
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// reaper ends sessions idle for longer than SessionIdleTimeout.
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
			g.reapIdleWorkers()
		}
	}
}

// reapIdle ends every session that serves no HTTP request and has been idle
// for longer than SessionIdleTimeout by Options.Now. A request still in
// flight in the worker does not keep a session whose client has left: no
// one is waiting for its answer, and a worker that never answers would
// otherwise hold the session, and its process, forever.
// A client waiting on its answer keeps its request, and so the session,
// busy; with write deadlines, one that stops reading does not.
func (g *Gateway) reapIdle() {
	now := g.opts.Now().UnixNano()
	limit := g.opts.SessionIdleTimeout.Nanoseconds()
	var idle []*session
	g.mu.Lock()
	for _, s := range g.sessions {
		if s.busy.Load() == 0 && now-s.lastUsed.Load() > limit {
			idle = append(idle, s)
		}
	}
	g.mu.Unlock()
	for _, s := range idle {
		s.log.Info("gateway: reaping an idle session", "idle_timeout", g.opts.SessionIdleTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
	defer cancel()
	if err := g.endSessions(ctx, idle, ExitIdle, "gateway: the session was idle too long"); err != nil {
		g.log.Error("gateway: reaping", "err", err)
	}
}

// enter marks s busy for one HTTP request; the returned func ends it.
func (g *Gateway) enter(s *session) func() {
	s.busy.Add(1)
	s.lastUsed.Store(g.opts.Now().UnixNano())
	return func() {
		s.lastUsed.Store(g.opts.Now().UnixNano())
		s.busy.Add(-1)
	}
}
