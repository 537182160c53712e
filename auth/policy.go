package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Rule is one authorization policy rule: who (a scope, or a claim value)
// may reach what (tool names). A tool is reachable when some rule grants
// it to the token; everything else is denied (fail-closed). The caller
// resolves toolsets to tool names; Toolsets only names them for messages.
type Rule struct {
	// Scope grants the rule to a token holding this scope. Exactly one of
	// Scope and Claim is set.
	Scope string
	// Claim is a claim path (Options.Validate): realm_access.roles,
	// resource_access.<client>.roles, groups, or another top-level claim
	// holding a string or an array of strings. The rule applies when the
	// claim holds one of Values.
	Claim  string
	Values []string
	// Tools are the tool names the rule grants; never empty.
	Tools []string
}

// who describes the rule's subject, for messages.
func (r Rule) who() string {
	if r.Scope != "" {
		return "scope " + r.Scope
	}
	return r.Claim + " in " + strings.Join(r.Values, ",")
}

// registeredClaims are claims whose meaning is fixed elsewhere (RFC 7519,
// RFC 9068, RFC 8693, RFC 7800): a policy on them cannot mean what it says
// (scope has its own form, Rule.Scope).
var registeredClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "azp", "client_id", "scope", "scp", "cnf", "typ", "auth_time", "acr", "amr", "sid"}

// checkClaimPath checks a policy's claim path: Keycloak's realm roles
// (realm_access.roles), a client's roles (resource_access.<client>.roles),
// or a top-level claim (groups, roles, …) that is not a registered claim.
// Any other dotted path cannot exist in a Keycloak or RFC 9068 token.
func checkClaimPath(path string) error {
	parts := strings.Split(path, ".")
	switch {
	case path == "realm_access.roles":
		return nil
	case len(parts) == 3 && parts[0] == "resource_access" && parts[1] != "" && parts[2] == "roles":
		return nil
	case path == "realm_access" || path == "resource_access":
		// Keycloak's objects; the roles are inside them.
	case len(parts) == 1 && path != "" && !slices.Contains(registeredClaims, path):
		return nil
	case len(parts) == 1 && path != "":
		return fmt.Errorf("%q is a registered claim that names no role or group; use scope: for scopes, or realm_access.roles, resource_access.<client>.roles, groups", path)
	}
	return fmt.Errorf("%q cannot exist in a token: use realm_access.roles, resource_access.<client>.roles, or a top-level claim such as groups", path)
}

// checkRules reports every problem of a policy.
func checkRules(rules []Rule) []error {
	var errs []error
	for i, r := range rules {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("auth: policy rule %d: "+format, append([]any{i}, args...)...))
		}
		switch {
		case (r.Scope == "") == (r.Claim == ""):
			bad("names who it applies to with exactly one of scope and claim")
		case r.Scope != "":
			if err := checkScope(r.Scope); err != nil {
				bad("%v", err)
			}
			if len(r.Values) > 0 {
				bad("values go with claim, not with scope")
			}
		default:
			if err := checkClaimPath(r.Claim); err != nil {
				bad("claim: %v", err)
			}
			if len(r.Values) == 0 || slices.Contains(r.Values, "") {
				bad("claim %s needs values: the roles or groups it applies to", r.Claim)
			}
		}
		if len(r.Tools) == 0 {
			bad("grants nothing: list toolsets or tools")
		}
	}
	return errs
}

// policyScopes are the scopes the rules name, in rule order, once each.
func policyScopes(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		if r.Scope != "" && !slices.Contains(out, r.Scope) {
			out = append(out, r.Scope)
		}
	}
	return out
}

// needsClaims reports whether some rule reads a claim.
func needsClaims(rules []Rule) bool {
	return slices.ContainsFunc(rules, func(r Rule) bool { return r.Claim != "" })
}

