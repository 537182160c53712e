package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// servePOST handles one POST: a JSON-RPC message, or a batch on 2025-03-26
// (MCP 2025-11-25 §Sending Messages to the Server).
func (g *Gateway) servePOST(w http.ResponseWriter, c *call) {
	r := c.r
	if !c.jsonBody {
		errContentType.write(w, nil)
		return
	}
	if !c.jsonOK && !c.sseOK {
		errAcceptPOST.write(w, nil)
		return
	}
	body, f, ok := g.readBody(w, r)
	if !ok {
		if f.isLimit() {
			g.refusedAtEdge(c, nil, g.calleeOf(c), false, f)
		}
		f.write(w, nil)
		return
	}
	msgs, batch, f, ok := parseBody(body)
	if !ok {
		f.write(w, nil)
		return
	}
	// MCP 2026-07-28 §Versioning: the revision is chosen per request.
	version, supported := c.version, c.versionOK
	if version == modernVersion {
		g.serveModern(w, c, msgs, batch)
		return
	}
	firstID := firstRequestID(msgs)
	if !supported {
		unsupportedVersion(version).write(w, firstID)
		return
	}
	if f, refused := legacyBodyRefusal(msgs, version); refused {
		f.write(w, firstID)
		return
	}
	if batch && version != "2025-03-26" {
		errBatchVersion.write(w, firstID)
		return
	}

	sid := r.Header.Get("MCP-Session-Id")
	if hasMethod(msgs, "initialize") {
		switch {
		case batch:
			errInitInBatch.write(w, firstID)
		case sid != "":
			errInitWithSession.write(w, firstID)
		case !msgs[0].IsRequest():
			errInvalid.write(w, nil)
		default:
			g.initialize(w, c, msgs[0])
		}
		return
	}
	s := g.sessionOf(w, c, firstID)
	if s == nil {
		return
	}
	defer g.enter(s)()

	calls := 0
	for _, m := range msgs {
		if m.IsRequest() {
			calls++
		}
	}
	if calls > 0 {
		defer g.calls.enter()() // a drain waits for the answers
	}
	// Read-only is decided per request as well as per session: a token
	// without the write scope gets read-only treatment even on a session a
	// write-scoped token of the same owner opened (docs/design.md, Read-only).
	// The policy is decided per request too: what the token grants, and
	// of that what the session's worker was started with (never more).
	if g.stepUp(w, c, msgs, batch, s.callee()) {
		s.log.Info("gateway: asked a token to step up for a tool")
		return
	}
	if f, ok := g.replaceWorker(c, s); !ok {
		if f.isLimit() {
			for _, m := range msgs {
				if m.IsRequest() {
					g.refusedAtEdge(c, m, s.callee(), g.accessOf(c, s) != readWrite, f)
				}
			}
		}
		f.write(w, firstID)
		return
	}
	_, tools := s.rights()
	c.b, c.conn, c.log = s, s.worker(), s.log
	c.allowed = c.granted.and(tools)
	c.acc = g.accessOf(c, s)
	conn := c.conn
	// A token that grants less than the session's worker holds (a
	// step-down) may not steer what a wider token's requests do there,
	// as a read-only one may not on a read-write session.
	narrower := c.acc == readOnlyRequest || !c.granted.covers(tools)
	st := worker.NewStream(c.sseOK)
	st.Budget = g.streamBudget(s)
	st.Expect(calls)
	gone := false
	for _, m := range msgs {
		var err error
		switch {
		case m.IsRequest():
			g.forwardTo(c, m, st)
		case m.IsNotification() && !strings.HasPrefix(m.Method, "notifications/"):
			// MCP defines no client notification outside notifications/;
			// a worker that ran, say, an id-less tools/call would bypass
			// the read-only check, which needs a request to answer.
			s.log.Warn("gateway: dropped a client notification that is not notifications/*", "method", clip(m.Method))
		case m.IsNotification() && narrower && m.Method == "notifications/cancelled":
			// Cancelling a write token's request (a commit, say) could roll
			// its work back; the worker cannot tell whose request it was.
			s.log.Info("gateway: dropped a read-only token's cancellation on a read-write session")
		case m.IsNotification():
			err = conn.Notify(m)
		case narrower:
			// A worker's request (sampling, elicitation) may be part of a
			// write request's work, and its ids are small numbers: an
			// answer from a token that may not write could steer or
			// approve it. The worker cannot tell whose request it was.
			s.log.Info("gateway: dropped a read-only token's answer to a worker request on a read-write session")
		default:
			if err = conn.Respond(m); errors.Is(err, worker.ErrUnknownResponse) {
				s.log.Warn("gateway: dropped a client response to no pending worker request", "id", clip(string(m.ID)))
				err = nil
			}
		}
		if errors.Is(err, worker.ErrClosed) {
			gone = true
		}
	}
	if calls == 0 {
		if gone {
			// The worker has gone and nothing was written: say so as
			// the session being gone, which it is.
			errUnknownSession.write(w, nil)
			return
		}
		// MCP §Sending Messages: notifications and responses get 202.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	g.writeStream(w, r, st, c.jsonOK, batchOrder(batch, msgs))
}

// forwardTo sends one client request to the call's worker, applying the
// policy (c.allowed: what the request may reach on this worker; c.granted:
// what its token grants; nil without a policy) and the read-only rules on
// the way (docs/design.md, Read-only), the same for sessions and per-user
// workers: the body as a worker reads it decides, never a header. c.then,
// when set, rewrites the result after the filters. Every tools/call, and
// every refusal, is reported to the observers once answered (observe.go);
// c.callee says which worker it went to.
func (g *Gateway) forwardTo(c *call, m *jsonrpc.Message, st *worker.Stream) {
	var e *CallEvent
	if g.observed && isToolsCall(m) {
		e = g.newEvent(c, m, c.callee(), c.acc != readWrite)
	}
	refused := func(decision string) {
		if g.observed && e == nil {
			e = g.newEvent(c, m, c.callee(), c.acc != readWrite)
		}
		if e != nil {
			e.Decision = decision
			g.watchCall(e, m, st)
		}
	}
	if c.allowed != nil {
		if refusal := policyRefusal(c.log, m, c.allowed, c.granted); refusal != nil {
			refused(DecisionPolicy)
			st.Answer(m.ID, refusal)
			return
		}
	}
	var filters []func(json.RawMessage) json.RawMessage
	list := strings.EqualFold(m.Method, "tools/list")
	if c.acc != readWrite {
		if refusal := g.refuse(c.log, m, c.acc); refusal != nil {
			refused(DecisionReadOnly)
			st.Answer(m.ID, refusal)
			return
		}
		if list {
			filters = append(filters, g.filterTools)
		}
	}
	if c.allowed != nil && list {
		filters = append(filters, filterAllowed(c.allowed))
	}
	if c.then != nil {
		filters = append(filters, c.then)
	}
	if c.outer != nil {
		method := m.Method
		filters = append(filters, func(res json.RawMessage) json.RawMessage { return c.outer(method, res) })
	}
	var rewrite func(json.RawMessage) json.RawMessage
	switch len(filters) {
	case 0:
	case 1:
		rewrite = filters[0]
	default:
		rewrite = func(res json.RawMessage) json.RawMessage {
			for _, f := range filters {
				res = f(res)
			}
			return res
		}
	}
	// One Watch for the request: the audit event and the trace span
	// both see its answer.
	var watchEvent func(*worker.Answer)
	if e != nil {
		watchEvent = g.callWatcher(e)
	}
	m, endSpan := g.traced(c.r, m)
	st.Watch(m.ID, watchEvent, endSpan)
	c.conn.Call(m, progressToken(m), st, rewrite)
}

// traced passes a request on its way to a worker through Options.Trace; it
// returns the request to forward and the callback that ends its span (nil
// without tracing), for the request's one Watch.
func (g *Gateway) traced(r *http.Request, m *jsonrpc.Message) (*jsonrpc.Message, func(*worker.Answer)) {
	if g.opts.Trace == nil {
		return m, nil
	}
	out, end := g.opts.Trace(r.Context(), m)
	if out == nil {
		return m, end
	}
	return out, end
}

// readBody reads a POST body within MaxBodyBytes and BodyReadTimeout. A
// declared length over the limit is refused before reading anything. On a
// refusal the connection is closed after the answer, so that net/http does
// not try to drain the rest of a body that is too big or too slow.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, failure, bool) {
	limit := g.opts.MaxBodyBytes
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, errTooLarge, false
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.opts.BodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	// BodyReadTimeout is as long as WriteTimeout by default: the answer, a
	// 408 included, needs a fresh write deadline.
	g.freshWriteDeadline(w)
	if err != nil {
		w.Header().Set("Connection", "close")
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, errTooLarge, false
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, errBodyTimeout, false
		}
		return nil, errBodyRead, false
	}
	// The body is in: a long answer may now take its time.
	_ = rc.SetReadDeadline(time.Time{})
	return body, failure{}, true
}

