package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// listKey is the result member that holds each list method's items.
var listKey = map[string]string{
	"tools/list": "tools", "prompts/list": "prompts",
	"resources/list": "resources", "resources/templates/list": "resourceTemplates",
}

// maxMemberPages bounds the pages of one server's list the combined
// endpoint follows for one client request.
const maxMemberPages = 16

// memberAnswer is one server's answer to a request the combined endpoint
// asked it on the caller's behalf.
type memberAnswer struct {
	result json.RawMessage // nil when the server failed or refused
	err    error           // why, for the log
	code   int             // the JSON-RPC error code of a refusal; 0 otherwise
}

// ask sends body to rc's server as r's caller and returns its answer, read
// whole (a JSON body; the last answer of an event stream).
func (c *Combined) ask(r *http.Request, rc reach, body []byte, sid string) memberAnswer {
	rec := &memberRecorder{header: http.Header{}}
	hdr := map[string]string{"Accept": "application/json", nameHdr: "", "Content-Type": "application/json"}
	if sid != "" {
		hdr["MCP-Session-Id"] = sid
	}
	rc.m.Gateway.serveAuthenticated(rec, memberRequest(r, body, hdr), rc.p, rc.m.Rights, nil)
	ans := rec.answer()
	if ans == nil {
		return memberAnswer{err: fmt.Errorf("HTTP %d without a JSON-RPC answer", rec.status())}
	}
	if ans.Error != nil {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(ans.Error, &e)
		return memberAnswer{err: fmt.Errorf("HTTP %d, %d %s", rec.status(), e.Code, clip(e.Message)), code: e.Code}
	}
	return memberAnswer{result: ans.Result}
}

// list answers a list method with every reachable server's items, in the
// servers' order, each prefixed. A server that cannot answer (its worker
// does not start, it fails) is left out with a log line, never failing the
// list; one that does not have the method (-32601) adds nothing.
func (c *Combined) list(w http.ResponseWriter, r *http.Request, p *auth.Principal, m *jsonrpc.Message, s *combinedSession) {
	key := listKey[m.Method]
	var fields map[string]json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &fields) != nil {
		errInvalid.write(w, m.ID)
		return
	}
	if cur, ok := fields["cursor"]; ok && string(cur) != "null" {
		errCombinedCursor.write(w, m.ID)
		return
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	targets := c.reachable(p)
	items := make([][]json.RawMessage, len(targets))
	ttls := make([]int64, len(targets))
	var wg sync.WaitGroup
	for i, rc := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items[i], ttls[i] = c.listOne(r, rc, m, key, fields, s)
		}()
	}
	wg.Wait()
	all := []json.RawMessage{}
	ttl := int64(-1)
	for i := range targets {
		all = append(all, items[i]...)
		if ttls[i] >= 0 && (ttl < 0 || ttls[i] < ttl) {
			ttl = ttls[i]
		}
	}
	res := map[string]json.RawMessage{key: mustMarshal(all)}
	if s == nil {
		c.complete(res, m.Method, max(ttl, 0))
	}
	c.writeResult(w, r, m.ID, mustMarshal(res))
}

