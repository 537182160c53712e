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

// maxAsks bounds the questions one parked call may hold; the worker's next
// one is refused to it.
const maxAsks = 16

// parkedCall is a client request in flight in a 2025 worker that asked the
// client something: its HTTP response ends with one input_required result
// listing every question the worker asked at that moment, and the worker's
// call waits for the retry that carries the answers.
type parkedCall struct {
	method, name string          // the original request's method and params name/uri
	st           *worker.Stream  // the stream the worker's call is bound to
	id           json.RawMessage // the client's id of that stream's request
	asks         []ask           // the worker's questions not yet answered
	state        string          // the requestState the client retries with
	sent         bool            // the input_required result has been queued on st
	timer        *time.Timer     // gives up when no retry comes
}

// ask is one request of the worker's, as an input request.
type ask struct {
	key   string          // the worker's request, as the client answers it
	input json.RawMessage // the input request {method, params}
}

// parking holds one worker's parked calls by requestState, and by the
// stream their worker's call is bound to.
type parking struct {
	mu       sync.Mutex
	calls    map[string]*parkedCall
	byStream map[*worker.Stream]*parkedCall
	gather   *time.Timer // runs sendParked once the worker has been quiet for questionQuiet
}

// questionQuiet is how long a 2025 worker must stay silent after its last
// message before the questions it asked go to the client, together, as one
// input_required result. A worker that asks in parallel (the go-sdk's
// compatibility layer does) writes its questions from several goroutines:
// on a loaded machine they come milliseconds apart, and the moment the
// gateway has read all the worker wrote is not the moment the worker has
// asked all it will. The wait is paid once per round trip to a person or a
// model, which takes far longer.
const questionQuiet = 50 * time.Millisecond

// add files the worker's question a for the call bound to st: with the
// call's other questions when it has some, else as a new parked call from
// pc (which then holds a). filed is false, nothing filed, when the worker
// holds too many parked calls or questions; fresh, whether pc was filed
// (else its state and timer are unused).
func (p *parking) add(st *worker.Stream, a ask, pc *parkedCall) (filed, fresh bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls, p.byStream = map[string]*parkedCall{}, map[*worker.Stream]*parkedCall{}
	}
	if old := p.byStream[st]; old != nil {
		if len(old.asks) >= maxAsks {
			return false, false
		}
		old.asks = append(old.asks, a)
		return true, false
	}
	if len(p.calls) >= maxParked {
		return false, false
	}
	pc.asks = []ask{a}
	p.calls[pc.state] = pc
	p.byStream[st] = pc
	return true, true
}

// unsent returns the parked calls whose input_required result is still to
// be queued, and marks them sent.
func (p *parking) unsent() []*parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*parkedCall
	for _, pc := range p.byStream {
		if !pc.sent {
			pc.sent = true
			out = append(out, pc)
		}
	}
	return out
}

// clear drops every parked call and stops its timer: the worker has gone.
func (p *parking) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gather != nil {
		p.gather.Stop()
	}
	for state, pc := range p.calls {
		if pc.timer != nil {
			pc.timer.Stop()
		}
		delete(p.calls, state)
		delete(p.byStream, pc.st)
	}
}

// take removes the parked call of state, or returns nil.
func (p *parking) take(state string) *parkedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.calls[state]
	if pc != nil {
		delete(p.calls, state)
		delete(p.byStream, pc.st)
	}
	return pc
}

// questions returns pc's questions; take them only once pc has been taken.
func (pc *parkedCall) questions() []ask { return pc.asks }

