package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// run reads the worker's messages until its stdout ends, then settles every
// request still in flight and reports the exit.
func (c *Conn) run() {
	if err := c.proc.readLoop(c.handle, c.tooLong, c.onIdle); err != nil {
		c.log.Warn("worker: protocol error, stopping", "pid", c.Pid(), "err", err)
	}
	// Stdout is gone: a worker that closed it but lives on is of no use.
	ctx, cancel := context.WithTimeout(context.Background(), c.grace+10*time.Second)
	if err := c.proc.Stop(ctx, c.grace); err != nil {
		c.log.Error("worker: stop", "pid", c.Pid(), "err", err)
	}
	cancel()
	exit, limit := c.proc.ExitErr(), c.proc.Limit()

	c.mu.Lock()
	c.closed = true
	if c.endKind == "" {
		c.endKind = KindWorkerExited
		c.endMsg = fmt.Sprintf("gateway: the worker process exited (%s) before answering; %s", ExitDescription(exit), c.exitAdvice)
		if limit != "" {
			c.endLimit = limit
			c.endMsg = fmt.Sprintf("gateway: the worker process was stopped by its limit worker.limits.%s (%s) before answering (ask the operator if the limit is too low); %s", limit, ExitDescription(exit), c.exitAdvice)
		}
	}
	calls, standalone := c.calls, c.standalone
	c.calls, c.byClient, c.progress, c.standalone = nil, nil, nil, nil
	kind, msg := c.endKind, c.endMsg
	c.mu.Unlock()

	if limit != "" {
		c.log.Warn("worker exited over a limit", "pid", c.Pid(), "status", ExitDescription(exit), "limit", limit, "reason", kind)
	} else {
		c.log.Info("worker exited", "pid", c.Pid(), "status", ExitDescription(exit), "reason", kind)
	}
	// Report the exit first, so that a client that reads the error below
	// and tries again finds the session gone.
	if c.onExit != nil {
		c.onExit()
	}
	for _, cl := range calls {
		cl.stream.Answer(cl.clientID, exitError(cl.clientID, msg, kind, c.endLimit))
	}
	if standalone != nil {
		standalone.end()
	}
	close(c.done)
}

// handle takes one line from the worker; own, when not nil, is the line's
// own buffer, which an answer may be written into (see Process.ReadLoop).
func (c *Conn) handle(line, own []byte) {
	m, err := jsonrpc.Decode(line)
	if err != nil || m.Validate() != nil {
		c.proc.Logf(slog.LevelWarn, "worker: dropped a line that is not JSON-RPC 2.0", "bytes", len(line))
		return
	}
	if !m.IsResponse() {
		// line is the reader's buffer: what outlives this call (the
		// worker's id, a notification queued on a stream) needs its own.
		m.Own()
	}
	switch {
	case m.IsResponse():
		c.answer(m, own)
	case m.IsRequest():
		c.request(m)
	default:
		c.notification(m)
	}
}

// answer delivers the worker's answer to a client request. own, when not
// nil, is the buffer m was read into, which the answer may keep: a long
// result is then written to the client from where it was read, with the
// client's id spliced in before it, not copied once more.
func (c *Conn) answer(m *jsonrpc.Message, own []byte) {
	gid, err := strconv.ParseInt(string(m.ID), 10, 64)
	c.mu.Lock()
	cl := c.calls[gid]
	if err == nil && cl != nil {
		c.forgetLocked(gid, cl)
	}
	c.mu.Unlock()
	if err != nil || cl == nil {
		// A late answer to a cancelled request, or a worker error with a
		// null id (e.g. a parse error): no client request to pin it to.
		c.log.Debug("worker: dropped an answer to no request in flight", "pid", c.Pid(), "id", string(m.ID))
		return
	}
	out := Outgoing{Response: true, Result: m.Result != nil, ID: cl.clientID}
	if cl.rewrite != nil && m.Result != nil {
		// The rewrite (the read-only tools/list filter) may take a while
		// on a large answer: it runs when the client's handler takes the
		// answer, so that this reader goes on serving the session's other
		// streams meanwhile.
		m.Own()
		out.encode = func() []byte { return encodeAnswer(m.WithResult(cl.rewrite(m.Result)), cl.clientID) }
		out.size, out.result = len(m.Result), m.Result
	} else if data, ok := m.AnswerInPlace(own, cl.clientID); ok {
		out.Data = data
	} else {
		out.Data = encodeAnswer(m, cl.clientID) // Encode copies its members
	}
	cl.stream.push(out)
}

// encodeAnswer writes the worker's answer m with the client's id restored.
func encodeAnswer(m *jsonrpc.Message, clientID json.RawMessage) []byte {
	data, err := m.EncodeWithID(clientID)
	if err != nil {
		return internalError(clientID, "gateway: the worker's answer could not be encoded", "")
	}
	return data
}