// listOne returns one server's items of a list, prefixed, and its ttlMs
// (-1 when it gave none). A failure is logged and lists nothing.
func (c *Combined) listOne(r *http.Request, rc reach, m *jsonrpc.Message, key string, fields map[string]json.RawMessage, s *combinedSession) ([]json.RawMessage, int64) {
	log := c.log.With("server", rc.m.Name, "method", m.Method)
	sid := ""
	if s != nil {
		var err error
		if sid, err = s.member(c, r, rc); err != nil {
			log.Warn("gateway: left a server out of a combined list", "err", err)
			return nil, -1
		}
	}
	var out []json.RawMessage
	ttl := int64(-1)
	params := make(map[string]json.RawMessage, len(fields)+1)
	for k, v := range fields {
		params[k] = v
	}
	delete(params, "cursor")
	for page := 0; page < maxMemberPages; page++ {
		body, err := m.WithParams(mustMarshal(params)).Encode()
		if err != nil {
			return out, ttl
		}
		ans := c.ask(r, rc, body, sid)
		switch {
		case ans.code == jsonrpc.CodeMethodNotFound:
			return out, ttl // the server has none of these
		case ans.result == nil:
			log.Warn("gateway: left a server out of a combined list", "err", ans.err)
			return nil, -1
		}
		var res struct {
			Items      []map[string]json.RawMessage `json:"-"`
			NextCursor json.RawMessage              `json:"nextCursor"`
			TTL        *int64                       `json:"ttlMs"`
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal(ans.result, &raw) != nil || json.Unmarshal(ans.result, &res) != nil || json.Unmarshal(raw[key], &res.Items) != nil {
			log.Warn("gateway: left a server out of a combined list", "err", "its result is not a list")
			return nil, -1
		}
		if res.TTL != nil && (ttl < 0 || *res.TTL < ttl) {
			ttl = *res.TTL
		}
		for _, it := range res.Items {
			if prefixItem(rc.m.Name, key, it) {
				out = append(out, mustMarshal(it))
			} else {
				log.Warn("gateway: left an item out of a combined list: no name, or a prefixed tool name over 128 characters", "name", clip(string(it["name"])))
			}
		}
		var next string
		if json.Unmarshal(res.NextCursor, &next) != nil || next == "" {
			return out, ttl
		}
		params["cursor"] = res.NextCursor
	}
	log.Warn("gateway: a server's list has more pages than the combined endpoint follows; the rest is left out", "pages", maxMemberPages)
	return out, ttl
}

// maxToolName is the longest tool name MCP 2026-07-28 allows.
const maxToolName = 128

// prefixItem prefixes one listed item's identifier; false leaves out an
// item without one, and a tool whose prefixed name would be too long.
func prefixItem(server, key string, it map[string]json.RawMessage) bool {
	member := "name"
	switch key {
	case "resources":
		member = "uri"
	case "resourceTemplates":
		member = "uriTemplate"
	}
	var id string
	if json.Unmarshal(it[member], &id) != nil || id == "" {
		return false
	}
	if member == "name" {
		id = prefixName(server, id)
		if key == "tools" && len(id) > maxToolName {
			return false // MCP 2026-07-28: a tool name is at most 128 characters
		}
	} else {
		id = prefixURI(server, id)
	}
	it[member] = mustMarshal(id)
	return true
}

// complete adds what every 2026-07-28 result of the combined endpoint
// carries: resultType, the combined serverInfo, and on cacheable results
// cacheScope "private" (each answer is the caller's own) and ttlMs.
func (c *Combined) complete(res map[string]json.RawMessage, method string, ttl int64) {
	res["resultType"] = json.RawMessage(`"complete"`)
	res["_meta"] = mustMarshal(map[string]json.RawMessage{metaServerInfo: c.info})
	if cacheable[method] {
		res["cacheScope"] = json.RawMessage(`"private"`)
		res["ttlMs"] = mustMarshal(ttl)
	}
}

// writeResult answers id with result: JSON, or one event for a client
// that accepts only an event stream.
func (c *Combined) writeResult(w http.ResponseWriter, r *http.Request, id, result json.RawMessage) {
	body := resultResponse(id, result)
	if jsonOK, _ := accepts(r); !jsonOK {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message\ndata: "))
		_, _ = w.Write(body)
		_, _ = w.Write([]byte("\n\n"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// discover answers server/discover without starting a worker: the
// capabilities any of the servers may offer (sessionCaps; a server
// without one answers its methods -32601, which the combined lists take as
// nothing to add) and instructions naming each server the caller reaches
// and its prefixes. A client's first request so starts nothing; its
// tools/list starts the workers of the servers it lists.
func (c *Combined) discover(w http.ResponseWriter, r *http.Request, p *auth.Principal, m *jsonrpc.Message) {
	res := map[string]json.RawMessage{
		"capabilities":      combinedCaps,
		"serverInfo":        c.info,
		"supportedVersions": mustMarshal(supportedVersions),
		"instructions":      mustMarshal(c.instructions(p)),
	}
	c.complete(res, m.Method, 0)
	c.writeResult(w, r, m.ID, mustMarshal(res))
}

// combinedCaps are the capabilities the combined endpoint declares, on
// server/discover and initialize alike.
var combinedCaps = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}}`)

// instructions name the servers p reaches and how their names are
// prefixed.
func (c *Combined) instructions(p *auth.Principal) string {
	var b strings.Builder
	b.WriteString("This endpoint combines several MCP servers. Tools and prompts are named <server>" + NameSeparator + "<name>, resources <server>" + resourceSeparator + "<uri>:")
	for _, rc := range c.reachable(p) {
		b.WriteString("\n- " + rc.m.Name + ": " + rc.m.Title)
	}
	return b.String()
}

// memberRecorder is the ResponseWriter of a request the combined endpoint asks
// a member on its own behalf (a list, server/discover, a session's
// initialize). What it holds is the member's answer, which the member's
// own buffers bound.
type memberRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *memberRecorder) Header() http.Header { return r.header }

func (r *memberRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *memberRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *memberRecorder) Flush() {}

func (r *memberRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// answer returns the JSON-RPC answer recorded: the body, or the last
// answer of an event stream; nil when there is none.
func (r *memberRecorder) answer() *jsonrpc.Message {
	data := r.body.Bytes()
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		var last *jsonrpc.Message
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				if m, err := jsonrpc.Decode(d); err == nil && m.IsResponse() {
					last = m
				}
			}
		}
		return last
	}
	m, err := jsonrpc.Decode(data)
	if err != nil || !m.IsResponse() {
		return nil
	}
	return m
}
