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

	// From the token, at the edge.
	principal *auth.Principal // nil in localhost mode
	granted   toolSet         // the tools the token grants; nil without a policy
	// roToken: the token may run no writing tool (it lacks the write
	// scope, or the policy grants it only safe tools).
	roToken       bool
	jsonOK, sseOK bool // what the client accepts

	// Once the request has found its binding.
	key     bindKey
	b       *binding
	conn    *worker.Conn // b's worker, as the request found it
	acc     access
	allowed toolSet // what the request may reach on conn; nil without a policy
	log     *slog.Logger
	callee  callee // the worker, as the audit events name it

	// A 2026-07-28 request's _meta.
	meta modernMeta
	caps json.RawMessage // its clientCapabilities
	// then, when set, rewrites a result after the filters (annotate).
	then func(json.RawMessage) json.RawMessage
}

// newCall reads r's principal once and decides what follows from it.
func (g *Gateway) newCall(r *http.Request) *call {
	c := &call{r: r, principal: auth.PrincipalFrom(r.Context()), log: g.log}
	if p := c.principal; p != nil {
		if p.Tools != nil {
			c.granted = set(p.Tools)
		}
		c.roToken = p.ReadOnly || (p.Tools != nil && g.onlySafe(c.granted))
	}
	c.jsonOK, c.sseOK = accepts(r)
	return c
}

// readOnly reports whether the request gets read-only treatment: the
// gateway is read-only, or its token may not write.
func (g *Gateway) readOnly(c *call) bool { return g.opts.ReadOnly || c.roToken }

// bind completes c with b, the binding it reaches, and b's worker.
func (c *call) bind(b *binding) {
	c.b, c.conn, c.log = b, b.worker(), b.log
	c.callee = b.callee()
}