// request routes a request the worker sends the client.
func (c *Conn) request(m *jsonrpc.Message) {
	c.mu.Lock()
	c.nextID++
	key := strconv.FormatInt(c.nextID, 10)
	c.outReqs[key] = m.ID
	c.workerOut[jsonrpc.Key(m.ID)] = key
	s := c.routeLocked("")
	c.mu.Unlock()

	if s != nil && s.NoRequests && s.OnRequest != nil && s.OnRequest(m, key) {
		return // the stream's owner took it (MCP 2026-07-28: an input request)
	}
	data, err := m.EncodeWithID(json.RawMessage(key))
	if err == nil && s != nil && !s.NoRequests && s.push(Outgoing{Data: data}) {
		return
	}
	// Nowhere to deliver it: tell the worker, rather than leave it waiting.
	c.mu.Lock()
	delete(c.outReqs, key)
	delete(c.workerOut, jsonrpc.Key(m.ID))
	c.mu.Unlock()
	_ = c.proc.Send(internalError(m.ID,
		"gateway: no client stream is open to carry this request", KindNoStream))
}

// notification routes a notification the worker sends the client.
func (c *Conn) notification(m *jsonrpc.Message) {
	if c.onNote != nil && c.onNote(m) {
		return
	}
	var token string
	switch m.Method {
	case "notifications/progress":
		var p struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.ProgressToken != nil {
			token = jsonrpc.Key(p.ProgressToken)
		}
	case "notifications/cancelled":
		// The worker gives up on its own request: name it by the id the
		// client saw.
		var params map[string]json.RawMessage
		if json.Unmarshal(m.Params, &params) == nil && params["requestId"] != nil {
			c.mu.Lock()
			key, ok := c.workerOut[jsonrpc.Key(params["requestId"])]
			c.mu.Unlock()
			if ok {
				params["requestId"] = json.RawMessage(key)
				p, _ := jsonrpc.Marshal(params)
				m = m.WithParams(p)
			}
		}
	}
	c.mu.Lock()
	s := c.routeLocked(token)
	var orig json.RawMessage
	if gid, ok := c.progress[token]; ok && token != "" && c.calls[gid] != nil {
		orig = c.calls[gid].orig
	}
	c.mu.Unlock()
	if orig != nil {
		m = restoreProgressToken(m, orig)
	}
	if s != nil && s.Keep != nil && !s.Keep(m) {
		return
	}
	data, err := m.Encode()
	if err != nil || s == nil || !s.push(Outgoing{Data: data}) {
		c.log.Debug("worker: dropped a notification with no stream to carry it", "pid", c.Pid(), "method", m.Method)
	}
}

// internalError is the -32603 answer the gateway gives in a worker's place,
// with data.kind saying why (none when kind is empty).
func internalError(id json.RawMessage, msg, kind string) []byte {
	e := jsonrpc.ErrorObject{Code: jsonrpc.CodeInternalError, Message: msg}
	if kind != "" {
		e.Data = map[string]string{"kind": kind}
	}
	return jsonrpc.ErrorResponse(id, e)
}

// routeLocked picks the one stream for a message of the worker's own (DESIGN,
// "Protocol facts"): the stream of the request whose progress token it
// carries; else the stream of the only request in flight; else the
// standalone GET stream; else the oldest request's stream. Never two
// streams (MCP 2025-11-25 §Multiple Connections). nil means none can take it.
func (c *Conn) routeLocked(token string) *Stream {
	if token != "" {
		if gid, ok := c.progress[token]; ok && c.calls[gid].stream.live() {
			return c.calls[gid].stream
		}
	}
	if len(c.calls) == 1 {
		for _, cl := range c.calls {
			if cl.stream.live() {
				return cl.stream
			}
		}
	}
	if c.standalone != nil && c.standalone.live() {
		return c.standalone
	}
	var oldest int64
	for gid, cl := range c.calls {
		if (oldest == 0 || gid < oldest) && cl.stream.live() {
			oldest = gid
		}
	}
	if oldest != 0 {
		return c.calls[oldest].stream
	}
	return nil
}

// exitError is the -32603 answer for a request the worker's end cut off:
// data.kind says why, and data.limit names the worker limit
// (worker.limits.<limit>) that stopped it, when one did.
func exitError(id json.RawMessage, msg, kind, limit string) []byte {
	if limit == "" {
		return internalError(id, msg, kind)
	}
	return jsonrpc.ErrorResponse(id, jsonrpc.ErrorObject{Code: jsonrpc.CodeInternalError, Message: msg,
		Data: map[string]string{"kind": kind, "limit": limit}})
}