// inputRequester returns the OnRequest hook of a modern request's stream st
// to a 2025 worker: a sampling, elicitation or roots request of the worker's
// becomes part of the answer to the client's request id, an input_required
// result whose requestState names the parked call. A request the client did
// not declare the capability for, or any other, is refused to the worker.
func (g *Gateway) inputRequester(c *call, m *jsonrpc.Message, st *worker.Stream) func(*jsonrpc.Message, string) bool {
	uw, caps, name := c.b, c.meta.caps, c.meta.name
	return func(req *jsonrpc.Message, key string) bool {
		cap, ok := inputMethods[req.Method]
		if !ok {
			return false
		}
		if v, ok := jsonrpc.Member(caps, cap); !ok || v == nil {
			// MCP 2026-07-28: a request that needs a capability the client
			// did not declare gets MissingRequiredClientCapabilityError.
			uw.log.Info("gateway: the worker needs a client capability the 2026-07-28 client did not declare", "method", req.Method)
			if uw.parked.has(st) {
				// The call's other questions are on their way to the
				// client: only this one is refused.
				uw.conn.Refuse(key, "gateway: the client did not declare the "+cap+" capability")
				return true
			}
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
		return g.park(uw, &parkedCall{method: m.Method, name: name, st: st, id: m.ID}, ask{key: key, input: input})
	}
}

// has reports whether the call bound to st has questions filed.
func (p *parking) has(st *worker.Stream) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byStream[st] != nil
}

// park files the worker's question a for pc's call, under pc's fresh
// requestState when the call has no questions filed yet, else beside them.
// The input_required result that answers the call's client request is
// queued by sendParked, once the worker has said all it had to say at that
// moment, so that questions it asks in parallel go out together, in one
// result (MCP 2026-07-28 §Multi Round-Trip Requests: inputRequests is a
// map). A question that comes after the result went out is asked on the
// client's retry.
func (g *Gateway) park(uw *binding, pc *parkedCall, a ask) bool {
	pc.state = newSessionID()
	st := pc.st
	// Set before pc is filed, so that whoever takes it sees the timer.
	pc.timer = time.AfterFunc(g.opts.SessionIdleTimeout, func() {
		if pc := uw.parked.take(pc.state); pc != nil {
			uw.conn.Abandon(st)
			for _, a := range pc.questions() {
				uw.conn.Refuse(a.key, "gateway: the client did not answer the input request in time")
			}
		}
	})
	filed, fresh := uw.parked.add(st, a, pc)
	if !fresh {
		pc.timer.Stop() // the call is parked already, with its own timer
	}
	if !filed {
		uw.log.Warn("gateway: too many requests waiting for input; refused one to the worker", "limit", maxParked, "per_call", maxAsks)
	}
	return filed
}

// gatherParked is the worker's OnIdle hook: the reader has handled all
// the worker wrote so far. When calls have questions waiting, their
// result goes out once the worker has been quiet for questionQuiet; any
// message meanwhile starts the wait again.
func (g *Gateway) gatherParked(uw *binding) {
	p := &uw.parked
	p.mu.Lock()
	defer p.mu.Unlock()
	pending := false
	for _, pc := range p.byStream {
		if !pc.sent {
			pending = true
			break
		}
	}
	switch {
	case !pending:
	case p.gather == nil:
		p.gather = time.AfterFunc(questionQuiet, func() { g.sendParked(uw) })
	default:
		p.gather.Reset(questionQuiet)
	}
}

// sendParked queues the input_required result of every parked call whose
// questions are all in (see gatherParked). A call the worker
// answered meanwhile (its stream has no request left) keeps its answer:
// its questions are refused to the worker instead.
func (g *Gateway) sendParked(uw *binding) {
	for _, pc := range uw.parked.unsent() {
		if pc.st.Answered() {
			if uw.parked.take(pc.state) != nil {
				pc.timer.Stop()
				for _, a := range pc.questions() {
					uw.conn.Refuse(a.key, "gateway: the request ended before the client could answer")
				}
			}
			continue
		}
		uw.parked.mu.Lock()
		inputs := make(map[string]json.RawMessage, len(pc.asks))
		for _, a := range pc.asks {
			inputs[a.key] = a.input
		}
		uw.parked.mu.Unlock()
		in, _ := jsonrpc.Marshal(inputs)
		res, _ := jsonrpc.Marshal(map[string]json.RawMessage{
			"resultType":    json.RawMessage(`"input_required"`),
			"inputRequests": in,
			"requestState":  mustMarshal(pc.state),
		})
		pc.st.Answer(pc.id, resultResponse(pc.id, annotate(uw, pc.method, res)))
	}
}

