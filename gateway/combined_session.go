package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Sessions of 2025-11-25 and earlier on the combined endpoint. A combined
// session is the gateway's own: initialize is answered by the combined
// endpoint (every capability a server may have), and a member session on a
// server opens only when a request first needs that server (a list opens
// one on each server it lists, a call only its own), with the client's
// initialize replayed to it. DELETE ends every member session. A member
// session that has ended (its worker died or idled out) ends the combined
// session: the client initializes again.
//
// A server's requests to the client (sampling, elicitation, roots) carry
// ids the member gateway chose; on the combined endpoint they become
// "<server>:<id>", so the client's answer, POSTed back, finds its server.

// maxCombinedInit bounds the initialize request a combined session keeps
// to replay to its servers (a client's is a few hundred bytes).
const maxCombinedInit = 64 << 10

var errCombinedInit = failure{http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, "gateway: an initialize on the combined endpoint may be at most 64 KiB", nil}

// combinedSessions is the combined endpoint's session table.
type combinedSessions struct {
	mu      sync.Mutex
	byID    map[string]*combinedSession
	idle    time.Duration // a session without a request this long is forgotten
	max     int           // sessions in all
	maxUser int           // sessions of one principal
}

func newCombinedSessions(opts Options) *combinedSessions {
	return &combinedSessions{byID: map[string]*combinedSession{}, idle: opts.SessionIdleTimeout + idleGrace, max: opts.MaxSessions, maxUser: opts.MaxSessionsPerUser}
}

// combinedSession is one client's session on the combined endpoint.
type combinedSession struct {
	id      string
	owner   auth.Owner
	version string // MCP-Protocol-Version the client negotiated
	init    []byte // the client's initialize request, replayed to each member

	mu       sync.Mutex
	members  map[string]*memberSlot
	last     time.Time
	logLevel json.RawMessage  // logging/setLevel's params, replayed to later members
	stream   *combinedStreams // the client's standalone GET stream, when open
}

// memberSlot is one member session of a combined session.
type memberSlot struct {
	mu  sync.Mutex // held while the member session opens
	sid string
	err error
}

// combinedStreams is a combined session's open GET stream: a member GET
// for each member session, merged.
type combinedStreams struct {
	ctx    context.Context
	r      *http.Request
	events chan memberEvent
	wg     sync.WaitGroup
	open   map[string]bool
}

// add opens, under s.mu, the GET stream of one member session.
func (cs *combinedStreams) add(c *Combined, rc reach, sid string) {
	if cs.open[rc.m.Name] {
		return
	}
	cs.open[rc.m.Name] = true
	r2 := memberRequest(cs.r.WithContext(cs.ctx), nil, map[string]string{"MCP-Session-Id": sid, "Accept": "text/event-stream"})
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		ms := newMemberStream(cs.ctx, rc.m.Name, cs.events)
		rc.m.Gateway.serveAuthenticated(ms, r2, rc.p, rc.m.Rights, nil)
		ms.end()
	}()
}

// lookup returns the caller's live session id, or nil (absent, idle past
// the members' timeout, another principal's: answered alike).
func (t *combinedSessions) lookup(id string, owner auth.Owner) *combinedSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || s.owner != owner {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.last) > t.idle {
		delete(t.byID, id)
		return nil
	}
	s.last = time.Now()
	return s
}

// add files s, forgetting idle sessions first; false when the table or
// the principal's share of it is full.
func (t *combinedSessions) add(s *combinedSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := 0
	for id, o := range t.byID {
		o.mu.Lock()
		idle := time.Since(o.last) > t.idle
		o.mu.Unlock()
		switch {
		case idle:
			delete(t.byID, id)
		case o.owner.Key() == s.owner.Key():
			mine++
		}
	}
	if len(t.byID) >= t.max || mine >= t.maxUser {
		return false
	}
	t.byID[s.id] = s
	return true
}

func (t *combinedSessions) remove(id string) {
	t.mu.Lock()
	delete(t.byID, id)
	t.mu.Unlock()
}

// member returns the id of s's member session on rc's server, opening it
// with the client's initialize on first use.
func (s *combinedSession) member(c *Combined, r *http.Request, rc reach) (string, error) {
	s.mu.Lock()
	slot := s.members[rc.m.Name]
	if slot == nil {
		slot = &memberSlot{}
		s.members[rc.m.Name] = slot
	}
	s.mu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.sid != "" || slot.err != nil {
		return slot.sid, slot.err
	}
	hdr := map[string]string{"Accept": "application/json", "MCP-Session-Id": "", nameHdr: "", protoHdrName: s.version}
	rec := &memberRecorder{header: http.Header{}}
	rc.m.Gateway.serveAuthenticated(rec, memberRequest(r, s.init, hdr), rc.p, rc.m.Rights, nil)
	ans, sid := rec.answer(), rec.header.Get("MCP-Session-Id")
	if ans == nil || ans.Error != nil || sid == "" {
		// Not kept: a later request tries again.
		return "", fmt.Errorf("its session did not open (HTTP %d)", rec.status())
	}
	hdr["MCP-Session-Id"] = sid
	rec = &memberRecorder{header: http.Header{}}
	rc.m.Gateway.serveAuthenticated(rec, memberRequest(r, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), hdr), rc.p, rc.m.Rights, nil)
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	if level != nil {
		body, _ := jsonrpc.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mcpgate-log-level", "method": "logging/setLevel", "params": level})
		c.ask(r, rc, body, sid)
	}
	slot.sid = sid
	s.mu.Lock()
	if s.stream != nil {
		s.stream.add(c, rc, sid)
	}
	s.mu.Unlock()
	return sid, nil
}

