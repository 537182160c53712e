package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// Member is one server of a Combined endpoint.
type Member struct {
	// Name is the server's name, the prefix of its tools and prompts
	// (name + NameSeparator + tool) and of its resource URIs (name + "+" +
	// uri): a lower-case letter, then lower-case letters, digits and
	// hyphens, at most 63 in all (a DNS label that starts with a letter).
	Name string
	// Gateway serves the server at its own path; the Combined endpoint
	// hands it each request past its own token check.
	Gateway *Gateway
	// Rights are the server's required scopes, write scope and policies:
	// a token reaches the server through the Combined endpoint when it
	// holds the required scopes and the policies grant it a tool, and its
	// worker there is read-only unless it holds the write scope.
	Rights auth.Rights
	// Title is the server's human-readable name, for the combined
	// endpoint's instructions; empty: Name.
	Title string
}

// NameSeparator joins a server's name and its tool or prompt name on the
// Combined endpoint: db__query. Two underscores are in every character set
// that MCP 2026-07-28 and the clients allow in a tool name
// ([A-Za-z0-9_.-], and [A-Za-z0-9_-] for the model APIs that take tool
// definitions), and a server name never holds an underscore, so the first
// occurrence splits a name unambiguously.
const NameSeparator = "__"

// memberName is what Member.Name may be.
var memberName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Combined serves one MCP endpoint over several servers' Gateways: the
// union of the servers a token may reach, their tools and prompts under
// prefixed names and their resources under prefixed URIs, each request
// routed to the caller's worker of the server it names. It is an
// http.Handler; its members' Gateways keep their workers (Close them, not
// this).
type Combined struct {
	members []*Member
	byName  map[string]*Member
	front   *Gateway // the /mcp endpoint's options, checks and logger; it has no workers
	handler http.Handler
	log     *slog.Logger
	info    json.RawMessage // the combined serverInfo
	sess    *combinedSessions
}

