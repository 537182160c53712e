package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
)

func (c *Config) validateAuth(v *validator) {
	a := c.Auth
	if !c.Authenticated() {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.authorization_servers", len(a.AuthorizationServers) > 0},
			{"auth.required_scopes", len(a.RequiredScopes) > 0},
			{"auth.write_scope", a.WriteScope != ""},
			{"auth.extra_scopes", len(a.ExtraScopes) > 0},
			{"auth.hmac_secret_file", a.HMACSecretFile != ""},
			{"auth.policies", len(a.Policies) > 0},
			{"auth.initial_scopes", len(a.InitialScopes) > 0},
			{"auth.introspection", a.Introspection != "" && a.Introspection != IntrospectionOff},
			{"auth.introspection_client_id", a.IntrospectionClientID != ""},
			{"auth.introspection_client_secret_file", a.IntrospectionClientSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.issuer is empty, so tokens are not checked at all; set auth.issuer or remove %s", k.key)
			}
		}
		return
	}

	if err := auth.CheckURL(a.Issuer); err != nil {
		v.add("auth.issuer", "%v", err)
	}
	for i, s := range a.AuthorizationServers {
		if s == a.Issuer {
			continue // reported as auth.issuer, once
		}
		if err := auth.CheckURL(s); err != nil {
			v.add(fmt.Sprintf("auth.authorization_servers[%d]", i), "%v", err)
		}
	}

	checkScopes(v, "auth.required_scopes", a.RequiredScopes)
	checkScopes(v, "auth.extra_scopes", a.ExtraScopes)
	if a.WriteScope != "" {
		checkScopes(v, "auth.write_scope", []string{a.WriteScope})
		if slices.Contains(a.RequiredScopes, a.WriteScope) {
			v.add("auth.write_scope", "%q is also in auth.required_scopes, so no session could ever be read-only; remove it from required_scopes", a.WriteScope)
		}
		if slices.Contains(a.ExtraScopes, a.WriteScope) {
			v.add("auth.extra_scopes", "%q is the auth.write_scope, which is advertised already; remove it from extra_scopes", a.WriteScope)
		}
	}
	for _, s := range a.ExtraScopes {
		if slices.Contains(a.RequiredScopes, s) {
			v.add("auth.extra_scopes", "%q is also in auth.required_scopes, which are advertised already; remove it from extra_scopes", s)
		}
	}

	c.validatePolicies(v)

	if strings.TrimSpace(a.UserClaim) == "" {
		v.add("auth.user_claim", "is empty; name the claim holding the user id, e.g. sub or preferred_username")
	}

	hasHMAC := false
	for _, alg := range a.Algorithms {
		hasHMAC = hasHMAC || slices.Contains(auth.HMACAlgorithms(), alg)
		switch err := auth.CheckAlgorithm(alg, a.HMACSecretFile != ""); {
		case errors.Is(err, auth.ErrNeedsHMACSecret):
			v.add("auth.algorithms", "%s needs a shared secret in auth.hmac_secret_file; without one an attacker could sign with a public key, so remove it or set the file", alg)
		case err != nil:
			v.add("auth.algorithms", "%v; remove it", err)
		}
	}
	if a.HMACSecretFile != "" {
		if !hasHMAC {
			v.add("auth.hmac_secret_file", "is set but auth.algorithms lists no HS256, HS384 or HS512; add the one your issuer signs with (or remove auth.algorithms: the default then includes them)")
		}
		if _, err := readSecret(a.HMACSecretFile); err != nil {
			v.add("auth.hmac_secret_file", "%v", err)
		}
	}

	if a.Leeway < 0 || a.Leeway > 5*time.Minute {
		v.add("auth.leeway", "%v is outside 0 to 5m; a clock skew allowance that long accepts tokens before their time", a.Leeway)
	}
	if a.MaxTokenBytes < 0 || (a.MaxTokenBytes > 0 && a.MaxTokenBytes < 1<<10) || a.MaxTokenBytes > 1<<20 {
		v.add("auth.max_token_bytes", "%d is outside 1KiB to 1MiB; use a size such as 16KiB", int64(a.MaxTokenBytes))
	}
	if a.TokenCacheSize < -1 || a.TokenCacheSize > 1_000_000 {
		v.add("auth.token_cache_size", "%d is outside -1 (off) to 1000000", a.TokenCacheSize)
	}
	c.validateIntrospection(v)
	c.validateDPoP(v)
}

func (c *Config) validateDPoP(v *validator) {
	a := c.Auth
	switch a.DPoP {
	case "", auth.DPoPOff, auth.DPoPAllowed, auth.DPoPRequired:
	default:
		v.add("auth.dpop", "%q is not a mode; use off, allowed or required", a.DPoP)
	}
	if a.DPoP == auth.DPoPOff {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.dpop_nonce", a.DPoPNonce},
			{"auth.dpop_nonce_secret_file", a.DPoPNonceSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.dpop is off; set auth.dpop to allowed or required, or remove %s", k.key)
			}
		}
	}
	if a.DPoPNonceSecretFile != "" {
		if !a.DPoPNonce {
			v.add("auth.dpop_nonce_secret_file", "is set but auth.dpop_nonce is false; set auth.dpop_nonce: true, or remove the file")
		} else if _, err := readSecret(a.DPoPNonceSecretFile); err != nil {
			v.add("auth.dpop_nonce_secret_file", "%v", err)
		}
	}
	if l := a.DPoPProofLifetime; l != 0 && (l < time.Second || l > 5*time.Minute) {
		v.add("auth.dpop_proof_lifetime", "%v is outside 1s to 5m; it is how long a copied proof could be replayed at another replica", l)
	}
	if l := a.DPoPNonceLifetime; l != 0 && (l < 10*time.Second || l > time.Hour) {
		v.add("auth.dpop_nonce_lifetime", "%v is outside 10s to 1h", l)
	}
	if n := a.DPoPReplayCacheSize; n != 0 && (n < 1000 || n > 1<<24) {
		v.add("auth.dpop_replay_cache_size", "%d is outside 1000 to 16777216", n)
	}
}

