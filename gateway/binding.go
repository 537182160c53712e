package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
	"github.com/mcpgate/mcpgate/workerproto"
)

// bindKey names the worker a request reaches (docs/design.md, Worker per
// key): the server, the principal (issuer, subject) and user id, and the
// rights (the read-only flag and, under auth.policies, the tools the token
// grants). Two users never share a worker, nor do two requests of one user
// with different rights: a token that grants more simply reaches another
// worker (the step-up needs nothing else), one that grants less never
// reaches a wider one.
//
// A 2025-11-25 session adds its session id: the session is one client's
// (owner keeps the client id), and its rights are those it was opened
// with. A 2026-07-28 request has no session; the clients of one user share
// the user's worker, whose owner has no client id, since its state is the
// user's, reached with the user's rights.
type bindKey struct {
	server   string     // the server's name; "" for the one at /mcp
	owner    auth.Owner // auth.Principal.Owner(); zero in localhost mode
	user     string
	readOnly bool
	tools    string // the granted tools, sorted, comma-separated; workerproto.AllTools without a policy
	session  string // the 2025-11-25 session id; "" for a per-user worker
	// caps, for a per-user worker that speaks only 2025-11-25, is the set
	// of client capabilities the gateway's initialize declares to it
	// (capsKeyOf): those the request's client declared, so that the worker
	// never asks, or runs a tool that needs, what the client cannot give.
	// Empty for a worker that speaks 2026-07-28 (it reads each request's
	// own).
	caps string
}

// slot is where the binding of k is kept: a session by its id alone (a
// request finds it by the MCP-Session-Id header, then its owner is
// checked), a per-user worker by the whole key.
func (k bindKey) slot() bindKey {
	if k.session != "" {
		return bindKey{server: k.server, session: k.session}
	}
	return k
}

// principal is whom k's per-user limits count against (principalOf).
func (k bindKey) principal() auth.PrincipalKey { return principalOf(k.owner, k.user) }

// grant is the toolSet of k's tools.
func (k bindKey) grant() toolSet {
	switch k.tools {
	case workerproto.AllTools:
		return nil
	case "":
		return toolSet{}
	}
	return set(strings.Split(k.tools, ","))
}

// toolsKey is a toolSet as a bindKey's tools.
func toolsKey(t toolSet) string {
	if t == nil {
		return workerproto.AllTools
	}
	return strings.Join(t.list(), ",")
}

// inputCaps are the client capabilities a 2025 worker can ask for during a
// request, in the order capsKeyOf lists them.
var inputCaps = []string{"elicitation", "roots", "sampling"}

// capsKeyOf is the bindKey caps of a 2026-07-28 request whose _meta
// clientCapabilities are caps: the capabilities of inputCaps it declares
// (as inputRequester reads them: present is declared), comma-separated,
// with "elicitation.url" for an elicitation capability that names url.
func capsKeyOf(caps json.RawMessage) string {
	var out []string
	for _, c := range inputCaps {
		v, ok := jsonrpc.Member(caps, c)
		if !ok || v == nil {
			continue
		}
		out = append(out, c)
		if c == "elicitation" {
			if u, ok := jsonrpc.Member(v, "url"); ok && u != nil {
				out = append(out, "elicitation.url")
			}
		}
	}
	return strings.Join(out, ",")
}

// binding is a worker bound to a key: a 2025-11-25 session's, or a
// 2026-07-28 per-user worker shared by all of its key's concurrent
// requests (multiplexed by rewritten ids). One life cycle serves both:
// admitted under the limits (admitLocked), started, used (enter), reaped
// when idle (reapIdle) and stopped (stopBindings); the generations differ
// in how a request finds its key and how its answer is annotated, and in
// the words of their answers (generation).
type binding struct {
	key bindKey
	gen *generation
	id  string // the session id, or the worker's instance id (handed to it as its session id)
	log *slog.Logger
	db  int // database connections its worker may hold (Options.DB)

	// mu guards the worker and the rights it was started with: a
	// session's step-up replaces them (stepup.go). Read them with worker
	// and rights.
	mu       sync.Mutex
	conn     *worker.Conn
	readOnly bool
	tools    toolSet    // what the worker was started with; nil: no policy
	swap     sync.Mutex // one replacement at a time
	init     *jsonrpc.Message

	buf *budget // bytes held for the worker's responses, under its user's

	lastUsed atomic.Int64 // unix nanoseconds by Options.Now
	busy     atomic.Int32 // HTTP requests being served, streams included

	// A per-user worker that hosts sessions (Options.SharedSessions):
	// counted says that it counts against the limits as one of its
	// principal's bindings (it was started, or used, by a 2026-07-28
	// request; a worker its sessions alone use counts only them), under
	// g.mu; sessions counts the sessions it hosts, which keep it from idle
	// reaping.
	counted  bool
	sessions atomic.Int32

	stop exitReason // why the gateway stops the worker

	// A per-user worker's start: ready is closed when the handshake is
	// over, either way; the fields after it are set before, read-only
	// after. A session is kept only once started: its ready is nil.
	ready      chan struct{}
	fail       failure         // why the start failed; zero when it did not
	failed     bool            //
	modern     bool            // the worker answers 2026-07-28 requests itself
	serverInfo json.RawMessage // the worker's identity (Implementation)
	discover   json.RawMessage // the worker's DiscoverResult (modern), or one built from initialize

	headers headerTable // x-mcp-header bindings of the worker's tools
	subs    subscriptions
	parked  parking // 2025 worker: calls waiting for a client's inputResponses

	// The user's downstream credentials the worker started with
	// (credentials.go): a per-user worker whose credentials are due is
	// retired (out of the table, stopped once idle); a session's ends.
	creds      credential.Set
	feed       atomic.Pointer[credential.HeaderFeed] // a remote server's header credentials (headercreds.go)
	retired    atomic.Bool
	retireStop atomic.Bool
	credsTimer atomic.Pointer[time.Timer]
}

