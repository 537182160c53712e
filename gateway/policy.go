package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/jsonrpc"
)

// toolSet is the set of tools a policy grants (auth.Principal.Tools); nil
// means no policy decides, and read-only alone limits the tools.
type toolSet map[string]bool

// list returns the set's names, sorted; nil for nil.
func (t toolSet) list() []string {
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t))
	for n := range t {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// covers reports whether t holds every tool of other: a worker started
// with t has all the rights other grants. nil holds everything.
func (t toolSet) covers(other toolSet) bool {
	if t == nil {
		return true
	}
	if other == nil {
		return false
	}
	for n := range other {
		if !t[n] {
			return false
		}
	}
	return true
}

// and returns what both t and other allow; nil when both are nil.
func (t toolSet) and(other toolSet) toolSet {
	switch {
	case t == nil:
		return other
	case other == nil:
		return t
	}
	out := toolSet{}
	for n := range t {
		if other[n] {
			out[n] = true
		}
	}
	return out
}

// onlySafe reports whether the granted tools are all read-only-safe, so a
// worker limited to them may run no writing tool and is started read-only
// (its database too). A tool the operator did not vouch for counts as
// writing: fail-closed.
func (g *Gateway) onlySafe(t toolSet) bool {
	if t == nil {
		return false
	}
	for n := range t {
		if !g.safe[n] {
			return false
		}
	}
	return true
}

// policyRefusal decides a tools/call against the tools the request may
// reach (allowed, nil: no policy) and returns its refusal, or nil. The name
// is read as the worker reads it; an ambiguous one is refused. tools/call
// is matched in any case, as refuse does, so a method spelled otherwise
// cannot pass as something else.
func policyRefusal(log *slog.Logger, m *jsonrpc.Message, allowed toolSet, granted toolSet) []byte {
	if allowed == nil || !strings.EqualFold(m.Method, "tools/call") {
		return nil
	}
	name, ok := toolName(m.Params)
	if ok && allowed[name] {
		return nil
	}
	log.Info("gateway: refused a tool the policy does not grant here", "tool", clip(name), "unambiguous", ok)
	if ok && granted[name] {
		return sessionRightsRefusal(m.ID, clip(name))
	}
	return forbiddenRefusal(m.ID, clip(name))
}

// forbiddenRefusal answers a tools/call of a tool the token's policy does
// not grant: -32601 with data.kind "forbidden". A tool a policy scope would
// grant gets HTTP 403 insufficient_scope instead, when the request allows
// one (see stepUp).
func forbiddenRefusal(id json.RawMessage, tool string) []byte {
	return refusal(id, "forbidden", "tool", tool, " is not granted to this token by the gateway's auth.policies; "+
		"ask the operator for a role or scope that grants it")
}

// sessionRightsRefusal answers a call of a tool the token grants but the
// session's worker was not started with, on a session whose worker may
// hold uncommitted writes and so is not replaced: rights are never widened
// in place.
func sessionRightsRefusal(id json.RawMessage, tool string) []byte {
	return refusal(id, "sessionRights", "tool", tool, " is granted to this token but not to this session, which was opened with fewer rights and may hold uncommitted work; "+
		"commit or abort, then initialize a new session with this token")
}

// stepUp answers a single tools/call the token may not make, but a scope
// would allow, with HTTP 403 insufficient_scope naming the scopes to ask for,
// and reports whether it did: under auth.policies a tool a rule's scope
// grants (auth.StepUp); in the simple form a tool outside the safe set, for
// a token without the write scope (auth.WriteScopeRequired), which is the
// policy "the write scope grants every tool". A batch gets JSON-RPC
// refusals instead: one HTTP answer cannot refuse part of it. So does a
// read-only gateway: no token can help there.
//
// A challenge is a refusal like any other: it is reported to the observers
// (the audit trail, the metrics) here, on either protocol generation, with
// DecisionPolicy under auth.policies and DecisionReadOnly in the simple
// form; to is the worker the call would have gone to.
func (g *Gateway) stepUp(w http.ResponseWriter, c *call, msgs []*jsonrpc.Message, batch bool, to callee) bool {
	r, granted := c.r, c.granted
	if batch || len(msgs) != 1 || !msgs[0].IsRequest() || !strings.EqualFold(msgs[0].Method, "tools/call") {
		return false
	}
	m := msgs[0]
	// A 2026-07-28 tools/call's name was read at its edge (readModernMeta).
	name, ok := c.meta.name, c.meta.nameOK
	if c.meta.member != "name" {
		name, ok = toolName(m.Params)
	}
	decision := DecisionPolicy
	switch {
	case !ok:
		return false
	case granted != nil:
		if granted[name] || !auth.StepUp(w, r, name) {
			return false
		}
	case g.opts.ReadOnly || g.safe[name]:
		return false
	default:
		p := c.principal
		if p == nil || !p.ReadOnly || !auth.WriteScopeRequired(w, r,
			"tool '"+clip(name)+"' changes data and needs the write scope; ask the authorization server for a token with it") {
			return false
		}
		decision = DecisionReadOnly
	}
	g.refusedWith(c, m, to, c.readOnly, decision, http.StatusForbidden)
	return true
}

// filterAllowed keeps only the allowed tools in a tools/list result, as
// filterTools keeps the safe ones.
func filterAllowed(allowed toolSet) func(json.RawMessage) json.RawMessage {
	return func(result json.RawMessage) json.RawMessage {
		return keepTools(result, func(name string) bool { return allowed[name] })
	}
}