func (c *Config) validateIntrospection(v *validator) {
	a := c.Auth
	switch a.Introspection {
	case "", IntrospectionOff:
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.introspection_client_id", a.IntrospectionClientID != ""},
			{"auth.introspection_client_secret_file", a.IntrospectionClientSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.introspection is off; set auth.introspection to opaque or all, or remove %s", k.key)
			}
		}
	case IntrospectionOpaque, IntrospectionAll:
		if a.IntrospectionClientID == "" {
			v.add("auth.introspection_client_id", "is required with auth.introspection %s: the client this gateway authenticates as at the issuer's introspection endpoint", a.Introspection)
		}
		if a.IntrospectionClientSecretFile == "" {
			v.add("auth.introspection_client_secret_file", "is required with auth.introspection %s: a file holding that client's secret", a.Introspection)
		} else if _, err := readClientSecret(a.IntrospectionClientSecretFile); err != nil {
			v.add("auth.introspection_client_secret_file", "%v", err)
		}
	default:
		v.add("auth.introspection", "%q is not a mode; use off, opaque or all", a.Introspection)
	}
	if ttl := a.IntrospectionMaxCacheTTL; (ttl != 0 && ttl < time.Second) || ttl > time.Hour {
		v.add("auth.introspection_max_cache_ttl", "%v is outside 1s to 1h; it is how long a revoked token may keep working", a.IntrospectionMaxCacheTTL)
	}
	if a.IntrospectionMaxConcurrent < 0 || a.IntrospectionMaxConcurrent > 1024 {
		v.add("auth.introspection_max_concurrent", "%d is outside 1 to 1024", a.IntrospectionMaxConcurrent)
	}
	if a.IntrospectionPerAddressPerMinute < 0 || a.IntrospectionPerAddressPerMinute > 100000 {
		v.add("auth.introspection_per_address_per_minute", "%d is outside 1 to 100000", a.IntrospectionPerAddressPerMinute)
	}
}

// validatePolicies reports every problem of auth.policies and
// auth.initial_scopes, by key.
func (c *Config) validatePolicies(v *validator) {
	a := c.Auth
	if len(a.Policies) > 0 && a.WriteScope != "" {
		v.add("auth.write_scope", "is set together with auth.policies; only one may decide what a token reaches: express it as a rule (scope: %s, with the tools it grants)", a.WriteScope)
	}
	advertised := slices.Concat(a.RequiredScopes, []string{a.WriteScope}, a.ExtraScopes)
	for i, p := range a.Policies {
		key := fmt.Sprintf("auth.policies[%d]", i)
		switch {
		case (p.Scope == "") == (p.Claim == ""):
			v.add(key, "names who it applies to with exactly one of scope and claim")
		case p.Scope != "":
			checkScopes(v, key+".scope", []string{p.Scope})
			advertised = append(advertised, p.Scope)
			if len(p.Values) > 0 {
				v.add(key+".values", "go with claim, not with scope; remove them")
			}
		default:
			if err := auth.CheckClaimPath(p.Claim); err != nil {
				v.add(key+".claim", "%v", err)
			}
			if len(p.Values) == 0 || slices.Contains(p.Values, "") {
				v.add(key+".values", "must list the roles or groups the rule applies to")
			}
		}
		checkNames(v, key+".toolsets", p.Toolsets)
		checkNames(v, key+".tools", p.Tools)
		if len(p.Toolsets) == 0 && len(p.Tools) == 0 {
			v.add(key, "grants nothing: list toolsets or tools")
			continue
		}
		if _, err := c.policyTools(p); err != nil {
			v.add(key, "%v", err)
		}
	}
	checkScopes(v, "auth.initial_scopes", a.InitialScopes)
	for _, s := range a.InitialScopes {
		if !slices.Contains(advertised, s) {
			v.add("auth.initial_scopes", "%q is not advertised: list only required, policy or extra scopes", s)
		}
	}
}

// checkScopes reports each scope that is not an RFC 6749 scope token
// (auth.CheckScope).
func checkScopes(v *validator, key string, scopes []string) {
	for _, s := range scopes {
		if err := auth.CheckScope(s); err != nil {
			v.add(key, "%v", err)
		}
	}
}

func (c *Config) validateIssuerCA(v *validator) {
	p := c.Auth.IssuerCAFile
	if p == "" {
		return
	}
	if c.Auth.Issuer == "" {
		v.add("auth.issuer_ca_file", "is set but auth.issuer is empty; set the issuer or remove the file")
	}
	if msg := checkReadable(p); msg != "" {
		v.add("auth.issuer_ca_file", "%s; give a PEM file of the CA that signed the issuer's certificate", msg)
	}
}
