package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// inputCaps are the client capabilities a 2025 worker can ask for during a
// request, in the order capsKeyOf lists them.
var inputCaps = []string{"elicitation", "roots", "sampling"}

// capsKeyOf is the bindKey caps of a 2026-07-28 request: the capabilities
// of inputCaps its _meta clientCapabilities declares (as inputRequester
// reads them: present is declared), comma-separated, with
// "elicitation.url" for an elicitation capability that names url.
func capsKeyOf(params json.RawMessage) string {
	caps, _ := jsonrpc.Member(mustMeta(params), metaClientCapabilities)
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

// acquire returns the started per-user worker of key, starting it on the
// key's first request, and marks it busy; release ends that. On a refusal
// it returns the failure to answer with.
func (g *Gateway) acquire(ctx context.Context, key bindKey) (*binding, failure, bool) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return nil, errShuttingDown, false
	}
	uw := g.bound[key.slot()]
	if uw == nil {
		uw = g.newBinding(key)
		if f, ok := g.admitLocked(uw); !ok {
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
	conn, err := g.launcher.Start(worker.Session{User: uw.key.user, ID: uw.id, ReadOnly: uw.key.readOnly, Tools: uw.key.grant().list(), Scope: worker.ScopeUser},
		worker.ConnConfig{
			Logger: uw.log,
			OnExit: func() {
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
		fail(uw.gen.start)
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

// keyOf returns the pool key of a request: its principal, user and
// read-only flag, decided as for a session (docs/design.md, Read-only).
func (g *Gateway) keyOf(c *call) bindKey {
	k := bindKey{user: g.opts.LocalUser, readOnly: g.opts.ReadOnly, tools: worker.AllTools}
	if p := c.principal; p != nil {
		k.owner, k.user, k.readOnly = p.Owner(), p.UserID, g.readOnly(c)
		k.tools = toolsKey(c.granted)
		k.owner.ClientID = ""
	}
	return k
}

// PerUserWorkers returns the number of per-user (2026-07-28) workers,
// starting ones included.
func (g *Gateway) PerUserWorkers() int {
	return g.count(userGen)
}

// newStream returns the stream of one client request to uw: SSE when the
// client accepts it, never a request of the worker's own (MCP 2026-07-28
// §Receiving Messages), its bytes charged to uw's budget.
func (g *Gateway) newStream(uw *binding, sseOK bool) *worker.Stream {
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
