package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Rights are what one MCP server asks of a token that reached it through an
// endpoint serving several servers (the gateway's combined /mcp): the token
// was verified there, for that endpoint's audience, and each server then
// decides its own share from the same token, as its own path would.
type Rights struct {
	// RequiredScopes must all be held, or the server is out of reach.
	RequiredScopes []string
	// WriteScope makes the server's worker read-write; a token without it
	// gets a read-only one. Empty: no write scope (read-write, unless a
	// policy decides).
	WriteScope string
	// Policies decide the server's tools as Options.Policies do; none:
	// every tool, subject to WriteScope.
	Policies []Rule
}

// For returns p as the server of these rights sees it: ReadOnly from
// WriteScope, Tools from Policies (claim rules read the token's verified
// claims), everything else as p. It reports false when p lacks a required
// scope, or the policies grant it no tool: the server is out of p's reach.
// A nil p (no authentication) reaches every server, unchanged; so does a
// principal that no token made (a Unix socket's peer): the rights it was
// given (a read-only flag, its tools) are what every server's own path
// holds it to, not scopes it never had.
func (r Rights) For(p *Principal) (*Principal, bool) {
	if p == nil {
		return nil, true
	}
	if p.claims == nil { // Authenticator.grant sets them for every token
		q := *p
		return &q, true
	}
	for _, s := range r.RequiredScopes {
		if !slices.Contains(p.Scopes, s) {
			return nil, false
		}
	}
	q := *p
	q.Scopes = slices.Clone(p.Scopes)
	q.ReadOnly = r.WriteScope != "" && !slices.Contains(q.Scopes, r.WriteScope)
	q.Tools = nil
	if len(r.Policies) > 0 {
		q.Tools = grantTools(r.Policies, q.Scopes, p.claims)
		if len(q.Tools) == 0 {
			return nil, false
		}
	}
	return &q, true
}

type rightsKey struct{}

// WithRights returns a context whose step-up challenges (StepUp,
// WriteScopeRequired) name the scopes of r rather than those of the
// Authenticator that let the request in, which still writes them (its
// resource metadata, its schemes). The scope asked for keeps every scope
// the token holds, so that stepping up for one server loses no other.
func WithRights(ctx context.Context, r Rights) context.Context {
	return context.WithValue(ctx, rightsKey{}, &r)
}

// rightsFrom returns the Rights of WithRights, or nil.
func rightsFrom(r *http.Request) *Rights {
	v, _ := r.Context().Value(rightsKey{}).(*Rights)
	return v
}

// grantTools is the sorted union of what the rules that apply grant, empty
// (not nil) when none does; top holds the token's verified claims by exact
// name.
func grantTools(rules []Rule, scopes []string, top map[string]json.RawMessage) []string {
	tools := []string{}
	for _, r := range rules {
		applies := false
		if r.Scope != "" {
			applies = slices.Contains(scopes, r.Scope)
		} else {
			held := claimValues(top, r.Claim)
			applies = slices.ContainsFunc(r.Values, func(v string) bool { return slices.Contains(held, v) })
		}
		if applies {
			tools = append(tools, r.Tools...)
		}
	}
	slices.Sort(tools)
	return slices.Compact(tools)
}

// stepUpScopes are the scopes a challenge under r asks for: what the token
// holds, the required scopes of the endpoint and of r, and more, each once.
func stepUpScopes(a *Authenticator, p *Principal, r *Rights, more ...string) string {
	var scopes []string
	for _, s := range slices.Concat(p.Scopes, a.opts.RequiredScopes, r.RequiredScopes, more) {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return strings.Join(scopes, " ")
}

// grantingScopes are the scopes of the rules that would grant tool, in
// rule order.
func grantingScopes(rules []Rule, tool string) []string {
	var out []string
	for _, r := range rules {
		if r.Scope != "" && slices.Contains(r.Tools, tool) && !slices.Contains(out, r.Scope) {
			out = append(out, r.Scope)
		}
	}
	return out
}
