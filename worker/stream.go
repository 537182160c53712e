package worker

import (
	"encoding/json"
	"sync"

	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Outgoing is one message on its way from a worker to a client.
type Outgoing struct {
	Data     []byte          // the encoded JSON-RPC message, ids already restored
	Response bool            // it answers one of the stream's requests
	Result   bool            // the answer is a result, not an error
	ID       json.RawMessage // the client's request id, for an answer
	// Charged is what the stream's Budget was charged for Data; whoever
	// takes the message from the stream gives it back when done with it.
	Charged int

	// encode, when set, produces Data: Take runs it, on the goroutine that
	// takes the answer rather than the worker's reader (Conn.Call's
	// rewrite). size is what the message holds meanwhile, for the Budget.
	encode func() []byte
	size   int
	result json.RawMessage // the worker's result, for Watch, while encode waits
}

// KindBufferFull is error.data.kind of an answer the gateway replaced
// because the client already had too much waiting to be read.
const KindBufferFull = "bufferFull"

// A Budget bounds the bytes a slow client can make the gateway hold: the
// messages queued on its streams and not yet written.
type Budget interface {
	// Take charges n bytes, or returns an error, safe to show the client,
	// that names the limit n would pass; nothing is charged then.
	Take(n int) error
	// Give returns n bytes taken earlier.
	Give(n int)
}

// Stream is the gateway's end of one HTTP response that carries a worker's
// messages to a client: the answers to a POST's requests and whatever the
// router sends along (MCP 2025-11-25 §Sending Messages to the Server), or the
// standalone GET stream (§Listening for Messages from the Server).
//
// The worker's reader never blocks on a Stream: messages queue until the
// HTTP handler takes them, and are dropped once the handler has gone (a
// client that disconnects does not cancel its request). A client that reads
// too slowly loses non-answers beyond MaxQueuedBytes rather than growing the
// gateway's memory. With a Budget, a message that does not fit is dropped,
// or, for an answer, replaced by a short error of kind KindBufferFull, so
// the request is still answered.
type Stream struct {
	// SSE says the client accepts text/event-stream, so the router may send
	// this stream messages that are not answers.
	SSE bool
	// NoRequests says the stream must not carry requests of the worker's
	// own (MCP 2026-07-28 §Receiving Messages); the router answers such a
	// request to the worker with a noStream error instead.
	NoRequests bool
	// Keep, when set, decides whether a notification of the worker's own
	// that the router picked this stream for is sent (false: dropped).
	Keep func(*jsonrpc.Message) bool
	// OnRequest, when set on a NoRequests stream, is offered a request of
	// the worker's own that the router picked this stream for, with the id
	// key the client must answer it by (Conn.Respond); true means it took
	// the request, false that the worker gets the noStream error.
	OnRequest func(m *jsonrpc.Message, key string) bool
	// Budget, when set before the stream is used, is charged for every
	// message queued (Outgoing.Charged); Detach gives back what is still
	// queued, Take hands the charge to the caller.
	Budget Budget

	mu       sync.Mutex
	queue    []Outgoing
	queued   int  // bytes in queue
	pending  int  // requests not yet answered
	results  int  // answers that were results
	detached bool // the HTTP handler has gone
	ended    bool // the session has ended (standalone stream)
	notify   chan struct{}
	watch    map[string][]func(*Answer) // request id key → Watch callbacks
}

// MaxQueuedBytes bounds the messages other than answers waiting on one
// stream for a slow client.
const MaxQueuedBytes = 32 << 20

// NewStream returns a stream; sse says whether it may carry non-answers.
func NewStream(sse bool) *Stream {
	return &Stream{SSE: sse, notify: make(chan struct{}, 1)}
}

// Ready is signalled when messages are queued or the stream finishes.
func (s *Stream) Ready() <-chan struct{} { return s.notify }

// Take returns the queued messages and whether the stream is finished: every
// request answered (a POST stream), or the session over (either kind). An
// answer still to be rewritten is rewritten here, by the caller.
func (s *Stream) Take(standalone bool) (msgs []Outgoing, finished bool) {
	s.mu.Lock()
	msgs, s.queue, s.queued = s.queue, nil, 0
	finished = s.ended || (!standalone && s.pending == 0)
	s.mu.Unlock()
	for i := range msgs {
		if msgs[i].encode != nil {
			msgs[i].Data, msgs[i].encode = msgs[i].encode(), nil
		}
	}
	return msgs, finished
}

// Answered reports whether every request of the stream has been settled.
func (s *Stream) Answered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending <= 0
}

// Results returns the number of the stream's requests the worker answered
// with a result rather than an error (even if the Budget then replaced the
// answer with a bufferFull error).
func (s *Stream) Results() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.results
}

// Detach tells the stream its HTTP handler has gone; later messages are
// dropped.
func (s *Stream) Detach() {
	s.mu.Lock()
	s.detached = true
	queue := s.queue
	s.queue, s.queued = nil, 0
	s.mu.Unlock()
	for _, m := range queue {
		s.give(m)
	}
}

