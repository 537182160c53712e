package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/lestrrat-go/jwx/v3/jwa"
)

// Authenticator verifies bearer tokens for one protected resource.
type Authenticator struct {
	opts        Options
	algs        map[string]jwa.SignatureAlgorithm
	keys        *keySource // nil when only HMAC is allowed
	supported   []string
	scopeParam  string
	metadataURL string
	metadata    []byte
	cache       *tokenCache   // nil when TokenCacheSize is negative
	icache      *tokenCache   // introspection answers; nil likewise
	irefused    *tokenCache   // introspection refusals, for IntrospectionRefusalTTL
	ilimit      *rateLimit    // introspections per client address; nil: none
	ipause      atomic.Int64  // unix nanoseconds until which the endpoint asked for a pause
	isem        chan struct{} // introspection slots
	dpop        *dpopState    // nil when DPoP is off
	// derived is set on an Authenticator of ForResource: its keys are
	// another's, which stops them.
	derived bool
}

// New returns an Authenticator for opts. It refuses incomplete or unsafe
// options, reporting every problem at once. It does not wait for the
// issuer: discovery and the first key fetch run in the background, retried
// with backoff, and until they succeed Authenticate answers ErrUnavailable
// (503 with Retry-After). Cancelling ctx, or Close, stops that work.
func New(ctx context.Context, opts Options) (*Authenticator, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	a := &Authenticator{opts: opts, algs: map[string]jwa.SignatureAlgorithm{}, cache: newTokenCache(opts.TokenCacheSize)}
	if opts.Introspection != nil {
		a.icache = newTokenCache(opts.TokenCacheSize)
		a.irefused = newTokenCache(opts.TokenCacheSize)
		a.ilimit = newRateLimit(opts.Introspection.PerAddressPerMinute)
		a.isem = make(chan struct{}, opts.Introspection.MaxConcurrent)
	}
	for _, name := range opts.Algorithms {
		alg, _ := jwa.LookupSignatureAlgorithm(name)
		a.algs[name] = alg
	}
	a.supported = supportedScopes(opts)
	a.scopeParam = strings.Join(a.supported, " ")
	if len(opts.InitialScopes) > 0 {
		a.scopeParam = strings.Join(opts.InitialScopes, " ")
	}
	if opts.DPoP.Mode != DPoPOff {
		if a.dpop, err = newDPoPState(&a.opts); err != nil {
			return nil, err
		}
	}
	a.metadataURL = metadataURL(opts.Resource)
	if a.metadata, err = a.buildMetadata(); err != nil {
		return nil, err
	}
	if opts.hasAsymmetric() || opts.Introspection != nil {
		if a.keys, err = startKeys(ctx, &a.opts); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Close stops the background key and discovery work and waits for it to end.
func (a *Authenticator) Close() error {
	if a.keys == nil || a.derived {
		return nil
	}
	return a.keys.close()
}

// Ready is closed once the issuer's signing keys have been loaded (at
// once when only HMAC is configured). Readiness probes and tests wait on it.
func (a *Authenticator) Ready() <-chan struct{} {
	if a.keys == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return a.keys.ready
}

// Supported is the derived scope set advertised in metadata and
// challenges: the required scopes, then the write scope, then the scopes of
// the policy rules, then the extra scopes, without duplicates (docs/design.md, Derived scopes).
func (a *Authenticator) Supported() []string { return append([]string(nil), a.supported...) }

// SupportedScopes is what an Authenticator of o advertises as
// scopes_supported: its required, write, extra and policy scopes.
func SupportedScopes(o Options) []string { return supportedScopes(o) }

func supportedScopes(o Options) []string {
	var out []string
	for _, s := range slices.Concat(o.RequiredScopes, []string{o.WriteScope}, policyScopes(o.Policies), o.ExtraScopes) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Resource is the canonical resource URI tokens must name in aud.
func (a *Authenticator) Resource() string { return a.opts.Resource }

// Authenticate finds the bearer token of r and verifies it. Every error
// matches one kind (ErrNoToken, ErrInvalidRequest, ErrInvalidToken,
// ErrInsufficientScope, ErrUnavailable) and usually a specific check
// (ErrExpired, ErrAudience, …). It logs the outcome with the user, client
// id, kid and token tag, never the token.
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	p, _, err := a.authenticate(r)
	return p, err
}

// authenticate is Authenticate, which also returns the DPoP-Nonce to
// answer with, or "" (bind).
func (a *Authenticator) authenticate(r *http.Request) (*Principal, string, error) {
	p, nonce, err := a.verifyRequest(r)
	if err != nil && a.opts.OnRefused != nil {
		a.opts.OnRefused(Reason(err))
	}
	return p, nonce, err
}

func (a *Authenticator) verifyRequest(r *http.Request) (*Principal, string, error) {
	token, scheme, err := a.credentials(r)
	if err != nil {
		if !errors.Is(err, ErrNoToken) {
			a.opts.Logger.Info("auth: request refused", "reason", description(err), "remote", r.RemoteAddr)
		}
		return nil, "", err
	}
	// The token's hash keys the verified-token cache and is the proof's
	// ath: made once. A token over the size limit is refused unhashed.
	var sum [32]byte
	if len(token) <= a.opts.MaxTokenBytes {
		sum = sha256.Sum256([]byte(token))
	}
	p, err := a.checkSum(r.Context(), token, &sum, remoteKey(r.RemoteAddr))
	nonce := ""
	if err == nil {
		// Every request, the cache's answers included: the token's
		// binding is checked against this request's proof.
		nonce, err = a.bind(r, &sum, scheme, p)
	}
	if err != nil {
		a.opts.Logger.Info("auth: token refused", "reason", description(err), "err", err, "scheme", scheme,
			"user", p.UserID, "client_id", p.ClientID, "kid", p.KeyID, "token", p.TokenTag, "remote", r.RemoteAddr)
		if scheme == schemeDPoP {
			err = dpopScheme{err}
		}
		return nil, "", err
	}
	// Enabled first: boxing the arguments costs allocations on every
	// request even when debug is off.
	if a.opts.Logger.Enabled(r.Context(), slog.LevelDebug) {
		a.opts.Logger.Debug("auth: token accepted", "user", p.UserID, "client_id", p.ClientID,
			"kid", p.KeyID, "token", p.TokenTag, "read_only", p.ReadOnly, "scheme", scheme)
	}
	return p, nonce, nil
}

// The authorization schemes a token may come with.
const (
	schemeBearer = "Bearer"
	schemeDPoP   = "DPoP"
)

// credentials finds the token of r and its scheme: Bearer, or DPoP unless
// DPoP is off (RFC 9449 §7.1).
func (a *Authenticator) credentials(r *http.Request) (string, string, error) {
	token, scheme, err := bearerToken(r)
	if err != nil {
		return "", "", err
	}
	switch {
	case strings.EqualFold(scheme, schemeBearer):
		return token, schemeBearer, nil
	case a.dpop != nil && strings.EqualFold(scheme, schemeDPoP):
		return token, schemeDPoP, nil
	}
	// RFC 6750 §3.1: another scheme counts as no credentials.
	return "", "", ErrNoToken
}

// bearerToken applies RFC 6750 §2: the token travels only in one
// Authorization header (§2.1); the form body (§2.2) and the query (§2.3)
// are refused, as MCP 2025-11-25 §Token Requirements demands. It returns
// the token and the header's scheme.
func bearerToken(r *http.Request) (string, string, error) {
	if strings.Contains(r.URL.RawQuery, "access_token") && r.URL.Query().Has("access_token") {
		return "", "", ErrTokenInQuery
	}
	// Reading a form body to look for a token would consume it; MCP never
	// sends forms, so any form-encoded request is refused outright.
	// The media type is compared by hand: mime.ParseMediaType allocates a
	// map of parameters on every request.
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := strings.Cut(ct, ";"); strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
			return "", "", ErrFormBody
		}
	}
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", "", ErrNoToken
	case 1:
	default:
		return "", "", ErrManyAuthorization
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	return strings.TrimLeft(rest, " "), scheme, nil
}

// authenticatorKey carries the Authenticator that verified a request, for
// WriteScopeRequired.
type authenticatorKey struct{}

// Middleware authenticates every request. On success it puts the
// principal in the context (see PrincipalFrom), and itself for
// WriteScopeRequired, and deletes the
// Authorization header, so the token can never travel further (docs/design.md, No token passthrough);
// on failure it answers with WriteError and next does not run.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, n, err := a.authenticate(r)
		if err != nil {
			a.WriteError(w, err)
			return
		}
		if n != "" {
			w.Header().Set("DPoP-Nonce", n)
		}
		tok, _, _ := bearerToken(r)
		r.Header.Del("Authorization")
		r.Header.Del("DPoP")
		ctx := context.WithValue(WithPrincipal(withSubjectToken(r.Context(), tok), p), authenticatorKey{}, a)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
