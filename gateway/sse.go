package gateway

import (
	"bytes"
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
// dropped.
func (g *Gateway) writeStream(w http.ResponseWriter, r *http.Request, st *worker.Stream, jsonOK bool, batch []string) {
	defer st.Detach()
	sw := sseWriter{w: w, rc: http.NewResponseController(w)}
	if !jsonOK {
		sw.start()
	}
	var held []worker.Outgoing
	var tick <-chan time.Time
	for {
		msgs, finished := st.Take(false)
		for _, m := range msgs {
			if !sw.started && m.Response {
				held = append(held, m)
				continue
			}
			if !sw.started {
				sw.start()
				for _, h := range held {
					sw.event(h.Data)
				}
				held = nil
			}
			sw.event(m.Data)
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
			sw.comment("keep-alive")
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
		_, _ = w.Write(held[0].Data)
	default:
		pos := make(map[string]int, len(batch))
		for i := len(batch) - 1; i >= 0; i-- {
			pos[batch[i]] = i // the first occurrence wins
		}
		slices.SortStableFunc(held, func(a, b worker.Outgoing) int {
			return pos[jsonrpc.Key(a.ID)] - pos[jsonrpc.Key(b.ID)]
		})
		out := []byte{'['}
		for i, h := range held {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, h.Data...)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(out, ']'))
	}
}

// serveGET opens the session's standalone SSE stream: the worker's messages
// that belong to no request, and keep-alive comments (MCP §Listening for
// Messages from the Server). A second concurrent one gets 409, as from the
// go-sdk.
func (g *Gateway) serveGET(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r); !sseOK {
		errAcceptGET.write(w, nil)
		return
	}
	if !versionOK(w, r) {
		return
	}
	if r.Header.Get("Last-Event-ID") != "" {
		// The gateway sends no event ids, so there is nothing to resume.
		errLastEventID.write(w, nil)
		return
	}
	s := g.sessionOf(w, r, nil)
	if s == nil {
		return
	}
	defer g.enter(s)()
	st := worker.NewStream(true)
	if !s.conn.Listen(st) {
		errStreamConflict.write(w, nil)
		return
	}
	defer s.conn.Unlisten(st)
	sw := sseWriter{w: w, rc: http.NewResponseController(w)}
	sw.start()
	// Headers and a first comment at once, so proxies pass the stream on.
	sw.comment("ok")
	t := time.NewTicker(g.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		msgs, finished := st.Take(true)
		for _, m := range msgs {
			sw.event(m.Data)
		}
		if !sw.flush() || finished {
			return
		}
		select {
		case <-st.Ready():
		case <-r.Context().Done():
			return
		case <-t.C:
			sw.comment("keep-alive")
		}
	}
}

// serveDELETE ends a session and stops its worker (MCP §Session Management).
func (g *Gateway) serveDELETE(w http.ResponseWriter, r *http.Request) {
	if !versionOK(w, r) {
		return
	}
	s := g.sessionOf(w, r, nil)
	if s == nil {
		return
	}
	s.log.Info("gateway: session deleted by the client")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.opts.WorkerStopGrace+10*time.Second)
	defer cancel()
	if err := g.endSessions(ctx, []*session{s}, "gateway: the session was deleted"); err != nil {
		s.log.Error("gateway: stopping a worker", "err", err)
	}
	w.WriteHeader(http.StatusOK)
}

// sseWriter writes server-sent events (HTML Living Standard §9.2).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	buf     bytes.Buffer
}

func (s *sseWriter) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event queues one message; JSON-RPC from a worker is a single line.
func (s *sseWriter) event(data []byte) {
	s.buf.WriteString("event: message\ndata: ")
	s.buf.Write(data)
	s.buf.WriteString("\n\n")
}

func (s *sseWriter) comment(text string) {
	s.buf.WriteString(": " + text + "\n\n")
	s.flush()
}

// flush sends what is queued; false means the client has gone.
func (s *sseWriter) flush() bool {
	if s.buf.Len() > 0 {
		if _, err := s.w.Write(s.buf.Bytes()); err != nil {
			s.buf.Reset()
			return false
		}
		s.buf.Reset()
	}
	return s.rc.Flush() == nil
}
