package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// serveModern serves one POST of protocol revision 2026-07-28: no session;
// the request runs in the caller's per-user worker (pool.go) after the
// checks of MCP 2026-07-28 §Server Validation.
func (g *Gateway) serveModern(w http.ResponseWriter, c *call, msgs []*jsonrpc.Message, batch bool) {
	r := c.r
	if batch {
		errModernBatch.write(w, firstRequestID(msgs))
		return
	}
	m := msgs[0]
	switch {
	case m.IsResponse():
		errModernResponse.write(w, nil)
		return
	case m.IsNotification():
		// 2026-07-28 defines no client notification on HTTP: closing a
		// response stream is the cancellation (§Cancellation).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	c.meta = readModernMeta(m)
	if f, ok := checkModernHeaders(r, m, c.meta); !ok {
		g.log.Info("gateway: refused a "+modernVersion+" request", "method", clip(m.Method), "reason", f.msg, "remote", r.RemoteAddr)
		g.refusedInvalid(c, m, f)
		f.write(w, m.ID)
		return
	}
	if removedMethods[m.Method] {
		removedMethod(m.Method).write(w, m.ID)
		return
	}
	// A tool the token's policy does not grant, but a policy scope would:
	// 403 before any worker starts. With the new token the request reaches
	// a worker of the new rights (the pool key holds them).
	if g.stepUp(w, c, msgs, false, callee{kind: WorkerUser}) {
		g.log.Info("gateway: asked a token to step up for a tool", "remote", r.RemoteAddr)
		return
	}
	key := g.keyOf(c)
	creds, ok := g.credentialsFor(w, c, m, callee{kind: WorkerUser}, key.readOnly)
	if !ok {
		return
	}
	acquire := func() (*binding, bool) {
		uw, f, ok := g.acquire(r.Context(), key, creds)
		g.freshWriteDeadline(w) // it may have waited for the worker's start
		if !ok && f.status != 0 {
			g.log.Warn("gateway: refused a per-user worker", "user", key.user, "reason", f.msg)
			if f.isLimit() {
				g.refusedAtEdge(c, m, callee{kind: WorkerUser}, key.readOnly, f)
			}
			g.refusedNoAccount(c, m, callee{kind: WorkerUser}, key.readOnly, f)
			f.write(w, m.ID)
		}
		return uw, ok
	}
	// A 2025-only worker is initialized with its clients' capabilities:
	// one per set. Once the server's workers are known to be such, the
	// set is part of the key from the start.
	capsKey := capsKeyOf(c.meta.caps)
	if g.legacyWorkers.Load() {
		key.caps = capsKey
	}
	uw, ok := acquire()
	if !ok {
		return
	}
	if !uw.modern && uw.key.caps != capsKey {
		g.release(uw)
		key.caps = capsKey
		if uw, ok = acquire(); !ok {
			return
		}
	}
	release := sync.OnceFunc(func() { g.release(uw) })
	defer release()
	c.key = key
	c.b, c.conn, c.log = uw, uw.conn, uw.log // a per-user worker's conn is set once, before ready

	switch m.Method {
	case "server/discover":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resultResponse(m.ID, annotate(uw, m.Method, uw.discover)))
		return
	case "subscriptions/listen":
		g.serveListen(w, c, m, release)
		return
	case "tools/call":
		name := c.meta.name // checkModernHeaders refused an ambiguous one
		binds, err := uw.headers.bindings(r.Context(), uw, name)
		if err != nil {
			errWorkerExitedW.write(w, m.ID)
			return
		}
		if f, ok := checkParamHeaders(r, m.Params, binds); !ok {
			uw.log.Info("gateway: refused a tools/call", "tool", clip(name), "reason", f.msg)
			g.refusedInvalid(c, m, f)
			f.write(w, m.ID)
			return
		}
		if m, ok = withHolder(m, holderOf(c.owner)); !ok {
			g.refusedInvalid(c, m, errHolderParams)
			errHolderParams.write(w, m.ID)
			return
		}
	}

	defer g.calls.enter()() // a drain waits for the answer (not for listen streams)
	if !uw.modern && mrtrMethods[m.Method] {
		if c.meta.hasState && g.resume(w, c, m, c.meta.state) {
			return
		}
	}
	if !uw.modern {
		// As a 2025-11-25 client would send it, on the session the
		// gateway initialized.
		if p, ok := worker.StripModernMeta(m.Params); ok {
			m = m.WithParams(p)
		}
	}
	st := g.newStream(uw, c.sseOK)
	if !uw.modern {
		st.Keep = logFilter(c.meta.logLevel)
		if mrtrMethods[m.Method] {
			st.OnRequest = g.inputRequester(c, m, st)
		}
	}
	st.Expect(1)
	c.acc = readWrite
	if key.readOnly {
		// The worker was started read-only: the read-only session rules.
		c.acc = readOnlySession
	}
	c.allowed = c.granted
	method := m.Method
	c.then = func(res json.RawMessage) json.RawMessage { return annotate(uw, method, res) }
	g.forwardTo(c, m, st)
	g.writeStream(&modernStatusWriter{ResponseWriter: w}, r, st, c.jsonOK, nil)
	if !st.Answered() {
		// MCP 2026-07-28 §Cancellation: a closed stream cancels its request.
		uw.conn.CancelStream(st)
	}
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

// cacheable are the methods whose results carry ttlMs and cacheScope (MCP
// 2026-07-28 CacheableResult).
var cacheable = map[string]bool{
	"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true, "server/discover": true,
}

// annotate completes a 2026-07-28 result: resultType "complete" when the
// worker left it out (a 2025 worker always does), the worker's serverInfo in
// _meta, and on cacheable results ttlMs (the worker's, else 0: no freshness
// promise) and cacheScope "private". Every answer comes from the caller's
// own worker and may depend on the caller's token (read-only hides gated
// tools), so no shared cache may keep it. server/discover
// lists the gateway's revisions, not the worker's.
func annotate(uw *binding, method string, result json.RawMessage) json.RawMessage {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil || res == nil {
		return result
	}
	if _, ok := res["resultType"]; !ok {
		res["resultType"] = json.RawMessage(`"complete"`)
		if _, asks := res["inputRequests"]; asks && !uw.modern && mrtrMethods[method] {
			// A 2025 server that already speaks the MRTR shape (its own
			// inputRequests and requestState) only lacks the field.
			res["resultType"] = json.RawMessage(`"input_required"`)
		}
	}
	if len(uw.serverInfo) > 0 && !bytes.Equal(uw.serverInfo, []byte("null")) {
		meta := map[string]json.RawMessage{}
		if raw, ok := res["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
			meta = nil // not an object: leave it alone
		}
		if meta != nil {
			if _, ok := meta[metaServerInfo]; !ok {
				meta[metaServerInfo] = uw.serverInfo
				res["_meta"], _ = jsonrpc.Marshal(meta)
			}
		}
	}
	if cacheable[method] {
		res["cacheScope"] = json.RawMessage(`"private"`)
		if _, ok := res["ttlMs"]; !ok {
			res["ttlMs"] = json.RawMessage(`0`)
		}
	}
	if method == "server/discover" {
		res["supportedVersions"], _ = jsonrpc.Marshal(supportedVersions)
	}
	out, err := jsonrpc.Marshal(res)
	if err != nil {
		return result
	}
	return out
}

// modernStatusWriter gives a 2026-07-28 JSON error answer its HTTP status,
// as the go-sdk does (-32601: 404; -32602, -32020, jsonrpc.CodeMissingRequiredClientCapability, -32022: 400;
// MCP 2026-07-28 §Protocol Version Header). An SSE stream is 200 from its
// start.
type modernStatusWriter struct {
	http.ResponseWriter
	wrote bool
}

func (s *modernStatusWriter) WriteHeader(code int) {
	s.wrote = true
	s.ResponseWriter.WriteHeader(code)
}

func (s *modernStatusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.wrote = true
		if st := modernErrorStatus(b); st != 0 {
			s.ResponseWriter.WriteHeader(st)
		}
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *modernStatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func modernErrorStatus(data []byte) int {
	// The answer is the gateway's own encoding (jsonrpc.Message.Encode),
	// which spells an error member exactly so: one without it is a result,
	// and is not decoded again.
	if !bytes.Contains(data, []byte(`"error"`)) {
		return 0
	}
	m, err := jsonrpc.Decode(data)
	if err != nil || m.Error == nil {
		return 0
	}
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(m.Error, &e) != nil {
		return 0
	}
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, jsonrpc.CodeHeaderMismatch, jsonrpc.CodeMissingRequiredClientCapability, jsonrpc.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return 0
}

// logLevels orders the syslog levels of notifications/message (RFC 5424).
var logLevels = map[string]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}

// logFilter keeps, on the stream of a request to a 2025 worker, the log
// messages at or above the request's _meta logLevel, and none when the
// request set none (MCP 2026-07-28 changelog §Major 5: no notifications/message
// for a request without the field). Other messages pass.
func logFilter(level string) func(*jsonrpc.Message) bool {
	min, set := logLevels[strings.ToLower(level)]
	return func(m *jsonrpc.Message) bool {
		if m.Method != "notifications/message" {
			return true
		}
		if !set {
			return false
		}
		var p struct {
			Level string `json:"level"`
		}
		_ = json.Unmarshal(m.Params, &p)
		l, ok := logLevels[p.Level]
		return ok && l >= min
	}
}
