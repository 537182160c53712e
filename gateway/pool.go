package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// poolKey names the worker that serves a 2026-07-28 request: one per
// principal, user id and rights: the read-only flag and, under auth.policies,
// the tools the token grants (docs/design.md, Worker per key). Two users never share a
// worker, nor do two requests of one user with different rights: a token
// that grants more simply reaches another worker (the step-up needs
// nothing else), one that grants less never reaches a wider one.
//
// The key is the principal's Owner without its client id: the clients of
// one user share the user's worker (a session, by contrast, is one
// client's), since its state is the user's, reached with the user's rights.
type poolKey struct {
	owner    auth.Owner // auth.Principal.Owner() without ClientID and thumbprints; zero in localhost mode
	user     string
	readOnly bool
	tools    string // the granted tools, sorted, comma-separated; worker.AllTools without a policy
	// caps, for a worker that speaks only 2025-11-25, is the set of client
	// capabilities the gateway's initialize declares to it (capsKeyOf):
	// those the request's client declared, so that the worker never asks,
	// or runs a tool that needs, what the client cannot give. Empty for a
	// worker that speaks 2026-07-28 (it reads each request's own).
	caps string
}

// inputCaps are the client capabilities a 2025 worker can ask for during a
// request, in the order capsKeyOf lists them.
var inputCaps = []string{"elicitation", "roots", "sampling"}

// capsKeyOf is the poolKey caps of a 2026-07-28 request: the capabilities
// of inputCaps its _meta clientCapabilities declares (as inputRequester
// reads them: present is declared), comma-separated, with
// "elicitation.url" for an elicitation capability that names url.
func capsKeyOf(params json.RawMessage) string {
	caps, _ := exactMember(mustMeta(params), metaClientCapabilities)
	var out []string
	for _, c := range inputCaps {
		v, ok := exactMember(caps, c)
		if !ok || v == nil {
			continue
		}
		out = append(out, c)
		if c == "elicitation" {
			if u, ok := exactMember(v, "url"); ok && u != nil {
				out = append(out, "elicitation.url")
			}
		}
	}
	return strings.Join(out, ",")
}

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

// toolsKey is a toolSet as a poolKey's tools.
func toolsKey(t toolSet) string {
	if t == nil {
		return worker.AllTools
	}
	return strings.Join(t.list(), ",")
}

// grant is the toolSet of k's tools.
func (k poolKey) grant() toolSet {
	switch k.tools {
	case worker.AllTools:
		return nil
	case "":
		return toolSet{}
	}
	return set(strings.Split(k.tools, ","))
}

// userWorker is the worker of one poolKey, shared by all of that key's
// concurrent 2026-07-28 requests (multiplexed by rewritten ids).
type userWorker struct {
	key   poolKey
	id    string // worker instance id, handed to the worker as its session id
	log   *slog.Logger
	conn  *worker.Conn
	ready chan struct{} // closed when the handshake is over, either way

	// Set before ready is closed, read-only after.
	fail       failure         // why the start failed; zero when it did not
	failed     bool            //
	modern     bool            // the worker answers 2026-07-28 requests itself
	serverInfo json.RawMessage // the worker's identity (Implementation)
	discover   json.RawMessage // the worker's DiscoverResult (modern), or one built from initialize

	buf *budget // bytes held for the worker's responses, under its user's

	lastUsed atomic.Int64 // unix nanoseconds by Options.Now
	busy     atomic.Int32 // HTTP requests being served, listen streams included

	headers headerTable // x-mcp-header bindings of the worker's tools
	subs    subscriptions
	parked  parking // 2025 worker: calls waiting for a client's inputResponses

	stop exitReason // why the gateway stops the worker
}

