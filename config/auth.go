package config

import (
	"time"
)

// Auth configures bearer-token authentication (OAuth 2.1 resource server).
// An empty Issuer is the unauthenticated localhost mode.
type Auth struct {
	// Issuer is the authorization server's issuer URL, exactly as in its
	// tokens' iss claim (Keycloak: https://HOST/realms/NAME). https, or
	// http on a loopback host for local tests only.
	Issuer string `mapstructure:"issuer"`
	// AuthorizationServers are published in the RFC 9728 metadata.
	// Default: [Issuer].
	AuthorizationServers []string `mapstructure:"authorization_servers"`
	// RequiredScopes must all be on every token, else 403
	// insufficient_scope.
	RequiredScopes []string `mapstructure:"required_scopes"`
	// WriteScope makes a session read-write; a token without it gets a
	// read-only session. Empty means every authenticated session is
	// read-write (unless Server.ReadOnly).
	WriteScope string `mapstructure:"write_scope"`
	// ExtraScopes are advertised (scopes_supported, challenges) but not
	// checked: scopes a client must ask for for the issuer's sake, such
	// as Keycloak's profile and offline_access (see docs/keycloak.md).
	ExtraScopes []string `mapstructure:"extra_scopes"`
	// Policies decide which tools a token may reach (see Policy): a tool is
	// reachable when some rule applies to the token and grants it, and
	// everything else is denied. Not with WriteScope, which is the simple
	// form of two rules (docs/configuration.md).
	Policies []Policy `mapstructure:"policies"`
	// InitialScopes, when set, is the scope of the 401 challenge instead of
	// every advertised scope (least privilege: a client asks for the basic
	// tier first, and a call that needs more gets a 403 naming it).
	InitialScopes []string `mapstructure:"initial_scopes"`
	// UserClaim names the claim that holds the user id. Default "sub";
	// "preferred_username" is usual on Keycloak.
	UserClaim string `mapstructure:"user_claim"`
	// Algorithms is the allow-list of JWS algorithms. Default: every
	// asymmetric one (RS*, PS*, ES*, EdDSA), plus HS256/384/512 when
	// HMACSecretFile is set. HS* may be listed only with HMACSecretFile;
	// "none" never.
	Algorithms []string `mapstructure:"algorithms"`
	// HMACSecretFile is the path of a shared secret for HS* tokens (at
	// least 32 bytes; one trailing newline is ignored). Never the secret.
	HMACSecretFile string `mapstructure:"hmac_secret_file"`
	// RequireATJWT requires the header typ "at+jwt" (RFC 9068) instead of
	// accepting "JWT" too.
	RequireATJWT bool `mapstructure:"require_at_jwt"`
	// Leeway is the clock skew allowed on nbf and iat (exp gets none: an
	// expired token is expired). Default 60s; at most 5m.
	Leeway time.Duration `mapstructure:"leeway"`
	// MaxTokenBytes caps a bearer token's size. Default 16 KiB.
	MaxTokenBytes ByteSize `mapstructure:"max_token_bytes"`
	// IssuerCAFile is a PEM file of extra CA certificates to trust, beside
	// the system roots, when fetching the issuer's discovery document and
	// keys: for an issuer behind a private CA (or the test issuer).
	IssuerCAFile string `mapstructure:"issuer_ca_file"`
	// TokenCacheSize bounds the cache of verified tokens (and of
	// introspection answers): each kept until its exp at most, emptied
	// when the issuer's keys change. Default 10000; -1 turns it off.
	TokenCacheSize int `mapstructure:"token_cache_size"`
	// Introspection checks tokens with the issuer's RFC 7662 endpoint
	// (discovery's introspection_endpoint): "off" (default), "opaque"
	// (tokens that are not JWTs; JWTs stay verified locally) or "all"
	// (every token, for Keycloak lightweight access tokens).
	Introspection string `mapstructure:"introspection"`
	// IntrospectionClientID is the client this gateway authenticates as
	// at the introspection endpoint. Required with Introspection.
	IntrospectionClientID string `mapstructure:"introspection_client_id"`
	// IntrospectionClientSecretFile is the path of that client's secret
	// (one trailing newline ignored). Never the secret.
	IntrospectionClientSecretFile string `mapstructure:"introspection_client_secret_file"`
	// IntrospectionMaxCacheTTL bounds how long an introspection answer is
	// reused (never past the token's exp): the longest a revoked token
	// keeps working. Default 1m; at most 1h.
	IntrospectionMaxCacheTTL time.Duration `mapstructure:"introspection_max_cache_ttl"`
	// IntrospectionMaxConcurrent bounds the introspection requests in
	// flight; one that waits longer than 5s for a slot is answered 503.
	// Default 32; at most 1024.
	IntrospectionMaxConcurrent int `mapstructure:"introspection_max_concurrent"`
	// IntrospectionPerAddressPerMinute bounds the introspection requests
	// tokens from one client address may cause a minute; beyond it a token
	// no cache answers gets 429. Default 120; at most 100000.
	IntrospectionPerAddressPerMinute int `mapstructure:"introspection_per_address_per_minute"`
	// DPoP is how DPoP-bound tokens (RFC 9449) are taken: "off" (refused,
	// as a resource that knows nothing of DPoP), "allowed" (default:
	// accepted with a valid proof, beside Bearer tokens) or "required"
	// (only DPoP-bound tokens).
	DPoP string `mapstructure:"dpop"`
	// DPoPProofLifetime is how old a DPoP proof's iat may be. Default 60s;
	// 1s to 5m.
	DPoPProofLifetime time.Duration `mapstructure:"dpop_proof_lifetime"`
	// DPoPNonce makes every DPoP proof carry a nonce the gateway handed
	// out (RFC 9449 §9, use_dpop_nonce).
	DPoPNonce bool `mapstructure:"dpop_nonce"`
	// DPoPNonceSecretFile is the path of the secret nonces are made with,
	// shared by replicas so that each accepts the others' nonces (at least
	// 32 bytes; one trailing newline ignored). Empty: each process makes
	// its own, and accepts only its own.
	DPoPNonceSecretFile string `mapstructure:"dpop_nonce_secret_file"`
	// DPoPNonceLifetime is how long a nonce is accepted. Default 5m; 10s to 1h.
	DPoPNonceLifetime time.Duration `mapstructure:"dpop_nonce_lifetime"`
	// DPoPReplayCacheSize bounds the DPoP proofs remembered to refuse a
	// replay. Default 1048576; 1000 to 16777216.
	DPoPReplayCacheSize int `mapstructure:"dpop_replay_cache_size"`
}

// Policy is one rule of auth.policies: who (a scope, or a claim holding one
// of some values) may reach what (toolsets and tools).
type Policy struct {
	// Scope: the rule applies to a token holding this scope.
	Scope string `mapstructure:"scope"`
	// Claim and Values: the rule applies to a token whose claim holds one
	// of the values: realm_access.roles, resource_access.<client>.roles,
	// groups, or another top-level claim of strings.
	Claim  string   `mapstructure:"claim"`
	Values []string `mapstructure:"values"`
	// Toolsets (built-in worker only) and Tools name what the rule grants.
	Toolsets []string `mapstructure:"toolsets"`
	Tools    []string `mapstructure:"tools"`
}

// Introspection modes (Auth.Introspection).
const (
	IntrospectionOff    = "off"
	IntrospectionOpaque = "opaque"
	IntrospectionAll    = "all"
)
