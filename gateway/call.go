package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// call is one HTTP request's decisions, made once at its edge (serveMCP)
// and completed as the request finds its binding; every step that decides
// something reads it instead of asking the request's context again.
type call struct {
	r *http.Request

	// From the token and the headers, at the edge.
	principal *auth.Principal // nil in localhost mode
	owner     auth.Owner      // the principal's; zero in localhost mode
	granted   toolSet         // the tools the token grants; nil without a policy
	// roToken: the token may run no writing tool (it lacks the write
	// scope, or the policy grants it only safe tools); readOnly: the
	// request gets read-only treatment (roToken, or a read-only gateway).
	roToken, readOnly bool
	jsonOK, sseOK     bool   // what the client accepts
	jsonBody          bool   // the body is declared application/json
	version           string // MCP-Protocol-Version (protocolVersion)
	versionOK         bool   // version is one with sessions

	// Once the request has found its binding (set together).
	key     bindKey
	b       *binding
	conn    *worker.Conn // b's worker, as the request found it
	acc     access
	allowed toolSet // what the request may reach on conn; nil without a policy
	log     *slog.Logger

	// A 2026-07-28 request's _meta and name member.
	meta modernMeta
	// then, when set, rewrites a result after the filters (annotate).
	then func(json.RawMessage) json.RawMessage
	// outer, for a request a Combined endpoint forwards, rewrites each
	// result last, as the client of the combined endpoint must see it
	// (its prefixed names); nil otherwise.
	outer func(method string, result json.RawMessage) json.RawMessage
}

// newCall reads r's principal once and decides what follows from it.
func (g *Gateway) newCall(r *http.Request) *call {
	c := &call{r: r, principal: auth.PrincipalFrom(r.Context()), log: g.log}
	if f, ok := r.Context().Value(outerKey{}).(func(string, json.RawMessage) json.RawMessage); ok {
		c.outer = f
	}
	if p := c.principal; p != nil {
		c.owner = p.Owner()
		if p.Tools != nil {
			c.granted = set(p.Tools)
		}
		c.roToken = p.ReadOnly || (p.Tools != nil && g.onlySafe(c.granted))
	}
	c.readOnly = g.opts.ReadOnly || c.roToken
	c.jsonOK, c.sseOK = accepts(r)
	c.jsonBody = isJSONContent(r)
	c.version, c.versionOK = protocolVersion(r)
	return c
}

// callee is the worker c reached, as the audit events name it.
func (c *call) callee() callee { return c.b.callee() }
