package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/workerproto"
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
	for _, h := range c.takeHosted() {
		h.end(exit, limit)
	}
	c.end(exit, limit)
}

// end settles c once its worker has gone (exit, limit: how) or, for a
// hosted session, once the session is over: every request still in flight
// is answered with why, the standalone stream ends, OnExit runs, Done is
// closed.
func (c *Conn) end(exit error, limit string) {
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

	switch {
	case c.host != nil:
		c.log.Info("worker: a hosted session ended", "pid", c.Pid(), "reason", kind)
	case limit != "":
		c.log.Warn("worker exited over a limit", "pid", c.Pid(), "status", ExitDescription(exit), "limit", limit, "reason", kind)
	default:
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
	if c.framed {
		c.demux(line)
		return
	}
	c.handleMessage(line, own)
}

// handleMessage is handle for one JSON-RPC message.
func (c *Conn) handleMessage(line, own []byte) {
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
	m, marked := takeMarker(m)
	c.mu.Lock()
	c.nextID++
	key := strconv.FormatInt(c.nextID, 10)
	c.outReqs[key] = m.ID
	c.workerOut[jsonrpc.Key(m.ID)] = key
	s := c.routeLocked("", marked)
	c.mu.Unlock()

	if s != nil && s.NoRequests && s.OnRequest != nil && s.OnRequest(m, key) {
		return // the stream's owner took it (MCP 2026-07-28: an input request)
	}
	data, err := m.EncodeWithID(json.RawMessage(key))
	if err == nil && s != nil && !s.NoRequests && s.live() && s.push(Outgoing{Data: data}) {
		return
	}
	// Nowhere to deliver it: tell the worker, rather than leave it waiting.
	c.mu.Lock()
	delete(c.outReqs, key)
	delete(c.workerOut, jsonrpc.Key(m.ID))
	c.mu.Unlock()
	_ = c.write(internalError(m.ID,
		"gateway: no client stream is open to carry this request", KindNoStream))
}

// notification routes a notification the worker sends the client.
func (c *Conn) notification(m *jsonrpc.Message) {
	m, marked := takeMarker(m)
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
	s := c.routeLocked(token, marked)
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
	if err != nil || s == nil || !s.live() || !s.push(Outgoing{Data: data}) {
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

// routeLocked picks the one stream for a message of the worker's own
// (docs/design.md, Routing worker messages), by what ties it to a request: the progress
// token it carries (token), or the marker of the call it names (marked, a
// gateway id; see workerproto.MetaRequest). A message that names a request no longer
// in flight belongs to none. One that names none goes to the only request
// in flight, when there is exactly one (a call waiting for its client's
// MRTR retry counts only when no other runs), else to the standalone GET stream
// (MCP 2025-11-25 §Listening for Messages from the Server), else nowhere:
// with several requests in flight, a message that cannot be attributed is
// dropped rather than sent to a request it may not belong to (a worker's
// request then gets an error answer). Never two streams (§Multiple
// Connections). nil means none takes it. The stream returned may no longer
// be able to carry a message (Stream.live): a request's OnRequest hook is
// still offered it (a parked call's late question).
func (c *Conn) routeLocked(token string, marked int64) *Stream {
	switch {
	case token != "":
		if gid, ok := c.progress[token]; ok {
			return c.calls[gid].stream
		}
		return nil
	case marked != 0:
		if cl := c.calls[marked]; cl != nil {
			return cl.stream
		}
		return nil
	}
	// A call whose stream the gateway has already answered (an
	// input_required result: the worker's call waits for the client's
	// retry) is over as far as its client knows: it does not make another
	// call's message ambiguous, and gets a message only when no other
	// call runs.
	var only, parked *call
	running, waiting := 0, 0
	for _, cl := range c.calls {
		if cl.stream.Answered() {
			waiting++
			parked = cl
		} else {
			running++
			only = cl
		}
	}
	if running == 0 && waiting == 1 {
		only = parked
	}
	if (running == 1 || (running == 0 && waiting == 1)) && (only.stream.live() || only.stream.OnRequest != nil) {
		return only.stream
	}
	if c.standalone != nil && c.standalone.live() {
		return c.standalone
	}
	return nil
}

// takeMarker returns m without its workerproto.MetaRequest marker, and the gateway id
// the marker names (0 when m has none, or one that names no gateway id).
func takeMarker(m *jsonrpc.Message) (*jsonrpc.Message, int64) {
	// A name with a JSON escape (io.mcpgate\/requestId) is the same member
	// to every decoder: only params without the name and without any
	// escape skip the decoding.
	if len(m.Params) == 0 || (!bytes.Contains(m.Params, []byte(workerproto.MetaRequest)) && bytes.IndexByte(m.Params, '\\') < 0) {
		return m, 0 // the common case, without decoding
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return m, 0
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil || meta[workerproto.MetaRequest] == nil {
		return m, 0
	}
	gid, err := strconv.ParseInt(string(bytes.TrimSpace(meta[workerproto.MetaRequest])), 10, 64)
	if err != nil || gid <= 0 {
		gid = -1 // a marker the gateway did not give: names no request
	}
	delete(meta, workerproto.MetaRequest)
	if len(meta) == 0 {
		delete(params, "_meta")
	} else if params["_meta"], err = jsonrpc.Marshal(meta); err != nil {
		return m, gid
	}
	p, err := jsonrpc.Marshal(params)
	if err != nil {
		return m, gid
	}
	return m.WithParams(p), gid
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
