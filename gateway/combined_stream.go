package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// maxMemberEvent bounds one event of a member's stream that the combined
// endpoint reads whole before passing it on.
const maxMemberEvent = 8 << 20

// memberEvent is one message of a member's long-lived stream, or its end.
type memberEvent struct {
	server string
	data   []byte // one JSON-RPC message; nil at the end
	status int    // at the end: the member's HTTP status
}

// memberStream is the ResponseWriter of a member's long-lived stream (a
// subscriptions/listen, a session's GET stream) that the combined endpoint
// merges into its client's: it passes each complete event's data on as it
// comes, and gives up when ctx ends or an event outgrows maxMemberEvent.
type memberStream struct {
	ctx    context.Context
	server string
	out    chan<- memberEvent
	header http.Header
	code   int
	buf    []byte
}

func newMemberStream(ctx context.Context, server string, out chan<- memberEvent) *memberStream {
	return &memberStream{ctx: ctx, server: server, out: out, header: http.Header{}}
}

func (s *memberStream) Header() http.Header { return s.header }

func (s *memberStream) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *memberStream) Flush() {}

func (s *memberStream) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	s.buf = append(s.buf, p...)
	for {
		i := bytes.Index(s.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		ev := s.buf[:i]
		s.buf = s.buf[i+2:]
		var data []byte
		for _, line := range bytes.Split(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, d...)
			}
		}
		if len(data) == 0 {
			continue // a comment: keep-alive
		}
		select {
		case s.out <- memberEvent{server: s.server, data: data}:
		case <-s.ctx.Done():
			return 0, s.ctx.Err()
		}
	}
	if len(s.buf) > maxMemberEvent {
		return 0, http.ErrContentLength
	}
	s.buf = bytes.Clone(s.buf) // do not pin what was passed on
	return len(p), nil
}

// end reports the stream's end, unless ctx ended first.
func (s *memberStream) end() {
	code := s.code
	if code == 0 {
		code = http.StatusOK
	}
	select {
	case s.out <- memberEvent{server: s.server, status: code}:
	case <-s.ctx.Done():
	}
}

// prefixNotification rewrites a member's notification for the combined
// client: a resource update's uri gets the server's prefix (list changes
// carry nothing to rewrite).
func prefixNotification(server string, data []byte) []byte {
	m, err := jsonrpc.Decode(data)
	if err != nil || m.Method != "notifications/resources/updated" {
		return data
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return data
	}
	prefixURIMember(server, params, "uri")
	out, err := m.WithParams(mustMarshal(params)).Encode()
	if err != nil {
		return data
	}
	return out
}

// listen answers subscriptions/listen (2026-07-28) with one stream that
// merges a listen on each reachable server: the acknowledgement names
// what they agreed to together (resource URIs prefixed), then each
// server's notifications come as they come, a resource update's uri
// prefixed. It ends when the client closes it, or with the completion
// result once any server's listen ends (its worker stopped, the token
// expired): the client listens again, and all are renewed.
func (c *Combined) listen(w http.ResponseWriter, r *http.Request, p *auth.Principal, m *jsonrpc.Message) {
	_, sseOK := accepts(r)
	req, f, ok := listenFilter(sseOK, m)
	if !ok {
		f.write(w, m.ID)
		return
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(m.Params, &fields) != nil {
		errInvalid.write(w, m.ID)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	events := make(chan memberEvent, 16)
	targets := c.reachable(p)
	for _, rc := range targets {
		f := req
		f.ResourceSubscriptions = nil
		for _, uri := range req.ResourceSubscriptions {
			if s, local, ok := splitURI(uri); ok && s == rc.m.Name {
				f.ResourceSubscriptions = append(f.ResourceSubscriptions, local)
			}
		}
		params := make(map[string]json.RawMessage, len(fields))
		for k, v := range fields {
			params[k] = v
		}
		params["notifications"] = mustMarshal(f)
		body, err := m.WithParams(mustMarshal(params)).Encode()
		if err != nil {
			continue
		}
		r2 := memberRequest(r.WithContext(ctx), body, map[string]string{"Accept": "text/event-stream"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := newMemberStream(ctx, rc.m.Name, events)
			rc.m.Gateway.serveAuthenticated(ms, r2, rc.p, rc.m.Rights, nil)
			ms.end()
		}()
	}
	// The acknowledgements first: one from each server that listens.
	var agreed notifyFilter
	var early []memberEvent
	listening := map[string]bool{}
	for pending := len(targets); pending > 0; {
		var ev memberEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return
		}
		switch msg, _ := jsonrpc.Decode(ev.data); {
		case ev.data == nil:
			if !listening[ev.server] {
				pending--
				c.log.Warn("gateway: left a server out of a combined subscriptions/listen", "server", ev.server, "status", ev.status)
			} else {
				early = keep(early, ev)
			}
		case msg != nil && msg.Method == "notifications/subscriptions/acknowledged":
			pending--
			listening[ev.server] = true
			var ack struct {
				Notifications notifyFilter `json:"notifications"`
			}
			_ = json.Unmarshal(msg.Params, &ack)
			mergeFilter(&agreed, ev.server, ack.Notifications)
		default:
			early = keep(early, ev)
		}
	}
	sw := c.front.newSSEWriter(w)
	sw.start()
	ack, _ := jsonrpc.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": map[string]any{
		"_meta": map[string]json.RawMessage{metaSubscriptionID: m.ID}, "notifications": agreed,
	}})
	sw.data(ack)
	if !sw.flush() {
		return
	}
	done := func() {
		res, _ := jsonrpc.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{metaSubscriptionID: m.ID}})
		sw.data(resultResponse(m.ID, res))
		sw.flush()
	}
	if len(listening) == 0 {
		done()
		return
	}
	t := time.NewTicker(c.front.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		var ev memberEvent
		if len(early) > 0 {
			ev, early = early[0], early[1:]
		} else {
			select {
			case ev = <-events:
			case <-ctx.Done():
				return
			case <-t.C:
				if !sw.comment("keep-alive") {
					return
				}
				continue
			}
		}
		msg, err := jsonrpc.Decode(ev.data)
		if ev.data == nil || err == nil && msg.IsResponse() {
			done() // a server's listen ended: end them all, the client renews
			return
		}
		if err != nil || !msg.IsNotification() {
			continue
		}
		if !sw.data(prefixNotification(ev.server, ev.data)) || !sw.flush() {
			return
		}
	}
}

// keep queues an event that came before every server acknowledged, at
// most maxListenQueue of them: beyond, the oldest notification goes (a
// list change is a hint to list again, a later one says as much), never
// an end.
func keep(early []memberEvent, ev memberEvent) []memberEvent {
	if len(early) >= maxListenQueue {
		for i, e := range early {
			if e.data != nil {
				early = append(early[:i], early[i+1:]...)
				break
			}
		}
	}
	return append(early, ev)
}

// mergeFilter adds one server's agreed filter to the combined one.
func mergeFilter(dst *notifyFilter, server string, f notifyFilter) {
	dst.ToolsListChanged = dst.ToolsListChanged || f.ToolsListChanged
	dst.PromptsListChanged = dst.PromptsListChanged || f.PromptsListChanged
	dst.ResourcesListChanged = dst.ResourcesListChanged || f.ResourcesListChanged
	for _, uri := range f.ResourceSubscriptions {
		dst.ResourceSubscriptions = append(dst.ResourceSubscriptions, prefixURI(server, uri))
	}
}