// opened returns the member sessions opened so far, in server order.
func (s *combinedSession) opened(c *Combined) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for name, slot := range s.members {
		if slot.mu.TryLock() {
			if slot.sid != "" {
				out[name] = slot.sid
			}
			slot.mu.Unlock()
		}
	}
	return out
}

// sessionPOST serves a POST of 2025-11-25 and earlier: initialize, or a
// message of a combined session.
func (c *Combined) sessionPOST(w http.ResponseWriter, r *http.Request, p *auth.Principal, msgs []*jsonrpc.Message, batch bool, version string) {
	firstID := firstRequestID(msgs)
	if _, ok := protocolVersion(r); !ok {
		unsupportedVersion(version).write(w, firstID)
		return
	}
	if f, refused := legacyBodyRefusal(msgs, version); refused {
		f.write(w, firstID)
		return
	}
	if batch {
		errCombinedBatch.write(w, firstID)
		return
	}
	m := msgs[0]
	owner := auth.Owner{}
	if p != nil {
		owner = p.Owner()
	}
	sid := r.Header.Get("MCP-Session-Id")
	if m.Method == "initialize" {
		switch {
		case sid != "":
			errInitWithSession.write(w, firstID)
		case !m.IsRequest():
			errInvalid.write(w, nil)
		default:
			c.initialize(w, m, p)
		}
		return
	}
	if sid == "" {
		errNoSession.write(w, firstID)
		return
	}
	s := c.sess.lookup(sid, owner)
	if s == nil {
		c.log.Info("gateway: a request named no combined session of its principal", "remote", r.RemoteAddr)
		errUnknownSession.write(w, firstID)
		return
	}
	switch {
	case m.IsResponse():
		c.sessionResponse(w, r, p, s, m)
	case m.IsNotification():
		c.sessionNotification(w, r, p, s, m)
	case m.Method == "ping":
		c.writeResult(w, r, m.ID, json.RawMessage(`{}`))
	case m.Method == "logging/setLevel":
		s.mu.Lock()
		s.logLevel = m.Params
		s.mu.Unlock()
		for name, msid := range s.opened(c) {
			if rc, ok := c.find(p, name); ok {
				body, _ := m.Encode()
				c.ask(r, rc, body, msid)
			}
		}
		c.writeResult(w, r, m.ID, json.RawMessage(`{}`))
	case listKey[m.Method] != "":
		c.list(w, r, p, m, s)
	default:
		c.route(w, r, p, m, nil, s)
	}
}

// initialize opens a combined session; no worker starts until a request
// needs one.
func (c *Combined) initialize(w http.ResponseWriter, m *jsonrpc.Message, p *auth.Principal) {
	owner := auth.Owner{}
	if p != nil {
		owner = p.Owner()
	}
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &params)
	version := params.ProtocolVersion
	if !slices.Contains(sessionVersions, version) {
		version = sessionVersions[0]
	}
	init, err := m.Encode()
	if err != nil {
		errInvalid.write(w, m.ID)
		return
	}
	if len(init) > maxCombinedInit {
		// Kept for the session's life, for every server it opens.
		errCombinedInit.write(w, m.ID)
		return
	}
	s := &combinedSession{id: c.front.newSessionID(), owner: owner, version: version, init: init, members: map[string]*memberSlot{}, last: time.Now()}
	if !c.sess.add(s) {
		errTooManyForUser.write(w, m.ID)
		return
	}
	res := mustMarshal(map[string]json.RawMessage{
		"protocolVersion": mustMarshal(version),
		"capabilities":    combinedCaps,
		"serverInfo":      c.info,
		"instructions":    mustMarshal(c.instructions(p)),
	})
	w.Header().Set("MCP-Session-Id", s.id)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resultResponse(m.ID, res))
}

// sessionNotification passes a client notification on: a cancellation to
// the server of the request it names, anything else of notifications/* to
// every open member session (notifications/initialized was the member's
// at its own opening).
func (c *Combined) sessionNotification(w http.ResponseWriter, r *http.Request, p *auth.Principal, s *combinedSession, m *jsonrpc.Message) {
	w.WriteHeader(http.StatusAccepted)
	if m.Method == "notifications/initialized" || !strings.HasPrefix(m.Method, "notifications/") {
		return
	}
	body, err := m.Encode()
	if err != nil {
		return
	}
	for name, msid := range s.opened(c) {
		if rc, ok := c.find(p, name); ok {
			rec := &memberRecorder{header: http.Header{}}
			rc.m.Gateway.serveAuthenticated(rec, memberRequest(r, body, map[string]string{"MCP-Session-Id": msid}), rc.p, rc.m.Rights, nil)
		}
	}
}

