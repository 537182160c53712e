package gateway

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// maxParked bounds the requests of one 2025 worker waiting for a client's
// retry with inputResponses; one more input request is refused to the
// worker.
const maxParked = 64

// inputMethods are the requests a 2025 worker may send during a client
// request, each with the client capability it needs, that the gateway turns
// into a 2026-07-28 input request (MCP 2026-07-28 §Multi Round-Trip
// Requests).
var inputMethods = map[string]string{
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// mrtrMethods are the client requests that may get an InputRequiredResult.
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// parkedCall is a client request in flight in a 2025 worker that asked the
// client something: its HTTP response ended with an input_required result,
// and the worker's call waits for the retry that carries the answer.
type parkedCall struct {
	method, name string          // the original request's method and params name/uri
	st           *worker.Stream  // the stream the worker's call is bound to
	id           json.RawMessage // the client's id of that stream's request
	key          string          // the worker's request, as the client answers it
	input        json.RawMessage // the input request {method, params}
	timer        *time.Timer     // gives up when no retry comes
}

// parking holds one worker's parked calls by requestState.
type parking struct {
	mu    sync.Mutex
	calls map[string]*parkedCall
}

func (p *parking) put(state string, pc *parkedCall) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]*parkedCall{}
	}
	if len(p.calls) >= maxParked {
		return false
	}
	p.calls[state] = pc
	return true
}

// clear drops every parked call and stops its timer: the worker has gone.
func (p *parking) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for state, pc := range p.calls {
		if pc.timer != nil {
			pc.timer.Stop()
		}
		delete(p.calls, state)
	}
}

func (p *parking) take(state string) *parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.calls[state]
	delete(p.calls, state)
	return pc
}

// inputRequester returns the OnRequest hook of a modern request's stream st
// to a 2025 worker: a sampling, elicitation or roots request of the worker's
// becomes the answer to the client's request id, an input_required result
// whose requestState names the parked call. A request the client did not
// declare the capability for, or any other, is refused to the worker.
func (g *Gateway) inputRequester(uw *userWorker, m *jsonrpc.Message, caps json.RawMessage, st *worker.Stream) func(*jsonrpc.Message, string) bool {
	name, _ := exactString(m.Params, nameMember(m.Method))
	return func(req *jsonrpc.Message, key string) bool {
		cap, ok := inputMethods[req.Method]
		if !ok {
			return false
		}
		if v, ok := exactMember(caps, cap); !ok || v == nil {
			// MCP 2026-07-28: a request that needs a capability the client
			// did not declare gets MissingRequiredClientCapabilityError.
			uw.log.Info("gateway: the worker needs a client capability the 2026-07-28 client did not declare", "method", req.Method)
			st.Answer(m.ID, jsonrpc.ErrorResponse(m.ID, jsonrpc.ErrorObject{
				Code:    jsonrpc.CodeMissingRequiredClientCapability,
				Message: "gateway: this request needs the client capability " + quote(cap) + ", which the request's _meta did not declare",
				Data:    map[string]any{"requiredCapabilities": map[string]any{cap: map[string]any{}}},
			}))
			// Forget the call first, so the worker's answer to it (after the
			// refusal below) cannot reach st a second time.
			uw.conn.Abandon(st)
			uw.conn.Refuse(key, "gateway: the client did not declare the "+cap+" capability")
			return true
		}
		input, err := jsonrpc.Marshal(map[string]json.RawMessage{"method": mustMarshal(req.Method), "params": req.Params})
		if err != nil {
			return false
		}
		return g.park(uw, &parkedCall{method: m.Method, name: name, st: st, id: m.ID, key: key, input: input})
	}
}

