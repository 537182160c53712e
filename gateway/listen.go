package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// maxListeners bounds the subscriptions/listen streams open on one worker
// (one user and read-only flag); one more gets 429.
const maxListeners = 16

// maxListenQueue bounds the notifications waiting for one slow listener;
// beyond it the oldest are dropped (a list change is a hint to re-list, so a
// later one says as much as an earlier one).
const maxListenQueue = 256

// maxListenResources bounds the resourceSubscriptions of one listen; one
// more gets 400. The worker's union is then at most maxListeners times it.
const maxListenResources = 64

// notifyFilter is a subscriptions/listen filter (MCP 2026-07-28
// §Notification Filter).
type notifyFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// wants reports whether the filter opted in to notification m.
func (f *notifyFilter) wants(method string, params json.RawMessage) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.ToolsListChanged
	case "notifications/prompts/list_changed":
		return f.PromptsListChanged
	case "notifications/resources/list_changed":
		return f.ResourcesListChanged
	case "notifications/resources/updated":
		uri, _ := jsonrpc.MemberString(params, "uri")
		return slices.Contains(f.ResourceSubscriptions, uri)
	}
	return false
}

// listener is one client's subscriptions/listen stream.
type listener struct {
	id     json.RawMessage // the listen request's id: the subscription id
	filter notifyFilter

	mu     sync.Mutex
	queue  [][]byte
	closed bool
	notify chan struct{}
}

func (l *listener) push(data []byte) {
	l.mu.Lock()
	if len(l.queue) >= maxListenQueue {
		l.queue = l.queue[1:]
	}
	l.queue = append(l.queue, data)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *listener) take() ([][]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q, l.closed
}

func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// subscriptions fans a worker's change notifications out to its listeners.
// The worker keeps one subscription of the gateway's own whose filter is the
// union of its listeners' (the go-sdk keeps one subscription per stdio
// session, so listens cannot be forwarded one to one).
type subscriptions struct {
	mu        sync.Mutex
	listeners map[*listener]bool
	union     notifyFilter
	upstream  *worker.Stream // the gateway's own listen on a modern worker
	closed    bool
}

// deliver copies worker notification m to every listener that opted in,
// tagged with that listener's subscription id.
func (s *subscriptions) deliver(m *jsonrpc.Message) {
	s.mu.Lock()
	targets := make([]*listener, 0, len(s.listeners))
	for l := range s.listeners {
		if l.filter.wants(m.Method, m.Params) {
			targets = append(targets, l)
		}
	}
	s.mu.Unlock()
	for _, l := range targets {
		params := map[string]json.RawMessage{}
		_ = json.Unmarshal(m.Params, &params)
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(params["_meta"], &meta)
		meta[metaSubscriptionID] = l.id
		params["_meta"], _ = jsonrpc.Marshal(meta)
		data, err := jsonrpc.Marshal(map[string]any{"jsonrpc": "2.0", "method": m.Method, "params": params})
		if err == nil {
			l.push(data)
		}
	}
}

// closeAll ends every listener: the worker has gone.
func (s *subscriptions) closeAll() {
	s.mu.Lock()
	s.closed = true
	ls := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for l := range ls {
		l.close()
	}
}

