package gateway

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// writeStream relays a POST's stream. While only answers arrive and the
// client accepts JSON, they are held and sent as one application/json body
// (an array for a batch). The first message that is not an answer, or a
// client that accepts only text/event-stream, turns the response into an SSE
// stream that ends with the last answer (MCP §Sending Messages to the Server).
// batch lists a batch's request id keys in order (nil: not a batch); JSON-RPC
// 2.0 §6 allows any order, request order is the friendlier one.
// A client that goes away does not cancel its requests; their answers are
// dropped. What is held is charged to the stream's budget until written; a
// client that accepts no bytes for Options.WriteTimeout loses the response.
func (g *Gateway) writeStream(w http.ResponseWriter, r *http.Request, st *worker.Stream, jsonOK bool, batch []string) {
	var held []worker.Outgoing
	defer func() {
		st.Detach()
		st.Give(held...)
	}()
	sw := g.newSSEWriter(w)
	if !jsonOK {
		sw.start()
	}
	var tick <-chan time.Time
	for {
		msgs, finished := st.Take(false)
		for i, m := range msgs {
			if !sw.started && m.Response {
				held = append(held, m)
				continue
			}
			if !sw.started {
				sw.start()
				for _, h := range held {
					sw.event(st, h)
				}
				held = nil
			}
			if !sw.event(st, m) {
				st.Give(msgs[i+1:]...)
				return
			}
		}
		if sw.started {
			if !sw.flush() {
				return
			}
			if tick == nil {
				t := time.NewTicker(g.opts.KeepAliveInterval)
				defer t.Stop()
				tick = t.C
			}
		}
		if finished {
			break
		}
		select {
		case <-st.Ready():
		case <-r.Context().Done():
			return
		case <-tick:
			if !sw.comment("keep-alive") {
				return
			}
		}
	}
	if sw.started {
		return
	}
	switch {
	case len(held) == 0:
		// Every request was cancelled by the client: nothing to answer.
		w.WriteHeader(http.StatusAccepted)
	case batch == nil:
		w.Header().Set("Content-Type", "application/json")
		sw.write(held[0].Data)
	default:
		pos := make(map[string]int, len(batch))
		for i := len(batch) - 1; i >= 0; i-- {
			pos[batch[i]] = i // the first occurrence wins
		}
		slices.SortStableFunc(held, func(a, b worker.Outgoing) int {
			return pos[jsonrpc.Key(a.ID)] - pos[jsonrpc.Key(b.ID)]
		})
		// Written piece by piece: the answers are not copied into one
		// more buffer.
		w.Header().Set("Content-Type", "application/json")
		ok := sw.write([]byte{'['})
		for i, h := range held {
			if i > 0 {
				ok = ok && sw.write([]byte{','})
			}
			ok = ok && sw.write(h.Data)
		}
		_ = ok && sw.write([]byte{']'})
	}
}

// streamGETOK answers a GET for a standalone stream that cannot be served
// (the client does not accept a stream: 406; a revision without one, or
// none supported; Last-Event-ID: 400) and reports whether it may go on.
func streamGETOK(w http.ResponseWriter, r *http.Request, sseOK bool) bool {
	if !sseOK {
		errAcceptGET.write(w, nil)
		return false
	}
	if !versionOK(w, r) {
		return false
	}
	if r.Header.Get("Last-Event-ID") != "" {
		// The gateway sends no event ids, so there is nothing to resume.
		errLastEventID.write(w, nil)
		return false
	}
	return true
}