// sessionResponse passes the client's answer to a server's request to
// that server, its id restored ("<server>:<id>").
func (c *Combined) sessionResponse(w http.ResponseWriter, r *http.Request, p *auth.Principal, s *combinedSession, m *jsonrpc.Message) {
	var id string
	server, raw, ok := "", "", json.Unmarshal(m.ID, &id) == nil
	if ok {
		server, raw, ok = strings.Cut(id, ":")
	}
	var rc reach
	if ok {
		rc, ok = c.find(p, server)
	}
	msid := s.opened(c)[server]
	if !ok || msid == "" || !json.Valid([]byte(raw)) {
		c.log.Warn("gateway: dropped a client response to no server's request", "id", clip(string(m.ID)))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	m2 := *m
	m2.ID = json.RawMessage(raw)
	body, err := m2.Encode()
	if err != nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	rc.m.Gateway.serveAuthenticated(w, memberRequest(r, body, map[string]string{"MCP-Session-Id": msid}), rc.p, rc.m.Rights, nil)
}

// routeSession is route on a combined session: the member session of the
// server opens first, and the server's own requests on the answer's
// stream get ids that name it.
func (c *Combined) routeSession(w http.ResponseWriter, r *http.Request, rc reach, s *combinedSession) (http.ResponseWriter, string, bool) {
	msid, err := s.member(c, r, rc)
	if err != nil {
		c.log.Warn("gateway: a server of the combined endpoint could not open its session", "server", rc.m.Name, "err", err)
		errWorkerStart.write(w, nil)
		return nil, "", false
	}
	return &idRewriter{ResponseWriter: w, server: rc.m.Name}, msid, true
}

// sessionGET opens the combined session's standalone stream: the GET
// streams of its member sessions (those open now and those that open
// later) merged, resource updates prefixed and the servers' requests'
// ids naming their server. It ends when the client closes it or any
// member's stream ends (the client reopens it).
func (c *Combined) sessionGET(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	if _, sseOK := accepts(r); !streamGETOK(w, r, sseOK) {
		return
	}
	s := c.sessionOf(w, r, p)
	if s == nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	cs := &combinedStreams{ctx: ctx, r: r, events: make(chan memberEvent, 16), open: map[string]bool{}}
	defer cs.wg.Wait()
	defer cancel()
	s.mu.Lock()
	if s.stream != nil {
		s.mu.Unlock()
		errStreamConflict.write(w, nil)
		return
	}
	s.stream = cs
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stream = nil
		s.mu.Unlock()
	}()
	for name, msid := range s.opened(c) {
		if rc, ok := c.find(p, name); ok {
			s.mu.Lock()
			cs.add(c, rc, msid)
			s.mu.Unlock()
		}
	}
	sw := c.front.newSSEWriter(w)
	sw.start()
	if !sw.comment("ok") {
		return
	}
	t := time.NewTicker(c.front.opts.KeepAliveInterval)
	defer t.Stop()
	for {
		select {
		case ev := <-cs.events:
			if ev.data == nil {
				return // a member's stream ended; the client reopens
			}
			if !sw.data(rewriteServerMessage(ev.server, ev.data)) || !sw.flush() {
				return
			}
		case <-ctx.Done():
			return
		case <-t.C:
			if !sw.comment("keep-alive") {
				return
			}
		}
	}
}

// sessionOf returns the request's combined session, or answers 400 / 404.
func (c *Combined) sessionOf(w http.ResponseWriter, r *http.Request, p *auth.Principal) *combinedSession {
	sid := r.Header.Get("MCP-Session-Id")
	if sid == "" {
		errNoSession.write(w, nil)
		return nil
	}
	owner := auth.Owner{}
	if p != nil {
		owner = p.Owner()
	}
	s := c.sess.lookup(sid, owner)
	if s == nil {
		errUnknownSession.write(w, nil)
	}
	return s
}

// sessionDELETE ends a combined session and every member session it
// opened. A member that refuses (a read-only token may not end a
// read-write session) keeps the whole session, and its refusal is the
// answer.
func (c *Combined) sessionDELETE(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	if !versionOK(w, r) {
		return
	}
	s := c.sessionOf(w, r, p)
	if s == nil {
		return
	}
	opened := s.opened(c)
	names := make([]string, 0, len(opened))
	for name := range opened {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rc, ok := c.find(p, name)
		if !ok {
			continue
		}
		rec := &memberRecorder{header: http.Header{}}
		rc.m.Gateway.serveAuthenticated(rec, memberRequest(r, nil, map[string]string{"MCP-Session-Id": opened[name]}), rc.p, rc.m.Rights, nil)
		if st := rec.status(); st == http.StatusForbidden {
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(st)
			_, _ = w.Write(rec.body.Bytes())
			return
		}
		s.mu.Lock()
		delete(s.members, name)
		s.mu.Unlock()
	}
	c.sess.remove(s.id)
	c.log.Info("gateway: combined session deleted by the client", "servers", len(names))
	w.WriteHeader(http.StatusOK)
}