// agreed intersects a requested filter with what the worker can send (its
// capabilities: listChanged flags and resources.subscribe).
func agreed(req notifyFilter, discover json.RawMessage) notifyFilter {
	var d struct {
		Capabilities struct {
			Tools     *struct{ ListChanged bool } `json:"tools"`
			Prompts   *struct{ ListChanged bool } `json:"prompts"`
			Resources *struct {
				ListChanged bool
				Subscribe   bool
			} `json:"resources"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(discover, &d)
	c := d.Capabilities
	var out notifyFilter
	out.ToolsListChanged = req.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged
	out.PromptsListChanged = req.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged
	out.ResourcesListChanged = req.ResourcesListChanged && c.Resources != nil && c.Resources.ListChanged
	if c.Resources != nil && c.Resources.Subscribe {
		out.ResourceSubscriptions = req.ResourceSubscriptions
	}
	return out
}

// addListener registers l and widens the worker's own subscription when l asks for
// more than it holds.
func (g *Gateway) addListener(uw *binding, l *listener) (failure, bool) {
	s := &uw.subs
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errWorkerExitedW, false
	}
	if s.listeners == nil {
		s.listeners = map[*listener]bool{}
	}
	if len(s.listeners) >= maxListeners {
		s.mu.Unlock()
		return errTooManyListeners, false
	}
	s.listeners[l] = true
	u := s.union
	grow := false
	for _, b := range []struct {
		have *bool
		want bool
	}{{&u.ToolsListChanged, l.filter.ToolsListChanged}, {&u.PromptsListChanged, l.filter.PromptsListChanged}, {&u.ResourcesListChanged, l.filter.ResourcesListChanged}} {
		if b.want && !*b.have {
			*b.have, grow = true, true
		}
	}
	var newURIs []string
	for _, uri := range l.filter.ResourceSubscriptions {
		if !slices.Contains(u.ResourceSubscriptions, uri) {
			u.ResourceSubscriptions = append(u.ResourceSubscriptions, uri)
			newURIs = append(newURIs, uri)
			grow = true
		}
	}
	if !grow {
		s.mu.Unlock()
		return failure{}, true
	}
	s.union = u
	old := s.upstream
	var up *worker.Stream
	if uw.modern {
		up = worker.NewStream(false)
		up.NoRequests = true
		up.Expect(1)
		s.upstream = up
	}
	s.mu.Unlock()

	if !uw.modern {
		// A 2025 worker sends list changes unasked; resource updates need
		// resources/subscribe, once per URI for the worker's life.
		for _, uri := range newURIs {
			ctx, cancel := context.WithTimeout(context.Background(), g.opts.WorkerStartTimeout)
			if _, err := uw.call(ctx, "resources/subscribe", map[string]string{"uri": uri}); err != nil {
				uw.log.Info("gateway: resources/subscribe refused by the worker", "err", err)
			}
			cancel()
		}
		return failure{}, true
	}
	// The go-sdk drops a session's subscription when any of its listens
	// ends: end the old one before the wider one starts.
	if old != nil {
		uw.conn.CancelStream(old)
		old.Detach()
	}
	params, _ := jsonrpc.Marshal(map[string]any{"_meta": g.gatewayMeta(), "notifications": u})
	uw.conn.Call(&jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(`"mcpgate-listen"`), Method: "subscriptions/listen", Params: params}, "", up, nil)
	return failure{}, true
}

// removeListener unregisters l; the last one out ends the worker's own
// subscription.
func (g *Gateway) removeListener(uw *binding, l *listener) {
	s := &uw.subs
	s.mu.Lock()
	delete(s.listeners, l)
	var up *worker.Stream
	if len(s.listeners) == 0 {
		up, s.upstream, s.union = s.upstream, nil, notifyFilter{}
	} else {
		// The union covers the open listeners only, so that it stays
		// within maxListeners times maxListenResources URIs. The worker's
		// own subscription may stay wider until the next one grows it.
		var u notifyFilter
		for o := range s.listeners {
			u.ToolsListChanged = u.ToolsListChanged || o.filter.ToolsListChanged
			u.PromptsListChanged = u.PromptsListChanged || o.filter.PromptsListChanged
			u.ResourcesListChanged = u.ResourcesListChanged || o.filter.ResourcesListChanged
			for _, uri := range o.filter.ResourceSubscriptions {
				if !slices.Contains(u.ResourceSubscriptions, uri) {
					u.ResourceSubscriptions = append(u.ResourceSubscriptions, uri)
				}
			}
		}
		s.union = u
	}
	s.mu.Unlock()
	if up != nil {
		uw.conn.CancelStream(up)
		up.Detach()
	}
}

// listenFilter reads a subscriptions/listen request's filter, or the
// refusal: a client that does not accept a stream (406), a filter that is
// missing or not an object, or that names too many resources (400).
func listenFilter(sseOK bool, m *jsonrpc.Message) (notifyFilter, failure, bool) {
	var req notifyFilter
	if !sseOK {
		return req, failure{http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest, "gateway: subscriptions/listen answers with a stream; accept text/event-stream", nil}, false
	}
	raw, ok := jsonrpc.Member(m.Params, "notifications")
	if !ok || raw == nil || json.Unmarshal(raw, &req) != nil {
		return req, failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: subscriptions/listen needs params.notifications, an object (toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions)", nil}, false
	}
	if len(req.ResourceSubscriptions) > maxListenResources {
		return req, failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, fmt.Sprintf("gateway: subscriptions/listen takes at most %d resourceSubscriptions; open another listen for more", maxListenResources), nil}, false
	}
	return req, failure{}, true
}

// serveListen answers subscriptions/listen (MCP 2026-07-28 §Subscriptions):
// an SSE stream that opens with notifications/subscriptions/acknowledged and
// then carries the change notifications the client opted in to, from the
// caller's own worker only, each tagged with the subscription id. Progress
// and log messages never go here. It ends when the client closes it, or
// with a completion result when the worker or the gateway stops.
//
// The stream is not activity: once it is open, release ends the request's
// use of uw (acquire), so that an open listen does not keep the worker from
// idle reaping, which ends it with its completion result. It ends so too at
// the expiry of the token it was opened with, or after MaxStreamLifetime.
func (g *Gateway) serveListen(w http.ResponseWriter, c *call, m *jsonrpc.Message, release func()) {
	r, uw := c.r, c.b
	req, f, ok := listenFilter(c.sseOK, m)
	if !ok {
		f.write(w, m.ID)
		return
	}
	l := &listener{id: m.ID, filter: agreed(req, uw.discover), notify: make(chan struct{}, 1)}
	if f, ok := g.addListener(uw, l); !ok {
		if f.isLimit() {
			g.refusedAtEdge(c, m, c.callee(), uw.key.readOnly, f)
		}
		f.write(w, m.ID)
		return
	}
	defer g.removeListener(uw, l)
	release()
	end, stopEnd := g.streamEnd(c)
	defer stopEnd()

	sw := g.newSSEWriter(w)
	sw.start()
	ackParams, _ := jsonrpc.Marshal(map[string]any{
		"_meta":         map[string]json.RawMessage{metaSubscriptionID: m.ID},
		"notifications": l.filter,
	})
	ack, _ := jsonrpc.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": json.RawMessage(ackParams)})
	sw.data(ack)
	if !sw.flush() {
		return
	}
	t := time.NewTicker(g.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		msgs, closed := l.take()
		for _, d := range msgs {
			sw.data(d)
		}
		if closed {
			// MCP §Graceful Closure: a completion result ends it.
			res, _ := jsonrpc.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{metaSubscriptionID: m.ID}})
			sw.data(resultResponse(m.ID, res))
			sw.flush()
			return
		}
		if !sw.flush() {
			return
		}
		select {
		case <-l.notify:
		case <-r.Context().Done():
			return
		case <-g.shutdown:
			l.close()
		case <-end:
			// The token has expired or the lifetime is over: the client
			// renews the subscription, with a fresh token.
			l.close()
		case <-t.C:
			if !sw.comment("keep-alive") {
				return
			}
		}
	}
}

// resultResponse encodes a JSON-RPC result answer.
func resultResponse(id, result json.RawMessage) []byte {
	b, _ := jsonrpc.Marshal(map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": id, "result": result})
	return b
}

// data writes one message the gateway made itself as an event (no budget:
// a listener's queue has its own bound). False means the client has gone.
func (s *sseWriter) data(p []byte) bool {
	return s.write([]byte("event: message\ndata: ")) && s.write(p) && s.write([]byte("\n\n"))
}