// resume serves the retry of a parked call (MCP 2026-07-28 §Multi Round-Trip
// Requests): the client's inputResponses answer the worker's requests, and
// the worker's answer to the original call comes back on this request; a
// question the retry does not answer is asked again, in an input_required
// result of its own. It reports false, having written nothing, when state
// is not one the gateway minted for this worker: then it is the worker's
// own (a 2025 server may use the same fields) and the request is forwarded
// as it is.
func (g *Gateway) resume(w http.ResponseWriter, c *call, m *jsonrpc.Message, state string) bool {
	r, uw := c.r, c.b
	pc := uw.parked.take(state)
	if pc == nil {
		return false
	}
	pc.timer.Stop()
	refuse := func(asks []ask, msg string) {
		for _, a := range asks {
			uw.conn.Refuse(a.key, msg)
		}
	}
	name := c.meta.name
	if m.Method != pc.method || name != pc.name {
		uw.conn.Abandon(pc.st)
		refuse(pc.questions(), "gateway: the client's retry named another request")
		f := failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: requestState belongs to another request; send the request again without it", nil}
		g.refusedInvalid(c, m, f)
		f.write(w, m.ID)
		return true
	}
	responses, _ := jsonrpc.Member(m.Params, "inputResponses")
	var answered, open []ask
	answers := map[string]json.RawMessage{}
	for _, a := range pc.questions() {
		var answer json.RawMessage
		if responses != nil {
			answer, _ = jsonrpc.Member(responses, a.key)
		}
		if answer == nil {
			open = append(open, a) // MRTR: a question left unanswered is asked again
			continue
		}
		answered, answers[a.key] = append(answered, a), answer
	}
	st := g.newStream(uw, c.sseOK)
	st.Keep = logFilter(c.meta.logLevel)
	st.OnRequest = g.inputRequester(c, m, st)
	st.Expect(1)
	var e *CallEvent
	if g.observed && isToolsCall(m) {
		// The retry carries the call's answer: its own event (the first
		// request's ended with inputRequired).
		e = g.newEvent(c, m, c.callee(), uw.key.readOnly)
		g.watchCall(e, m, st)
	}
	if !uw.conn.Retarget(pc.st, st, m.ID) {
		refuse(pc.questions(), "gateway: the request ended before the client answered")
		st.Answer(m.ID, errWorkerExitedW.body(m.ID)) // settles the event
		errWorkerExitedW.write(w, m.ID)
		return true
	}
	for i, a := range open {
		if !g.park(uw, &parkedCall{method: pc.method, name: pc.name, st: st, id: m.ID}, a) {
			if e != nil {
				e.Decision, e.Status = DecisionLimit, errTooManyParked.status
			}
			uw.conn.CancelStream(st)
			refuse(open[i:], "gateway: too many requests waiting for input")
			refuse(answered, "gateway: too many requests waiting for input")
			errTooManyParked.write(w, m.ID)
			return true
		}
	}
	for _, a := range answered {
		if err := uw.conn.Respond(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(a.key), Result: answers[a.key]}); err != nil {
			uw.conn.CancelStream(st)
			errWorkerExitedW.write(w, m.ID)
			return true
		}
	}
	if len(open) > 0 {
		g.sendParked(uw) // the questions left go out now, together
	}
	g.writeStream(&modernStatusWriter{ResponseWriter: w}, r, st, c.jsonOK, nil)
	if !st.Answered() {
		uw.conn.CancelStream(st)
	}
	return true
}

func mustMarshal(v any) json.RawMessage {
	b, _ := jsonrpc.Marshal(v)
	return b
}
