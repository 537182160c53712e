package config

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
)

// validateAuth reports what only configuration can get wrong about tokens:
// keys set without an issuer, files, introspection modes and what a policy
// grants. The rules about the options themselves are auth's
// (auth.Options.Validate, reported by validateAuthOptions).
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
	c.validatePolicies(v)
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

// authOptions is the token checker's options as configured, without the
// files' contents and with the policies' tools unresolved; validation
// and AuthOptions start from it.
func (c *Config) authOptions() auth.Options {
	o := bind[auth.Options](c, authKeys)
	o.Resource = ""
	if u := c.Server.PublicURL; u != "" && auth.CheckURL(u) == nil && !strings.HasSuffix(strings.TrimRight(u, "/"), "/mcp") {
		o.Resource = c.Resource() // server.public_url's own problems are validateServer's
	}
	for _, p := range c.Auth.Policies {
		o.Policies = append(o.Policies, auth.Rule{Scope: p.Scope, Claim: p.Claim, Values: p.Values})
	}
	if c.Auth.Introspection != IntrospectionOpaque && c.Auth.Introspection != IntrospectionAll {
		o.Introspection.ClientID = "" // set without introspection: reported by validateIntrospection
	}
	return o
}

// validateAuthOptions reports auth's problems with the options, under
// their keys.
func (c *Config) validateAuthOptions(v *validator) {
	if !c.Authenticated() {
		return
	}
	o := c.authOptions()
	if f := c.Auth.HMACSecretFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			v.add("auth.hmac_secret_file", "%v", err)
			// Judge the algorithms as if the file held a secret: its
			// problem is reported once, here.
			b = make([]byte, auth.MinHMACSecret)
		}
		o.HMACSecret = trimNewline(b)
	}
	report(v, authKeys, o.Validate())
}

// AuthOptions maps the configuration to the token checker's options,
// reading the secret files it names and resolving the policies' tools.
// The caller adds what is not configuration (HTTP client, logger, hooks).
func (c *Config) AuthOptions() (auth.Options, error) {
	o := c.authOptions()
	o.Resource = c.Resource()
	rules, err := c.PolicyRules()
	if err != nil {
		return o, err
	}
	o.Policies = rules
	if c.Auth.HMACSecretFile != "" {
		if o.HMACSecret, err = c.HMACSecret(); err != nil {
			return o, err
		}
	}
	o.DPoP.PublicURL = c.Server.PublicURL
	if c.Auth.DPoPNonceSecretFile != "" {
		if o.DPoP.NonceSecret, err = c.DPoPNonceSecret(); err != nil {
			return o, err
		}
	}
	if c.CertificateBound() {
		proxies, err := c.ClientCertProxies()
		if err != nil {
			return o, fmt.Errorf("mcpgate: tls.client_cert_proxies: %w", err)
		}
		o.MTLS = auth.MTLS{Enabled: true, TrustedProxies: proxies}
	}
	switch c.Auth.Introspection {
	case IntrospectionOpaque, IntrospectionAll:
		if o.Introspection.ClientSecret, err = c.IntrospectionSecret(); err != nil {
			return o, err
		}
		o.Introspection.All = c.Auth.Introspection == IntrospectionAll
	default:
		o.Introspection = nil
	}
	return o, nil
}

func (c *Config) validateIntrospection(v *validator) {
	a := c.Auth
	switch a.Introspection {
	case "", IntrospectionOff:
		if c.entry != nil {
			break // the gateway's one client, checked at the top level against every server's credentials
		}
		if c.exchangesTokens() {
			// The same client exchanges tokens (worker.credentials, or a
			// server's credentials).
			if f := a.IntrospectionClientSecretFile; f != "" {
				if _, err := readClientSecret(f); err != nil {
					v.add("auth.introspection_client_secret_file", "%v", err)
				}
			}
			break
		}
		for _, k := range []struct {
			key string
			set bool
		}{
			{"auth.introspection_client_id", a.IntrospectionClientID != ""},
			{"auth.introspection_client_secret_file", a.IntrospectionClientSecretFile != ""},
		} {
			if k.set {
				v.add(k.key, "is set but auth.introspection is off; set auth.introspection to opaque or all, or a worker.credentials (or servers[].credentials) entry from token_exchange, or remove %s", k.key)
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
}

// validatePolicies reports what auth.policies grant: the forms of a rule
// and its toolsets and tools. Scopes and claim paths are auth's.
func (c *Config) validatePolicies(v *validator) {
	for i, p := range c.Auth.Policies {
		key := fmt.Sprintf("auth.policies[%d]", i)
		switch {
		case (p.Scope == "") == (p.Claim == ""):
			v.add(key, "names who it applies to with exactly one of scope and claim")
		case p.Scope != "":
			if len(p.Values) > 0 {
				v.add(key+".values", "go with claim, not with scope; remove them")
			}
		default:
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