// grant sets p.Tools from the policy: the sorted union of what every rule
// that applies to p grants, empty (not nil) when none does. top holds the
// token's verified claims by exact name. With no policy p.Tools stays nil.
func (a *Authenticator) grant(p *Principal, top map[string]json.RawMessage) {
	p.claims = top // for Rights.For, which applies another server's rules
	if len(a.opts.Policies) == 0 {
		return
	}
	p.Tools = grantTools(a.opts.Policies, p.Scopes, top)
}

// claimValues reads a claim path of checkClaimPath's forms as strings: a
// string claim is one value, an array keeps its string members. Anything
// else holds nothing.
func claimValues(top map[string]json.RawMessage, path string) []string {
	parts := strings.Split(path, ".")
	raw := top[parts[0]]
	for _, p := range parts[1:] {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		raw = obj[p]
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var out []string
	for _, m := range many {
		if json.Unmarshal(m, &one) == nil {
			out = append(out, one)
		}
	}
	return out
}

// Policy reports whether tools are decided by policy rules (Principal.Tools
// is then set on every principal).
func (a *Authenticator) Policy() bool { return len(a.opts.Policies) > 0 }

// GrantingScopes returns the scopes of the rules that would grant tool, in
// rule order: what a token could step up to. Empty when only claim rules,
// or none, grant it.
func (a *Authenticator) GrantingScopes(tool string) []string {
	return grantingScopes(a.opts.Policies, tool)
}

// ErrNeedsToolScope: a valid token's scopes do not grant the tool it
// called, and a scope of the policy would.
var ErrNeedsToolScope = check(ErrInsufficientScope, "this tool needs a scope the token does not hold")

// StepUp answers r, a tools/call of tool that p's token may not make, with
// 403 insufficient_scope when a policy scope would grant the tool, and
// reports whether it did. The challenge's scope is what the client should
// ask for: the scopes the token holds, the required scopes and the first
// rule scope that grants the tool (rules are listed from least to most
// privileged), so the new token keeps what this one had (MCP 2025-11-25
// §Scope Challenge Handling). It writes nothing and reports false when r
// did not pass an Authenticator's Middleware or no scope grants the tool:
// the caller refuses the call as JSON-RPC then.
func StepUp(w http.ResponseWriter, r *http.Request, tool string) bool {
	a, _ := r.Context().Value(authenticatorKey{}).(*Authenticator)
	p := PrincipalFrom(r.Context())
	if a == nil || p == nil {
		return false
	}
	granting := a.GrantingScopes(tool)
	if rights := rightsFrom(r); rights != nil {
		// A server behind a combined endpoint: its own rules decide.
		if granting = grantingScopes(rights.Policies, tool); len(granting) == 0 {
			return false
		}
		a.writeError(w, schemeOf(r, ErrNeedsToolScope), "tool "+quoteTool(tool)+" needs the scope "+granting[0]+"; ask the authorization server for a token with it", stepUpScopes(a, p, rights, granting[0]))
		return true
	}
	if len(granting) == 0 {
		return false
	}
	var scopes []string
	for _, s := range slices.Concat(p.Scopes, a.opts.RequiredScopes, granting[:1]) {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	a.writeError(w, schemeOf(r, ErrNeedsToolScope), "tool "+quoteTool(tool)+" needs the scope "+granting[0]+"; ask the authorization server for a token with it", strings.Join(scopes, " "))
	return true
}

// quoteTool shows a client-chosen tool name in a message: in single
// quotes and at most 64 bytes, so it cannot grow the challenge; the
// challenge percent-encodes what RFC 6750 does not allow in it.
func quoteTool(tool string) string {
	if len(tool) > 64 {
		tool = tool[:64]
	}
	return "'" + tool + "'"
}

// errPolicyWrite: a policy and a write scope both decide what a token may
// do; only one may.
var errPolicyWrite = errors.New("auth: write scope and policies both decide what a token may do; express the write scope as a policy rule instead")