// park files pc under a fresh requestState and answers its client request
// with the input_required result.
func (g *Gateway) park(uw *userWorker, pc *parkedCall) bool {
	state := newSessionID()
	st, key := pc.st, pc.key
	// Set before pc is filed, so that whoever takes it sees the timer.
	pc.timer = time.AfterFunc(g.opts.SessionIdleTimeout, func() {
		if uw.parked.take(state) != nil {
			uw.conn.Abandon(st)
			uw.conn.Refuse(key, "gateway: the client did not answer the input request in time")
		}
	})
	if !uw.parked.put(state, pc) {
		pc.timer.Stop()
		uw.log.Warn("gateway: too many requests waiting for input; refused one to the worker", "limit", maxParked)
		return false
	}
	inputs, _ := jsonrpc.Marshal(map[string]json.RawMessage{pc.key: pc.input})
	res, _ := jsonrpc.Marshal(map[string]json.RawMessage{
		"resultType":    json.RawMessage(`"input_required"`),
		"inputRequests": inputs,
		"requestState":  mustMarshal(state),
	})
	pc.st.Answer(pc.id, resultResponse(pc.id, annotate(uw, pc.method, res)))
	return true
}

// resume serves the retry of a parked call (MCP 2026-07-28 §Multi Round-Trip
// Requests): the client's inputResponses answer the worker's request, and
// the worker's answer to the original call comes back on this request.
// It reports false, having written nothing, when state is not one the
// gateway minted for this worker: then it is the worker's own (a 2025
// server may use the same fields) and the request is forwarded as it is.
func (g *Gateway) resume(w http.ResponseWriter, r *http.Request, uw *userWorker, m *jsonrpc.Message, meta modernMeta, caps json.RawMessage, state string, jsonOK, sseOK bool) bool {
	pc := uw.parked.take(state)
	if pc == nil {
		return false
	}
	pc.timer.Stop()
	name, _ := exactString(m.Params, nameMember(m.Method))
	if m.Method != pc.method || name != pc.name {
		uw.conn.Abandon(pc.st)
		uw.conn.Refuse(pc.key, "gateway: the client's retry named another request")
		f := failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: requestState belongs to another request; send the request again without it", nil}
		g.refusedInvalid(r, m, f)
		f.write(w, m.ID)
		return true
	}
	var answer json.RawMessage
	if responses, ok := exactMember(m.Params, "inputResponses"); ok && responses != nil {
		answer, _ = exactMember(responses, pc.key)
	}
	st := g.newStream(uw, sseOK)
	st.Keep = logFilter(meta.logLevel)
	st.OnRequest = g.inputRequester(uw, m, caps, st)
	st.Expect(1)
	var e *CallEvent
	if g.observed && isToolsCall(m) {
		// The retry carries the call's answer: its own event (the first
		// request's ended with inputRequired).
		e = g.newEvent(r, m, uw.callee(), uw.key.readOnly)
		g.watchCall(e, m, st)
	}
	if !uw.conn.Retarget(pc.st, st, m.ID) {
		uw.conn.Refuse(pc.key, "gateway: the request ended before the client answered")
		st.Answer(m.ID, errWorkerExitedW.body(m.ID)) // settles the event
		errWorkerExitedW.write(w, m.ID)
		return true
	}
	if answer == nil {
		// MRTR: a retry without the answer gets the question again.
		pc.st, pc.id = st, m.ID
		if !g.park(uw, pc) {
			if e != nil {
				e.Decision, e.Status = DecisionLimit, errTooManyParked.status
			}
			uw.conn.CancelStream(st)
			uw.conn.Refuse(pc.key, "gateway: too many requests waiting for input")
			errTooManyParked.write(w, m.ID)
			return true
		}
		g.writeStream(&modernStatusWriter{ResponseWriter: w}, r, st, jsonOK, nil)
		return true
	}
	if err := uw.conn.Respond(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(pc.key), Result: answer}); err != nil {
		uw.conn.CancelStream(st)
		errWorkerExitedW.write(w, m.ID)
		return true
	}
	g.writeStream(&modernStatusWriter{ResponseWriter: w}, r, st, jsonOK, nil)
	if !st.Answered() {
		uw.conn.CancelStream(st)
	}
	return true
}

func mustMarshal(v any) json.RawMessage {
	b, _ := jsonrpc.Marshal(v)
	return b
}