// freshWriteDeadline gives what is written next a full WriteTimeout. After
// a wait the request could not shorten (its body coming in, a worker's
// start), the deadline it began with may have passed, and an answer written
// under it, a 408 or a 504, would be lost.
func (g *Gateway) freshWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.opts.WriteTimeout))
}

// parseBody decodes one message or a batch: -32700 for JSON that does not
// parse, -32600 for JSON that is not JSON-RPC 2.0.
func parseBody(body []byte) (msgs []*jsonrpc.Message, batch bool, f failure, ok bool) {
	msgs, batch, err := jsonrpc.DecodeBody(body)
	switch {
	case err == nil:
		return msgs, batch, failure{}, true
	case errors.Is(err, jsonrpc.ErrParse):
		return nil, batch, errParse, false
	case errors.Is(err, jsonrpc.ErrEmptyBatch):
		return nil, batch, errEmptyBatch, false
	}
	return nil, batch, errInvalid, false
}

// legacyBodyRefusal is the answer to a body, sent under the 2025
// revision version, that only 2026-07-28 can serve; false when there is
// none.
func legacyBodyRefusal(msgs []*jsonrpc.Message, version string) (failure, bool) {
	switch {
	case bodyMetaVersion(msgs) != "" && bodyMetaVersion(msgs) != version:
		// The body names another revision than the header (say 2026-07-28
		// under a session's header): a header never says less than the body.
		return errModernHeaderAbsent, true
	case hasMethod(msgs, "server/discover"):
		// server/discover exists only in 2026-07-28: tell the client so.
		return discoverNeedsModern(version), true
	}
	return failure{}, false
}

func hasMethod(msgs []*jsonrpc.Message, method string) bool {
	for _, m := range msgs {
		if m.Method == method {
			return true
		}
	}
	return false
}

// batchOrder returns, for a batch, the request ids in order, so that held
// answers go out in the order of their requests; nil for a single message.
func batchOrder(batch bool, msgs []*jsonrpc.Message) []string {
	if !batch {
		return nil
	}
	order := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m.IsRequest() {
			order = append(order, jsonrpc.Key(m.ID))
		}
	}
	return order
}

// firstRequestID returns the id of the first request, for error answers.
func firstRequestID(msgs []*jsonrpc.Message) json.RawMessage {
	for _, m := range msgs {
		if m.IsRequest() {
			return m.ID
		}
	}
	return nil
}