// generation is what tells the two kinds of binding apart: their metrics
// kind, their share of the database budget, and the words of their
// refusals and stops. It is the one error set of a binding's life cycle.
type generation struct {
	kind string // WorkerSession or WorkerUser
	db   func(DBBudget) int

	tooMany        failure // Options.MaxSessions
	tooManyForUser failure // Options.MaxSessionsPerUser
	start          failure // the worker could not be started
	timeout        failure // the worker did not finish its start in time
	exited         failure // the worker has gone

	budget     string // what its buffer budget holds, for its refusals
	idleLog    string // the log line of an idle binding reaped
	idleWhy    string // what its requests in flight are told
	stopAdvice string // added to why a binding's worker is stopped
	// reapBusy: an idle binding is reaped with requests in flight (a
	// session: its client has left), else only once they are answered.
	reapBusy bool
}

var (
	sessionGen = &generation{
		kind:           WorkerSession,
		db:             func(b DBBudget) int { return b.PerSession },
		tooMany:        errTooManySessions,
		tooManyForUser: errTooManyForUser,
		start:          errWorkerStart,
		timeout:        errWorkerTimeout,
		exited:         errWorkerExited,
		budget:         "one session's responses",
		idleLog:        "gateway: reaping an idle session",
		idleWhy:        "gateway: the session was idle too long",
		stopAdvice:     "; initialize a new session",
		reapBusy:       true,
	}
	userGen = &generation{
		kind:           WorkerUser,
		db:             func(b DBBudget) int { return b.PerUserWorker },
		tooMany:        errTooManyWorkers,
		tooManyForUser: errTooManyForUserW,
		start:          errWorkerStartW,
		timeout:        errWorkerTimeoutW,
		exited:         errWorkerExitedW,
		budget:         "one worker's responses",
		idleLog:        "gateway: stopping an idle per-user worker",
		idleWhy:        "gateway: the worker was idle too long; send the request again",
	}
)

// worker returns the binding's current worker.
func (b *binding) worker() *worker.Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}

// rights returns what the binding's current worker was started with.
func (b *binding) rights() (readOnly bool, tools toolSet) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readOnly, b.tools
}

// started reports whether the binding's start is over, either way.
func (b *binding) started() bool {
	if b.ready == nil {
		return true
	}
	select {
	case <-b.ready:
		return true
	default:
		return false
	}
}

// callee is what a CallEvent says of the binding's worker.
func (b *binding) callee() callee {
	if b.key.session != "" {
		return callee{session: b.id[:8], kind: WorkerSession, pid: b.worker().Pid()}
	}
	return callee{workerKey: b.id, kind: WorkerUser, pid: b.conn.Pid()}
}

// requestsInFlight counts the clients' requests b's worker is working on:
// not the gateway's own subscriptions/listen on a modern worker, which
// stays open while listeners do and is not activity.
func (b *binding) requestsInFlight() int {
	n := b.worker().InFlight()
	b.subs.mu.Lock()
	if b.subs.upstream != nil && !b.subs.upstream.Answered() {
		n--
	}
	b.subs.mu.Unlock()
	return n
}

// newBinding returns the binding of key, not yet admitted.
func (g *Gateway) newBinding(key bindKey) *binding {
	b := &binding{key: key, gen: userGen, readOnly: key.readOnly, tools: key.grant()}
	if key.session != "" {
		b.gen, b.id = sessionGen, key.session
	} else {
		b.id = g.newInstanceID()
	}
	b.db = b.gen.db(g.opts.DB)
	return b
}

// keyOf returns the key of a 2026-07-28 request's per-user worker: its
// principal, user and rights, decided as for a session (docs/design.md,
// Read-only).
func (g *Gateway) keyOf(c *call) bindKey {
	k := bindKey{server: g.opts.Server, user: g.opts.LocalUser, readOnly: g.opts.ReadOnly, tools: workerproto.AllTools}
	if p := c.principal; p != nil {
		k.owner, k.user, k.readOnly = c.owner, p.UserID, c.readOnly
		k.tools = toolsKey(c.granted)
		// A DPoP key or a client certificate binds sessions, not the
		// user's worker: every request proves its own.
		k.owner.ClientID, k.owner.KeyThumbprint, k.owner.CertThumbprint = "", "", ""
	}
	return k
}

