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

	mu sync.Mutex
	// bound holds the bindings by bindKey.slot: live sessions, and
	// per-user workers, starting ones included.
	bound map[bindKey]*binding
	// acct counts what the limits bound (Options.Accounting, or the
	// gateway's own): bindings per principal, database connections,
	// buffered bytes.
	acct *Accounting
	// legacyWorkers is set once a per-user worker turned out to speak only
	// 2025-11-25: from then on a bindKey holds the client's capabilities.
	legacyWorkers atomic.Bool
	starting      int // sessions whose worker is starting
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

// New returns a Gateway whose sessions get their workers from launcher. It
// starts the idle reaper and fills the launcher's pool of pre-started
// workers (worker.LauncherOptions.PoolSize); Close stops both. It refuses
// options that Options.Validate refuses.
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
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	g := &Gateway{
		opts:       opts,
		log:        opts.Logger,
		launcher:   launcher,
		safe:       set(opts.SafeTools),
		undo:       set(opts.UndoTools),
		bound:      make(map[bindKey]*binding),
		acct:       opts.Accounting,
		shutdown:   make(chan struct{}),
		reaperDone: make(chan struct{}),
		calls:      newInFlight(),
	}
	if g.acct == nil {
		g.acct = NewAccounting()
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

// serveMCP is the transport proper, reached once every check has passed.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	// Past the Host, Origin and token checks: the connection is no longer
	// an unauthenticated one (ListenerOptions), unless its principal holds
	// every connection of its share.
	c := g.newCall(r)
	if !markAuthenticated(r, c.principal) {
		g.log.Warn("gateway: refused a connection over its principal's share", "remote", r.RemoteAddr)
		w.Header().Set("Connection", "close")
		errTooManyConnections.write(w, nil)
		return
	}
	switch r.Method {
	case http.MethodPost:
		g.servePOST(w, c)
	case http.MethodGet:
		g.serveGET(w, c)
	case http.MethodDelete:
		g.serveDELETE(w, c)
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
	g.mu.Unlock()
	if first {
		close(g.shutdown)
	}
	<-g.reaperDone
	err := errors.Join(g.launcher.StopPool(ctx), g.stopBindings(ctx, g.liveBindings(nil), ExitShutdown, "gateway: the gateway is shutting down"))
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

// Sessions returns the number of live sessions.
func (g *Gateway) Sessions() int {
	return g.count(sessionGen)
}

// count returns the number of bindings of kind gen in the table, starting
// ones included.
func (g *Gateway) count(gen *generation) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, b := range g.bound {
		if b.gen == gen {
			n++
		}
	}
	return n
}

// Workers returns the number of live worker processes of kind
// (WorkerSession, WorkerUser): a session hosted in its user's worker
// (Options.SharedSessions) has none of its own.
func (g *Gateway) Workers(kind string) int {
	switch kind {
	case WorkerSession:
		n := 0
		for _, s := range g.liveBindings(sessionGen) {
			if !s.worker().Hosted() {
				n++
			}
		}
		return n
	case WorkerUser:
		return len(g.liveBindings(userGen))
	}
	return 0
}

// WorkerPid returns the process id of a session's worker, for operators'
// tooling and tests; false when the session does not exist.
func (g *Gateway) WorkerPid(sessionID string) (int, bool) {
	s := g.bindingOf(bindKey{server: g.opts.Server, session: sessionID})
	if s == nil {
		return 0, false
	}
	return s.worker().Pid(), true
}

// sessionOf returns the request's session, or answers 400 (no
// MCP-Session-Id) or 404 (unknown, ended or another principal's) and returns
// nil; id is the JSON-RPC id for that answer.
func (g *Gateway) sessionOf(w http.ResponseWriter, c *call, id json.RawMessage) *binding {
	sid := c.r.Header.Get("MCP-Session-Id")
	if sid == "" {
		errNoSession.write(w, id)
		return nil
	}
	s := g.lookup(c, sid)
	switch {
	case s == nil:
		errUnknownSession.write(w, id)
	case s.credsDue(g.opts.Now()) && !g.refreshSession(c, s, g.opts.Now()):
		g.expireSession(s)
		errCredentialExpired.write(w, id)
		return nil
	}
	return s
}

// lookup finds a live session for the request's principal. A session
// owned by someone else (another issuer, subject, user id or client: see
// auth.Owner) is reported as missing (docs/design.md, Session ownership), and logged with
// the part that differed.
func (g *Gateway) lookup(c *call, id string) *binding {
	s := g.bindingOf(bindKey{server: g.opts.Server, session: id})
	if s == nil {
		return nil
	}
	owner := c.owner
	if owner != s.key.owner {
		differs := s.key.owner.Differs(owner)
		if owner == (auth.Owner{}) {
			differs = "no principal"
		}
		s.log.Warn("gateway: a request named a session it does not own", "differs", differs,
			"session_user", s.key.owner.UserID, "request_user", owner.UserID,
			"session_client", s.key.owner.ClientID, "request_client", owner.ClientID, "remote", c.r.RemoteAddr)
		return nil
	}
	return s
}

// newSessionID returns 128 bits from crypto/rand, hex-encoded (MCP: a
// session id is globally unique and cryptographically secure).
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}