// acquire returns the started worker of key, starting it on the key's first
// request, and marks it busy; release ends that. On a refusal it returns the
// failure to answer with.
func (g *Gateway) acquire(ctx context.Context, key poolKey) (*userWorker, failure, bool) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return nil, errShuttingDown, false
	}
	uw := g.workers[key]
	if uw == nil {
		switch {
		case g.draining:
			g.mu.Unlock()
			return nil, errDraining, false
		case len(g.sessions)+g.starting+len(g.workers) >= g.opts.MaxSessions:
			g.mu.Unlock()
			return nil, errTooManyWorkers, false
		case g.perUser[principalOf(key.owner, key.user)] >= g.opts.MaxSessionsPerUser:
			g.mu.Unlock()
			return nil, errTooManyForUserW, false
		}
		if f, ok := g.dbTakeLocked(principalOf(key.owner, key.user), g.opts.DB.PerUserWorker); !ok {
			g.mu.Unlock()
			return nil, f, false
		}
		uw = &userWorker{key: key, id: g.newInstanceID(), ready: make(chan struct{})}
		uw.log = g.log.With("worker", uw.id[:len(g.opts.replicaPrefix())+10], "user", key.user, "read_only", key.readOnly)
		g.workers[key] = uw
		g.joinLocked(principalOf(key.owner, key.user))
		// Like a session's: all of the worker's responses together.
		uw.buf = newBudget("one worker's responses", "limits.max_session_buffer_bytes", g.opts.MaxSessionBufferBytes, g.userBufs[principalOf(key.owner, key.user)])
		g.inits.Add(1) // under mu, after the closing check: Close's Wait sees it
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

// release ends one use of uw that acquire began.
func (g *Gateway) release(uw *userWorker) {
	uw.lastUsed.Store(g.opts.Now().UnixNano())
	uw.busy.Add(-1)
}

// removeWorker takes uw out of the pool and gives its database share
// back; it is idempotent. The key's next request starts a fresh worker.
func (g *Gateway) removeWorker(uw *userWorker) {
	if g.removeWorkerKeepDB(uw) {
		g.mu.Lock()
		g.dbGiveLocked(principalOf(uw.key.owner, uw.key.user), g.opts.DB.PerUserWorker)
		g.mu.Unlock()
	}
}

// removeWorkerKeepDB takes uw out of the pool but keeps its database
// share, for a caller that gives it back once the worker has exited; it
// reports whether it removed uw (and so owes the share).
func (g *Gateway) removeWorkerKeepDB(uw *userWorker) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.workers[uw.key] != uw {
		return false
	}
	delete(g.workers, uw.key)
	g.leaveLocked(principalOf(uw.key.owner, uw.key.user))
	return true
}