// serveGET opens the session's standalone SSE stream: the worker's messages
// that belong to no request, and keep-alive comments (MCP §Listening for
// Messages from the Server). A second concurrent one gets 409, as from the
// go-sdk.
func (g *Gateway) serveGET(w http.ResponseWriter, c *call) {
	r := c.r
	if !streamGETOK(w, r, c.sseOK) {
		return
	}
	s := g.sessionOf(w, c, nil)
	if s == nil {
		return
	}
	// An open GET stream keeps its session busy; it ends at its token's
	// expiry or MaxStreamLifetime, and the client's next one is a request.
	defer g.enter(s)()
	end, stopEnd := g.streamEnd(c)
	defer stopEnd()
	st := worker.NewStream(true)
	st.Budget = g.streamBudget(s)
	conn := s.worker()
	if !conn.Listen(st) {
		errStreamConflict.write(w, nil)
		return
	}
	defer conn.Unlisten(st)
	sw := g.newSSEWriter(w)
	sw.start()
	// Headers and a first comment at once, so proxies pass the stream on.
	if !sw.comment("ok") {
		return
	}
	t := time.NewTicker(g.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		msgs, finished := st.Take(true)
		for i, m := range msgs {
			if !sw.event(st, m) {
				st.Give(msgs[i+1:]...)
				return
			}
		}
		if !sw.flush() || finished {
			return
		}
		select {
		case <-st.Ready():
		case <-r.Context().Done():
			return
		case <-end:
			// The token it was opened with has expired, or the stream
			// reached MaxStreamLifetime: the client reopens it.
			s.log.Info("gateway: closed a GET stream at its token's expiry or its lifetime", "max_stream_lifetime", g.opts.MaxStreamLifetime)
			return
		case <-t.C:
			if !sw.comment("keep-alive") {
				return
			}
		}
	}
}

// streamEnd returns a channel that fires when a standalone stream opened by
// r must end: when r's token expires, when the introspection answer that
// let it in is due to be asked again (auth.Principal.Recheck: a token
// revoked at the issuer keeps no stream open past it), or MaxStreamLifetime
// after now, whichever is first (by Options.Now); stop releases its timer.
func (g *Gateway) streamEnd(c *call) (<-chan time.Time, func() bool) {
	now := g.opts.Now()
	until := now.Add(g.opts.MaxStreamLifetime)
	if p := c.principal; p != nil {
		for _, t := range []time.Time{p.Expiry, p.Recheck} {
			if !t.IsZero() && t.Before(until) {
				until = t
			}
		}
	}
	t := time.NewTimer(until.Sub(now))
	return t.C, t.Stop
}

// serveDELETE ends a session and stops its worker (MCP §Session Management).
func (g *Gateway) serveDELETE(w http.ResponseWriter, c *call) {
	r := c.r
	if !versionOK(w, r) {
		return
	}
	s := g.sessionOf(w, c, nil)
	if s == nil {
		return
	}
	if g.refuseDelete(w, c, s) {
		return
	}
	s.log.Info("gateway: session deleted by the client")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.launcher.StopGrace()+10*time.Second)
	defer cancel()
	if err := g.stopBindings(ctx, []*binding{s}, ExitDeleted, "gateway: the session was deleted"); err != nil {
		s.log.Error("gateway: stopping a worker", "err", err)
	}
	w.WriteHeader(http.StatusOK)
}

// writeChunk is the most written under one write deadline: the deadline
// bounds a client that accepts nothing, not one that reads slowly.
const writeChunk = 64 << 10

// sseWriter writes a response: server-sent events (HTML Living Standard
// §9.2), or a JSON body, each write under a fresh deadline.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
	failed  bool // a write failed: the client has gone or stopped reading
}

func (g *Gateway) newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: g.opts.WriteTimeout}
}

func (s *sseWriter) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event writes one message of st as an event and gives back its charge;
// JSON-RPC from a worker is a single line. False means the client has gone.
func (s *sseWriter) event(st *worker.Stream, m worker.Outgoing) bool {
	defer st.Give(m)
	return s.write([]byte("event: message\ndata: ")) && s.write(m.Data) && s.write([]byte("\n\n"))
}

func (s *sseWriter) comment(text string) bool {
	return s.write([]byte(": "+text+"\n\n")) && s.flush()
}

// write writes p in pieces of at most writeChunk, each under a fresh write
// deadline; false means the client has gone or accepted nothing in time.
func (s *sseWriter) write(p []byte) bool {
	for !s.failed && len(p) > 0 {
		n := min(len(p), writeChunk)
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
		if _, err := s.w.Write(p[:n]); err != nil {
			s.failed = true
		}
		p = p[n:]
	}
	return !s.failed
}

// flush sends what net/http buffers; false means the client has gone.
func (s *sseWriter) flush() bool {
	if s.failed {
		return false
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if s.rc.Flush() != nil {
		s.failed = true
	}
	return !s.failed
}
