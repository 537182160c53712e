package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
)

// Options configures an Authenticator. The zero value of every field except
// Issuer and Resource is a safe default.
type Options struct {
	// Issuer is the authorization server's issuer identifier, compared
	// exactly with a token's iss and with the discovery document's issuer
	// (OpenID Connect Discovery 1.0 §4.3), e.g. https://kc.example/realms/mcp.
	Issuer string
	// Resource is this server's canonical resource URI, e.g.
	// https://mcp.example/mcp. A token's aud must contain it (RFC 8707; MCP
	// 2025-11-25 §Token Handling), so New refuses to start without it.
	Resource string
	// AuthorizationServers are published in the RFC 9728 metadata; default
	// [Issuer].
	AuthorizationServers []string
	// RequiredScopes must all be on every token, else 403 insufficient_scope.
	RequiredScopes []string
	// WriteScope makes a session read-write; a token without it is
	// read-only. Empty means every session is read-write.
	WriteScope string
	// ExtraScopes are advertised only (metadata and challenges), never
	// checked: scopes a client must ask for so the authorization server emits
	// what we need, e.g. "profile" for preferred_username on Keycloak.
	ExtraScopes []string
	// Policies decide which tools a token may reach, when set: a tool is
	// reachable when some rule applies to the token and grants it
	// (Principal.Tools); everything else is denied. WriteScope must be empty
	// then: required_scopes + write_scope is the simple form of a policy
	// (rule 1: the required scopes grant the read-only-safe tools; rule 2:
	// the write scope grants every tool), and one form decides.
	Policies []Rule
	// InitialScopes, when set, is the scope of the 401 challenge instead of
	// every advertised scope: the least-privilege mode, where a client first
	// asks for the basic tier and the 403 of a call that needs more asks
	// for the rest (StepUp). Each must be advertised.
	InitialScopes []string
	// UserClaim names the claim that holds the user id; default "sub".
	UserClaim string
	// Algorithms is the allow-list of JWS algorithms, names from
	// DefaultAlgorithms and HMACAlgorithms (Validate). Default:
	// DefaultAlgorithms, plus HMACAlgorithms when HMACSecret is set. "none"
	// is never allowed, and an HS* algorithm only together with HMACSecret.
	Algorithms []string
	// HMACSecret enables HS* tokens, verified with this secret only and never
	// with a JWKS key, so a public key can never serve as an HMAC secret
	// (RFC 8725 §2.1). At least MinHMACSecret bytes.
	HMACSecret []byte
	// RequireATJWT accepts only typ "at+jwt" (RFC 9068 §2.1). Otherwise typ
	// may be "JWT", "at+jwt" or "application/at+jwt", or absent.
	RequireATJWT bool
	// Leeway tolerates clock skew on nbf and iat; default 60s. exp gets none.
	Leeway time.Duration
	// MaxTokenBytes caps the Authorization header's token; default 16 KiB.
	MaxTokenBytes int
	// ResourceName is the human-readable resource_name in the metadata.
	ResourceName string
	// HTTPClient fetches the discovery document and the JWKS; default a
	// client with a 10s timeout. Tests pass one that trusts their CA.
	HTTPClient *http.Client
	// MinRefetchInterval bounds how often a token with an unknown kid may
	// make us refetch the JWKS, so a flood of forged kids cannot make us
	// hammer the issuer; default 30s. Negative means no bound (tests).
	MinRefetchInterval time.Duration
	// RetryInterval is the longest wait between start-up attempts to reach
	// the issuer; attempts back off from 250ms up to it. Default 30s.
	RetryInterval time.Duration
	// OnRefused, when set, is told of each request Authenticate refuses,
	// with Reason's name of the failed check (a metric).
	OnRefused func(reason string)
	// TokenCacheSize bounds the cache of verified tokens (keyed by a hash
	// of the token, each kept until its exp at most, emptied when the
	// issuer's keys change); default DefaultTokenCacheSize. Negative turns
	// the cache off.
	TokenCacheSize int
	// DPoP configures DPoP-bound tokens (RFC 9449); the zero value accepts
	// them with a valid proof, beside Bearer tokens.
	DPoP DPoP
	// MTLS configures certificate-bound tokens (RFC 8705); the zero value
	// refuses them.
	MTLS MTLS
	// Introspection, when set, checks opaque tokens (or all tokens) with
	// the issuer's RFC 7662 introspection endpoint. Nil: JWTs only.
	Introspection *Introspection
	// Logger receives refusals and key events; default slog.Default().
	Logger *slog.Logger
	// Now is the clock for token times and the refetch bound; default
	// time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultLeeway             = 60 * time.Second
	DefaultMaxTokenBytes      = 16 << 10
	DefaultMinRefetchInterval = 30 * time.Second
	DefaultRetryInterval      = 30 * time.Second
	// DefaultHTTPTimeout bounds a request to the issuer with the default
	// HTTPClient.
	DefaultHTTPTimeout = 10 * time.Second
	// DefaultUserClaim names the claim that holds the user id.
	DefaultUserClaim = "sub"
)