// startWorker starts uw's process and holds the handshake with it, then
// closes uw.ready.
func (g *Gateway) startWorker(uw *userWorker) {
	defer g.inits.Done()
	defer close(uw.ready)
	fail := func(f failure) {
		uw.fail, uw.failed = f, true
		g.removeWorker(uw)
	}
	started := g.opts.Now()
	conn, err := g.launcher.Start(worker.Session{User: uw.key.user, ID: uw.id, ReadOnly: uw.key.readOnly, Tools: uw.key.grant().list(), Scope: worker.ScopeUser},
		worker.ConnConfig{
			Logger: uw.log,
			OnExit: func() {
				g.removeWorker(uw)
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
		fail(errWorkerStartW)
		return
	}
	uw.conn = conn
	uw.stop.conn.Store(conn)
	uw.log.Info("gateway: per-user worker started", "pid", conn.Pid())

	ctx, cancel := context.WithTimeout(context.Background(), g.opts.WorkerStartTimeout)
	defer cancel()
	go func() {
		select {
		case <-g.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = g.handshake(ctx, uw)
	if err == nil {
		err = uw.headers.load(ctx, uw)
	}
	if err != nil {
		uw.log.Error("gateway: per-user worker handshake failed", "err", err)
		f := errWorkerTimeoutW
		select {
		case <-g.shutdown:
			f = errShuttingDown
		default:
			if !errors.Is(err, context.DeadlineExceeded) {
				f = errWorkerStartW
			}
		}
		fail(f)
		uw.stop.set(ExitStartFailed)
		stopCtx, stop := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
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
		stopCtx, stop := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
		defer stop()
		_ = uw.conn.Close(stopCtx, worker.KindSessionEnded, "gateway: shutting down")
	}
}

// keyOf returns the pool key of a request: its principal, user and
// read-only flag, decided as for a session (docs/design.md, Read-only).
func (g *Gateway) keyOf(r *http.Request) poolKey {
	k := poolKey{user: g.opts.LocalUser, readOnly: g.opts.ReadOnly, tools: worker.AllTools}
	if p := auth.PrincipalFrom(r.Context()); p != nil {
		k.owner, k.user, k.readOnly = p.Owner(), p.UserID, g.opts.ReadOnly || g.readOnlyToken(r)
		k.tools = toolsKey(grantOf(r))
		k.owner.ClientID, k.owner.KeyThumbprint, k.owner.CertThumbprint = "", "", ""
	}
	return k
}

// PerUserWorkers returns the number of live per-user (2026-07-28) workers.
func (g *Gateway) PerUserWorkers() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.workers)
}

// reapIdleWorkers stops every per-user worker that serves no HTTP request,
// has no request in flight and has been idle for longer than
// SessionIdleTimeout.
func (g *Gateway) reapIdleWorkers() {
	now := g.opts.Now().UnixNano()
	limit := g.opts.SessionIdleTimeout.Nanoseconds()
	var idle []*userWorker
	g.mu.Lock()
	for _, uw := range g.workers {
		select {
		case <-uw.ready:
		default:
			continue // starting
		}
		if uw.busy.Load() == 0 && now-uw.lastUsed.Load() > limit && uw.requestsInFlight() == 0 {
			idle = append(idle, uw)
		}
	}
	g.mu.Unlock()
	for _, uw := range idle {
		uw.log.Info("gateway: stopping an idle per-user worker", "idle_timeout", g.opts.SessionIdleTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.launcher.StopGrace()+10*time.Second)
	defer cancel()
	if err := g.stopWorkers(ctx, idle, ExitIdle, "gateway: the worker was idle too long; send the request again"); err != nil {
		g.log.Error("gateway: reaping workers", "err", err)
	}
}

// requestsInFlight counts the clients' requests uw is working on: not the
// gateway's own subscriptions/listen on a modern worker, which stays open
// while listeners do and is not activity.
func (uw *userWorker) requestsInFlight() int {
	n := uw.conn.InFlight()
	uw.subs.mu.Lock()
	if uw.subs.upstream != nil && !uw.subs.upstream.Answered() {
		n--
	}
	uw.subs.mu.Unlock()
	return n
}

// stopWorkers stops per-user workers concurrently and waits; reason is
// why, for the metrics (Exit*).
func (g *Gateway) stopWorkers(ctx context.Context, list []*userWorker, reason, why string) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, uw := range list {
		wg.Go(func() {
			uw.stop.set(reason)
			removed := g.removeWorkerKeepDB(uw)
			uw.subs.closeAll()
			errs[i] = uw.conn.Close(ctx, worker.KindSessionEnded, why)
			// As a session's (endSessions): the share comes back once
			// the worker has exited.
			if removed {
				g.mu.Lock()
				g.dbGiveLocked(principalOf(uw.key.owner, uw.key.user), g.opts.DB.PerUserWorker)
				g.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readyWorkers returns the per-user workers whose start is over and that
// have a process.
func (g *Gateway) readyWorkers() []*userWorker {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := make([]*userWorker, 0, len(g.workers))
	for _, uw := range g.workers {
		select {
		case <-uw.ready:
			if !uw.failed {
				list = append(list, uw)
			}
		default:
		}
	}
	return list
}

// newStream returns the stream of one client request to uw: SSE when the
// client accepts it, never a request of the worker's own (MCP 2026-07-28
// §Receiving Messages), its bytes charged to uw's budget.
func (g *Gateway) newStream(uw *userWorker, sseOK bool) *worker.Stream {
	st := worker.NewStream(sseOK)
	st.NoRequests = true
	st.Budget = newBudget("one response", "limits.max_stream_buffer_bytes", g.opts.MaxStreamBufferBytes, uw.buf)
	return st
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