// acquire returns the started per-user worker of key, starting it on the
// key's first request, and marks it busy; release ends that. On a refusal
// it returns the failure to answer with.
func (g *Gateway) acquire(ctx context.Context, key bindKey, creds credential.Set) (*binding, failure, bool) {
	return g.acquireWorker(ctx, key, creds, false)
}

// acquireWorker is acquire; forSession says that a session is to be
// hosted in the worker, which that does not count (hosted.go).
func (g *Gateway) acquireWorker(ctx context.Context, key bindKey, creds credential.Set, forSession bool) (*binding, failure, bool) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return nil, errShuttingDown, false
	}
	uw := g.bound[key.slot()]
	if uw != nil && uw.started() && uw.credsDue(g.opts.Now()) && !uw.refreshFeed(creds, g.opts.Now()) {
		g.retireLocked(uw)
		uw = nil
	}
	if uw != nil && !uw.counted && !forSession {
		// A worker its sessions started: its first 2026-07-28 request
		// counts it (hosted.go).
		if f, ok := g.countHostLocked(uw); !ok {
			g.mu.Unlock()
			return nil, f, false
		}
	}
	if uw == nil {
		uw = g.newBinding(key)
		uw.creds = creds
		admit := g.admitLocked
		if forSession {
			admit = g.admitHostLocked
		}
		if f, ok := admit(uw); !ok {
			g.mu.Unlock()
			return nil, f, false
		}
		uw.ready = make(chan struct{})
		uw.log = g.log.With("worker", uw.id[:len(g.opts.replicaPrefix())+10], "user", key.user, "read_only", key.readOnly)
		g.bound[key.slot()] = uw
		go g.startWorker(uw)
	}
	uw.busy.Add(1)
	uw.lastUsed.Store(g.opts.Now().UnixNano())
	g.mu.Unlock()
	select {
	case <-uw.ready:
	case <-ctx.Done():
		g.release(uw)
		return nil, failure{}, false // the client has gone: nothing to answer
	}
	if uw.failed {
		g.release(uw)
		return nil, uw.fail, false
	}
	return uw, failure{}, true
}

// admitLocked is the one limit check of a new binding: the gateway is not
// closing or draining, the bindings (live and starting) stay under
// MaxSessions and the principal's under MaxSessionsPerUser, and the
// database budget has b's share, all counted by g.acct (with every gateway
// that shares it). On success the principal is charged. g.mu is held.
func (g *Gateway) admitLocked(b *binding) (failure, bool) {
	who := b.key.principal()
	if f, ok := g.openLocked(); !ok {
		return f, false
	}
	if f, ok := g.acct.take(who, b.db, &g.opts, b.gen); !ok {
		return f, false
	}
	b.counted = true
	// Like a session's: all of the worker's responses together.
	b.buf = newBudget(b.gen.budget, "limits.max_session_buffer_bytes", g.opts.MaxSessionBufferBytes, g.acct.userBuf(who))
	g.inits.Add(1) // under mu, after the closing check: Close's Wait sees it
	return failure{}, true
}

// openLocked says whether the gateway admits new bindings: it is not
// closing or draining. g.mu is held.
func (g *Gateway) openLocked() (failure, bool) {
	switch {
	case g.closing:
		return errShuttingDown, false
	case g.draining:
		return errDraining, false
	}
	return failure{}, true
}

// bindingOf returns the binding kept for key (bindKey.slot), or nil.
func (g *Gateway) bindingOf(key bindKey) *binding {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bound[key.slot()]
}

// remove takes b out of the table and gives its database share back; it
// is idempotent. A per-user worker's key's next request starts a fresh
// worker.
func (g *Gateway) remove(b *binding) {
	if g.removeKeepDB(b) {
		g.mu.Lock()
		g.dbGiveLocked(b.key.principal(), b.db)
		g.mu.Unlock()
	}
}

// removeKeepDB takes b out of the table but keeps its database share, for
// a caller that gives it back once the worker has exited; it reports
// whether it removed b (and so owes the share).
func (g *Gateway) removeKeepDB(b *binding) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.takeLocked(b)
}

// takeLocked is removeKeepDB with g.mu held.
func (g *Gateway) takeLocked(b *binding) bool {
	if g.bound[b.key.slot()] != b {
		return false
	}
	delete(g.bound, b.key.slot())
	if b.counted { // a worker its sessions alone use counts only them
		g.leaveLocked(b.key.principal())
	}
	return true
}

// enter marks b busy for one HTTP request; the returned func ends it.
func (g *Gateway) enter(b *binding) func() {
	b.busy.Add(1)
	b.lastUsed.Store(g.opts.Now().UnixNano())
	return func() { g.release(b) }
}

// release ends one use of b that enter or acquire began.
func (g *Gateway) release(b *binding) {
	b.lastUsed.Store(g.opts.Now().UnixNano())
	if b.busy.Add(-1) == 0 && b.retired.Load() {
		go g.stopRetired(b)
	}
}
