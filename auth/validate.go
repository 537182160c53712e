package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/options"
)

// The ranges Validate accepts.
const (
	maxLeeway            = 5 * time.Minute
	minMaxTokenBytes     = 1 << 10
	maxMaxTokenBytes     = 1 << 20
	maxTokenCacheSize    = 1_000_000
	maxIntrospectionTTL  = time.Hour
	maxIntrospectionConc = 1024
	maxIntrospectionRate = 100000
)

// Validate reports every option an operator could get wrong, each as an
// *options.Error naming its field: the issuer and authorization servers
// (CheckURL), scope syntax and the roles of scopes (a scope is required,
// write or extra, never two), policy claim paths, the algorithm allow-list
// against HMACSecret, and the ranges of the numbers. Zero values stand for
// the defaults. Resource is checked when set. New applies the syntax
// rules too (URLs, scopes, claim paths, algorithms, the secret's length);
// the ranges and the roles of scopes are Validate's alone, so that a
// program embedding the Authenticator (a test with a tiny cache, say) is
// not held to what an operator may configure.
func (o Options) Validate() error {
	var p options.Problems
	if o.Issuer == "" {
		p.Add("Issuer", "is required: the authorization server's exact iss, e.g. https://kc.example/realms/mcp")
	} else if err := CheckURL(o.Issuer); err != nil {
		p.Add("Issuer", "%v", err)
	}
	if o.Resource != "" {
		if err := checkResource(o.Resource); err != nil {
			p.Add("Resource", "%v", err)
		}
	}
	for i, s := range o.AuthorizationServers {
		if s == o.Issuer {
			continue // reported as Issuer, once
		}
		if err := CheckURL(s); err != nil {
			p.Add(fmt.Sprintf("AuthorizationServers[%d]", i), "%v", err)
		}
	}

	scopes := func(field string, ss []string) {
		for _, s := range ss {
			if err := checkScope(s); err != nil {
				p.Add(field, "%v", err)
			}
		}
	}
	scopes("RequiredScopes", o.RequiredScopes)
	scopes("ExtraScopes", o.ExtraScopes)
	if o.WriteScope != "" {
		scopes("WriteScope", []string{o.WriteScope})
		if slices.Contains(o.RequiredScopes, o.WriteScope) {
			p.Add("WriteScope", "%q is also in RequiredScopes, so no session could ever be read-only; remove it from RequiredScopes", o.WriteScope)
		}
		if slices.Contains(o.ExtraScopes, o.WriteScope) {
			p.Add("ExtraScopes", "%q is the WriteScope, which is advertised already; remove it from ExtraScopes", o.WriteScope)
		}
	}
	for _, s := range o.ExtraScopes {
		if slices.Contains(o.RequiredScopes, s) {
			p.Add("ExtraScopes", "%q is also in RequiredScopes, which are advertised already; remove it from ExtraScopes", s)
		}
	}
	if len(o.Policies) > 0 && o.WriteScope != "" {
		p.Add("WriteScope", "is set together with Policies; only one may decide what a token reaches: express it as a rule (scope: %s, with the tools it grants)", o.WriteScope)
	}
	for i, r := range o.Policies {
		if r.Scope != "" {
			scopes(fmt.Sprintf("Policies[%d].Scope", i), []string{r.Scope})
		}
		if r.Claim != "" {
			if err := checkClaimPath(r.Claim); err != nil {
				p.Add(fmt.Sprintf("Policies[%d].Claim", i), "%v", err)
			}
		}
	}
	scopes("InitialScopes", o.InitialScopes)
	advertised := supportedScopes(o)
	for _, s := range o.InitialScopes {
		if !slices.Contains(advertised, s) {
			p.Add("InitialScopes", "%q is not advertised: list only required, policy or extra scopes", s)
		}
	}

	if o.UserClaim != "" && strings.TrimSpace(o.UserClaim) == "" {
		p.Add("UserClaim", "is empty; name the claim holding the user id, e.g. sub or preferred_username")
	}
	hasHMAC := false
	for _, alg := range o.Algorithms {
		hasHMAC = hasHMAC || slices.Contains(HMACAlgorithms(), alg)
		switch err := checkAlgorithm(alg, len(o.HMACSecret) > 0); {
		case errors.Is(err, errNeedsHMACSecret):
			p.Add("Algorithms", "%s needs a shared secret in HMACSecret; without one an attacker could sign with a public key, so remove it or set the secret", alg)
		case err != nil:
			p.Add("Algorithms", "%v; remove it", err)
		}
	}
	if len(o.HMACSecret) > 0 {
		if len(o.Algorithms) > 0 && !hasHMAC {
			p.Add("HMACSecret", "is set but Algorithms lists no HS256, HS384 or HS512; add the one your issuer signs with (or remove Algorithms: the default then includes them)")
		}
		if err := checkHMACSecret(o.HMACSecret); err != nil {
			p.Add("HMACSecret", "%v", err)
		}
	}

	if o.Leeway < 0 || o.Leeway > maxLeeway {
		p.Add("Leeway", "%v is outside 0 to 5m; a clock skew allowance that long accepts tokens before their time", o.Leeway)
	}
	if o.MaxTokenBytes < 0 || (o.MaxTokenBytes > 0 && o.MaxTokenBytes < minMaxTokenBytes) || o.MaxTokenBytes > maxMaxTokenBytes {
		p.Add("MaxTokenBytes", "%d is outside 1KiB to 1MiB; use a size such as 16KiB", o.MaxTokenBytes)
	}
	if o.TokenCacheSize < -1 || o.TokenCacheSize > maxTokenCacheSize {
		p.Add("TokenCacheSize", "%d is outside -1 (off) to %d", o.TokenCacheSize, maxTokenCacheSize)
	}
	if in := o.Introspection; in != nil {
		if ttl := in.MaxCacheTTL; (ttl != 0 && ttl < time.Second) || ttl > maxIntrospectionTTL {
			p.Add("Introspection.MaxCacheTTL", "%v is outside 1s to 1h; it is how long a revoked token may keep working", ttl)
		}
		if in.MaxConcurrent < 0 || in.MaxConcurrent > maxIntrospectionConc {
			p.Add("Introspection.MaxConcurrent", "%d is outside 1 to %d", in.MaxConcurrent, maxIntrospectionConc)
		}
		if in.PerAddressPerMinute < 0 || in.PerAddressPerMinute > maxIntrospectionRate {
			p.Add("Introspection.PerAddressPerMinute", "%d is outside 1 to %d", in.PerAddressPerMinute, maxIntrospectionRate)
		}
	}
	return p.Err("auth")
}
