package worker

import (
	"encoding/json"
	"sync"
)

// Outgoing is one message on its way from a worker to a client.
type Outgoing struct {
	Data     []byte          // the encoded JSON-RPC message, ids already restored
	Response bool            // it answers one of the stream's requests
	Result   bool            // the answer is a result, not an error
	ID       json.RawMessage // the client's request id, for an answer

	// encode, when set, produces Data: Take runs it, on the goroutine that
	// takes the answer rather than the worker's reader (Conn.Call's rewrite).
	encode func() []byte
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
// gateway's memory; answers always queue.
type Stream struct {
	// SSE says the client accepts text/event-stream, so the router may send
	// this stream messages that are not answers.
	SSE bool

	mu       sync.Mutex
	queue    []Outgoing
	queued   int  // bytes in queue
	pending  int  // requests not yet answered
	results  int  // answers that were results
	detached bool // the HTTP handler has gone
	ended    bool // the session has ended (standalone stream)
	notify   chan struct{}
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

// Results returns the number of the stream's requests answered with a
// result rather than an error.
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
	s.queue, s.queued = nil, 0
	s.mu.Unlock()
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
	ok := !s.detached && (m.Response || s.queued+len(m.Data) <= MaxQueuedBytes)
	if ok {
		s.queue = append(s.queue, m)
		s.queued += len(m.Data)
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