// normalize validates o and fills in defaults, reporting every problem at once.
func (o Options) normalize() (Options, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("auth: "+format, args...)) }

	if o.Issuer == "" {
		bad("issuer is required (the authorization server's exact iss, e.g. https://kc.example/realms/mcp)")
	} else if err := CheckURL(o.Issuer); err != nil {
		bad("issuer: %v", err)
	}
	if o.Resource == "" {
		bad("resource is required: the canonical URI of this server's /mcp endpoint, e.g. https://mcp.example/mcp (RFC 8707: tokens are checked to name it in aud)")
	} else if err := checkResource(o.Resource); err != nil {
		bad("resource: %v", err)
	}
	if len(o.AuthorizationServers) == 0 && o.Issuer != "" {
		o.AuthorizationServers = []string{o.Issuer}
	}
	for _, s := range o.AuthorizationServers {
		if err := CheckURL(s); err != nil {
			bad("authorization server: %v", err)
		}
	}
	for _, s := range slices.Concat(o.RequiredScopes, o.ExtraScopes) {
		if err := checkScope(s); err != nil {
			bad("scope: %v", err)
		}
	}
	if o.WriteScope != "" {
		if err := checkScope(o.WriteScope); err != nil {
			bad("write scope: %v", err)
		}
	}
	errs = append(errs, checkRules(o.Policies)...)
	if len(o.Policies) > 0 && o.WriteScope != "" {
		errs = append(errs, errPolicyWrite)
	}
	supported := supportedScopes(o)
	for _, s := range o.InitialScopes {
		if !slices.Contains(supported, s) {
			bad("initial scope %q is not advertised (required, write, policy or extra scopes)", s)
		}
	}
	if o.UserClaim == "" {
		o.UserClaim = DefaultUserClaim
	}
	if len(o.HMACSecret) > 0 {
		if err := checkHMACSecret(o.HMACSecret); err != nil {
			bad("hmac secret %v", err)
		}
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = DefaultAlgorithms()
		if len(o.HMACSecret) > 0 {
			o.Algorithms = append(o.Algorithms, HMACAlgorithms()...)
		}
	}
	for _, a := range o.Algorithms {
		if err := checkAlgorithm(a, len(o.HMACSecret) > 0); err != nil {
			bad("algorithm %v", err)
		}
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	if o.Leeway < 0 {
		bad("leeway %s is negative", o.Leeway)
	}
	if o.MaxTokenBytes == 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.MaxTokenBytes < 0 {
		bad("max token bytes %d is negative", o.MaxTokenBytes)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if o.MinRefetchInterval == 0 {
		o.MinRefetchInterval = DefaultMinRefetchInterval
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	o.DPoP.normalize(o.Resource, bad)
	if o.Introspection != nil {
		in := *o.Introspection // the caller's struct stays untouched
		in.normalize(bad)
		o.Introspection = &in
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, errors.Join(errs...)
}

// hasAsymmetric reports whether any allowed algorithm needs a JWKS key.
func (o *Options) hasAsymmetric() bool {
	for _, a := range o.Algorithms {
		if alg, _ := jwa.LookupSignatureAlgorithm(a); !alg.IsSymmetric() {
			return true
		}
	}
	return false
}