// NewCombined returns the endpoint that serves members, in this order
// (the order of merged lists), under opts: the Options of the combined
// path itself, of which it uses the Host and Origin checks
// (LoopbackHostCheck, AllowedHosts, AllowedOrigins), Middleware (the
// token check for the combined path's audience), Logger, MaxBodyBytes,
// BodyReadTimeout, WriteTimeout and SessionIdleTimeout (for its own
// sessions on 2025-11-25 and earlier). Each member's Gateway decides
// everything else for its own server, as at its own path.
func NewCombined(members []Member, opts Options) (*Combined, error) {
	if len(members) == 0 {
		return nil, errors.New("gateway: a combined endpoint needs at least one server")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c := &Combined{byName: make(map[string]*Member, len(members)), log: opts.Logger}
	var errs []error
	for i := range members {
		m := members[i]
		switch {
		case !memberName.MatchString(m.Name):
			errs = append(errs, fmt.Errorf("gateway: combined server %d: name %q must be a lower-case letter followed by lower-case letters, digits and hyphens, at most 63", i, clip(m.Name)))
			continue
		case c.byName[m.Name] != nil:
			errs = append(errs, fmt.Errorf("gateway: combined server %q is listed twice", m.Name))
			continue
		case m.Gateway == nil:
			errs = append(errs, fmt.Errorf("gateway: combined server %q has no gateway", m.Name))
			continue
		}
		if m.Title == "" {
			m.Title = m.Name
		}
		c.members = append(c.members, &m)
		c.byName[m.Name] = &m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.front = &Gateway{opts: opts, log: opts.Logger}
	var inner http.Handler = http.HandlerFunc(c.serve)
	if opts.Middleware != nil {
		inner = opts.Middleware(inner)
	}
	c.handler = c.front.guard(inner)
	titles := make([]string, len(c.members))
	for i, m := range c.members {
		titles[i] = m.Title
	}
	c.info = mustMarshal(map[string]string{"name": "mcpgate", "title": "mcpgate: " + strings.Join(titles, ", "), "version": "1"})
	c.sess = newCombinedSessions(opts)
	return c, nil
}

// ServeHTTP serves the combined endpoint: the Host and Origin checks, the
// token check (Options.Middleware), then each request routed to the
// servers it names.
func (c *Combined) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.front.freshWriteDeadline(w)
	c.handler.ServeHTTP(w, r)
}

// reach is one member as the caller sees it: the principal its server
// makes of the token.
type reach struct {
	m *Member
	p *auth.Principal
}

// reachable returns the members p may reach, in order (every one in the
// localhost mode, where p is nil).
func (c *Combined) reachable(p *auth.Principal) []reach {
	out := make([]reach, 0, len(c.members))
	for _, m := range c.members {
		if q, ok := m.Rights.For(p); ok {
			out = append(out, reach{m, q})
		}
	}
	return out
}

// find returns the member named server if p may reach it.
func (c *Combined) find(p *auth.Principal, server string) (reach, bool) {
	m := c.byName[server]
	if m == nil {
		return reach{}, false
	}
	q, ok := m.Rights.For(p)
	return reach{m, q}, ok
}

// serve is the combined transport, past the guard and the token check.
func (c *Combined) serve(w http.ResponseWriter, r *http.Request) {
	p := auth.PrincipalFrom(r.Context())
	if !markAuthenticated(r, p) {
		c.log.Warn("gateway: refused a connection over its principal's share", "remote", r.RemoteAddr)
		w.Header().Set("Connection", "close")
		errTooManyConnections.write(w, nil)
		return
	}
	version, _ := protocolVersion(r)
	switch {
	case r.Method == http.MethodPost:
	case version == modernVersion && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		w.Header().Set("Allow", "POST")
		errModernMethod.write(w, nil)
		return
	case r.Method == http.MethodGet:
		c.sessionGET(w, r, p)
		return
	case r.Method == http.MethodDelete:
		c.sessionDELETE(w, r, p)
		return
	default:
		errMethod.write(w, nil)
		return
	}
	if !isJSONContent(r) {
		errContentType.write(w, nil)
		return
	}
	if jsonOK, sseOK := accepts(r); !jsonOK && !sseOK {
		errAcceptPOST.write(w, nil)
		return
	}
	body, f, ok := c.front.readBody(w, r)
	if !ok {
		f.write(w, nil)
		return
	}
	msgs, batch, f, ok := parseBody(body)
	if !ok {
		f.write(w, nil)
		return
	}
	if version == modernVersion {
		c.serveModern(w, r, p, msgs, batch, body)
		return
	}
	c.sessionPOST(w, r, p, msgs, batch, version)
}

// serveModern serves one 2026-07-28 POST.
func (c *Combined) serveModern(w http.ResponseWriter, r *http.Request, p *auth.Principal, msgs []*jsonrpc.Message, batch bool, body []byte) {
	switch {
	case batch:
		errModernBatch.write(w, firstRequestID(msgs))
		return
	case msgs[0].IsResponse():
		errModernResponse.write(w, nil)
		return
	case msgs[0].IsNotification():
		w.WriteHeader(http.StatusAccepted)
		return
	}
	m := msgs[0]
	if removedMethods[m.Method] {
		removedMethod(m.Method).write(w, m.ID)
		return
	}
	out := &modernStatusWriter{ResponseWriter: w}
	if _, answered := combinedAnswers[m.Method]; !answered {
		// The server's gateway checks every header against the body it
		// gets; the combined endpoint checks what it rewrites (route).
		c.route(out, r, p, m, body, nil)
		return
	}
	if f, ok := checkModernHeaders(r, m, readModernMeta(m)); !ok {
		c.log.Info("gateway: refused a "+modernVersion+" request", "method", clip(m.Method), "reason", f.msg, "remote", r.RemoteAddr)
		f.write(w, m.ID)
		return
	}
	switch m.Method {
	case "server/discover":
		c.discover(out, r, p, m)
	case "subscriptions/listen":
		c.listen(w, r, p, m)
	default:
		c.list(out, r, p, m, nil)
	}
}

// combinedAnswers are the 2026-07-28 methods the combined endpoint answers
// itself (from its servers' answers); every other request names one server.
var combinedAnswers = map[string]bool{
	"server/discover": true, "subscriptions/listen": true,
	"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true,
}

// route forwards a request that names one server (a tool, a prompt, a
// resource, a completion reference) to that server's gateway, its name
// unprefixed, on the member session of s (2025-11-25; nil for
// 2026-07-28). A name of no server the caller reaches is answered as an
// unknown one, whether or not the server exists.
func (c *Combined) route(w http.ResponseWriter, r *http.Request, p *auth.Principal, m *jsonrpc.Message, raw []byte, s *combinedSession) {
	target, params, name, local, f := c.unprefix(p, m)
	if f.status == 0 && s == nil && nameMember(m.Method) != "" {
		f = checkNameHeader(r, name)
	}
	if f.status != 0 {
		c.log.Info("gateway: refused a combined request", "method", clip(m.Method), "reason", f.msg, "remote", r.RemoteAddr)
		f.write(w, m.ID)
		return
	}
	// raw (the client's body, m alone) with its params replaced keeps every
	// other byte; without it, or when its params cannot be found plainly,
	// m is encoded again.
	body, ok := jsonrpc.SetPlainMember(raw, "params", params)
	if !ok {
		var err error
		if body, err = m.WithParams(params).Encode(); err != nil {
			errInvalid.write(w, m.ID)
			return
		}
	}
	hdr := map[string]string{}
	if s == nil && nameMember(m.Method) != "" {
		hdr[nameHdr] = encodeHeaderValue(local)
	}
	if s != nil {
		var msid string
		var ok bool
		if w, msid, ok = c.routeSession(w, r, target, s); !ok {
			return
		}
		hdr["MCP-Session-Id"] = msid
	}
	server := target.m.Name
	target.m.Gateway.serveAuthenticated(w, memberRequest(r, body, hdr), target.p, target.m.Rights,
		func(method string, res json.RawMessage) json.RawMessage { return prefixResult(server, method, res) })
}

// checkNameHeader checks, on a 2026-07-28 request the combined endpoint
// routes, that Mcp-Name names what the body names (MCP 2026-07-28 §Server
// Validation): both are rewritten to the server's own name on the way, so
// the server's gateway could no longer tell them apart.
func checkNameHeader(r *http.Request, name string) failure {
	switch vs := r.Header.Values(nameHdr); {
	case len(vs) > 1:
		return repeatedHeader(nameHdr)
	case len(vs) == 0 || vs[0] == "":
		return headerMismatch("the Mcp-Name header is required on this method")
	default:
		hv, ok := decodeHeaderValue(vs[0])
		if !ok {
			return headerMismatch("the Mcp-Name header has invalid characters or Base64")
		}
		if hv != name {
			return headerMismatch("the Mcp-Name header " + quote(clip(hv)) + " does not match the body's " + quote(clip(name)))
		}
	}
	return failure{}
}

// memberRequest is r as a member gateway gets it: body and the headers of
// hdr (set; "" deletes) in place of the client's.
func memberRequest(r *http.Request, body []byte, hdr map[string]string) *http.Request {
	r2 := r.WithContext(r.Context()) // a shallow copy: only the body and headers differ
	r2.Header = r.Header.Clone()
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	for k, v := range hdr {
		if v == "" {
			r2.Header.Del(k)
		} else {
			r2.Header.Set(k, v)
		}
	}
	return r2
}

// Combined-endpoint refusals.
var (
	errCombinedBatch  = failure{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "gateway: the combined endpoint takes one JSON-RPC message per POST, not a batch: its messages could belong to several servers", nil}
	errCombinedCursor = failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: the combined endpoint lists every server's items in one answer; send no cursor", nil}
)

// unknownName refuses a name that names no server the caller reaches
// (none, another's, or one without the server prefix), the same for each,
// so that the answer does not tell which servers exist. A resource's
// carries its URI as sent in error.data.uri, as a server's "resource not
// found" does (MCP 2026-07-28, SEP-2164).
func unknownName(what, name string) failure {
	var data any
	if what == "resource" {
		data = map[string]string{"uri": name}
	}
	return failure{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "gateway: unknown " + what + " " + quote(clip(name)) +
		" on the combined endpoint; names are <server>" + NameSeparator + "<name> (resources: <server>+<uri>) of a server this token reaches", data}
}

// idleGrace is how long a combined session without requests lives past
// its members' idle timeout, so that it never outlives them by much.
const idleGrace = time.Minute