// give returns m's charge to the budget; the caller is done with m.
func (s *Stream) give(m Outgoing) {
	if s.Budget != nil && m.Charged > 0 {
		s.Budget.Give(m.Charged)
	}
}

// Give returns the charge of messages taken from s once the caller is done
// with them (written or dropped).
func (s *Stream) Give(msgs ...Outgoing) {
	for _, m := range msgs {
		s.give(m)
	}
}

// Expect counts n more requests to be answered on s; call it before
// forwarding them, so that an early answer cannot finish the stream.
func (s *Stream) Expect(n int) {
	s.mu.Lock()
	s.pending += n
	s.mu.Unlock()
}

// Answer queues an answer the gateway itself produced for the stream's
// request id, such as a refusal.
func (s *Stream) Answer(id json.RawMessage, data []byte) {
	s.push(Outgoing{Data: data, Response: true, ID: id})
}

// An Answer is what a Watch callback sees of a request's answer: its
// encoding as queued for the client, or, for a worker's result whose
// encoding waits for the client's handler (Conn.Call's rewrite), that
// result as the worker sent it (which the rewrite does not change in
// what an observer reads: isError, structuredContent).
type Answer struct {
	Data   []byte          // the encoded answer; nil when deferred
	Result json.RawMessage // the worker's result, when Data is nil
}

// Watch has fns called once, in order, with the answer to the stream's
// request id, as queued for the client (a bufferFull replacement included),
// whether or not the client is still there to read it; or with nil when the
// request is settled without an answer (the client cancelled it), at the
// latest when the stream's last request is settled. Call it once per
// request, with every callback that request needs, before forwarding it:
// each answer goes to one Watch (two requests of a batch may share an id),
// so a second Watch of the same request would see the next answer of that
// id, or nil. nil fns are skipped. They run with the stream locked, on the
// worker's reader: they must not use the stream, and must return quickly.
func (s *Stream) Watch(id json.RawMessage, fns ...func(*Answer)) {
	var fn func(*Answer)
	for _, f := range fns {
		switch {
		case f == nil:
		case fn == nil:
			fn = f
		default:
			prev := fn
			fn = func(a *Answer) { prev(a); f(a) }
		}
	}
	if fn == nil {
		return
	}
	s.mu.Lock()
	if s.watch == nil {
		s.watch = make(map[string][]func(*Answer))
	}
	k := jsonrpc.Key(id)
	s.watch[k] = append(s.watch[k], fn)
	s.mu.Unlock()
}

// runWatchersLocked runs the Watch callbacks due: the first one of m's id
// for an answer, and every one left once no request is pending.
func (s *Stream) runWatchersLocked(m *Outgoing) {
	if m != nil {
		k := jsonrpc.Key(m.ID)
		if w := s.watch[k]; len(w) > 0 {
			if s.watch[k] = w[1:]; len(w) == 1 {
				delete(s.watch, k)
			}
			a := &Answer{Data: m.Data}
			if m.encode != nil {
				a.Data, a.Result = nil, m.result
			}
			w[0](a)
		}
	}
	if s.pending <= 0 {
		for k, w := range s.watch {
			delete(s.watch, k)
			for _, fn := range w {
				fn(nil)
			}
		}
	}
}

// push queues m; it reports false when the handler has gone, or when m is
// not an answer and the queue is full.
func (s *Stream) push(m Outgoing) bool {
	s.mu.Lock()
	if m.Response {
		s.pending--
		if m.Result {
			s.results++
		}
	}
	n := len(m.Data)
	if m.encode != nil {
		n = m.size
	}
	ok := !s.detached && (m.Response || s.queued+n <= MaxQueuedBytes)
	if ok && s.Budget != nil {
		// Charged under s.mu, so that Detach gives back all it took.
		if err := s.Budget.Take(n); err == nil {
			m.Charged = n
		} else if m.Response {
			m.Data, m.encode = internalError(m.ID, err.Error(), KindBufferFull), nil
			n = len(m.Data)
		} else {
			ok = false
		}
	}
	if ok {
		s.queue = append(s.queue, m)
		s.queued += n
	}
	if m.Response && len(s.watch) > 0 {
		// Before the answer can be taken: whoever reads it finds it
		// observed.
		s.runWatchersLocked(&m)
	}
	s.mu.Unlock()
	s.signal()
	return ok
}

// forget counts one request as settled without an answer (the client
// cancelled it).
func (s *Stream) forget() {
	s.mu.Lock()
	s.pending--
	s.runWatchersLocked(nil)
	s.mu.Unlock()
	s.signal()
}

func (s *Stream) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.signal()
}

func (s *Stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// live reports whether the stream can still carry a message that is not an
// answer.
func (s *Stream) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.SSE && !s.detached && !s.ended
}
