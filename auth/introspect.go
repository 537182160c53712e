package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Introspection configures RFC 7662 token introspection, for issuers that
// hand out opaque access tokens or Keycloak's "lightweight" ones (JWTs
// without aud, scope or user claims). The endpoint is the discovery
// document's introspection_endpoint. The answer's active, exp, aud, scope,
// sub, nbf, iat, cnf and user claim are checked as a JWT's claims are.
type Introspection struct {
	// All sends every token to the endpoint, JWTs too (Keycloak lightweight
	// access tokens). Otherwise only tokens that are not a JWS compact
	// serialization are introspected, and JWTs are verified locally as
	// without introspection.
	All bool
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint (HTTP Basic, RFC 7662 §2.1, RFC 6749 §2.3.1). Never logged.
	ClientID     string
	ClientSecret []byte
	// MaxCacheTTL bounds how long an answer is reused: until the token's
	// exp, and never longer than this, so that a revoked token stops
	// working within it; default DefaultIntrospectionMaxCacheTTL.
	MaxCacheTTL time.Duration
	// Timeout bounds one introspection, including the wait for a slot;
	// default 5s.
	Timeout time.Duration
	// MaxConcurrent bounds the introspection requests in flight, so that
	// tokens nobody vouched for cannot hold an unbounded number of requests
	// open at the issuer; a request that finds no slot within Timeout is
	// answered 503. Default DefaultIntrospectionMaxConcurrent.
	MaxConcurrent int
	// PerAddressPerMinute bounds the introspection requests that tokens
	// from one client address (an IPv4 address, or an IPv6 /64) may cause
	// a minute, in bursts of as many; a token beyond it that no cache
	// answers gets 429. Answers from the caches cost nothing and are never
	// limited. Default DefaultIntrospectionPerAddressPerMinute; negative
	// turns it off.
	PerAddressPerMinute int
}

// Introspection defaults and bounds.
const (
	DefaultIntrospectionMaxCacheTTL   = time.Minute
	DefaultIntrospectionTimeout       = 5 * time.Second
	DefaultIntrospectionMaxConcurrent = 32
	// DefaultIntrospectionPerAddressPerMinute: a user's client needs one
	// introspection per token and MaxCacheTTL; this leaves room for many
	// users behind one address, and none for a flood of made-up tokens.
	DefaultIntrospectionPerAddressPerMinute = 120
	// IntrospectionRefusalTTL is how long the endpoint's refusal of a token
	// (inactive, or claims that fail a check) is reused, so that a client
	// repeating a bad token does not make the gateway ask again each time.
	IntrospectionRefusalTTL = 10 * time.Second
	// IntrospectionStaleGrace is how long past MaxCacheTTL (and never past
	// the token's exp) an endpoint's earlier "active" answer still serves
	// while the endpoint fails or throttles (HTTP 429, 5xx, no answer): a
	// real user's token keeps working through the outage, and a revoked
	// one works at most MaxCacheTTL plus this long: never again once the
	// endpoint has refused it.
	IntrospectionStaleGrace = 5 * time.Minute
	// maxIntrospectionBackoff bounds the pause a throttling endpoint's
	// Retry-After asks for.
	maxIntrospectionBackoff = time.Minute
	// maxIntrospectionBytes caps the endpoint's answer.
	maxIntrospectionBytes = 1 << 20
	// introspectionRetryAfter is the Retry-After of a 503 when the endpoint
	// failed.
	introspectionRetryAfter = 5
)

// Errors of introspection.
var (
	// ErrIntrospection: the endpoint could not be asked or gave no usable
	// answer. The token is not known to be bad, so it is answered 503 with
	// Retry-After, never as invalid.
	ErrIntrospection = check(ErrUnavailable, "the authorization server's token introspection failed; retry later")
	// ErrInactive: the endpoint says the token is not active (revoked,
	// expired, or unknown).
	ErrInactive = check(ErrInvalidToken, "token is not active")
	// ErrNotAccessToken: the endpoint says the token is not an access
	// token (a refresh or ID token, by token_type, typ or token_use).
	ErrNotAccessToken = check(ErrInvalidToken, "token is not an access token")
	// ErrIntrospectionLimited: tokens from the request's address caused
	// more introspection requests than Introspection.PerAddressPerMinute.
	ErrIntrospectionLimited = check(ErrTooManyRequests, "too many tokens from this address needed the authorization server's introspection; retry later")
)

func (o *Introspection) normalize(bad func(string, ...any)) {
	if o.ClientID == "" {
		bad("introspection needs a client id: the client this resource server authenticates as at the introspection endpoint")
	}
	if len(o.ClientSecret) == 0 {
		bad("introspection needs a client secret")
	}
	if o.MaxCacheTTL == 0 {
		o.MaxCacheTTL = DefaultIntrospectionMaxCacheTTL
	}
	if o.MaxCacheTTL < 0 {
		bad("introspection max cache TTL %s is negative", o.MaxCacheTTL)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultIntrospectionTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultIntrospectionMaxConcurrent
	}
	if o.PerAddressPerMinute == 0 {
		o.PerAddressPerMinute = DefaultIntrospectionPerAddressPerMinute
	}
}

// introspects reports whether token goes to the introspection endpoint.
func (a *Authenticator) introspects(token string) bool {
	in := a.opts.Introspection
	return in != nil && (in.All || strings.Count(token, ".") != 2)
}

// introspectionAnswer is RFC 7662 §2.2's response: active, and the claims
// of the token, read as a JWT's (decodeIntrospection).
type introspectionAnswer struct {
	Active    *bool  `json:"active"`
	TokenType string `json:"token_type"`
	Typ       string `json:"typ"`       // Keycloak: Bearer, Refresh, ID
	TokenUse  string `json:"token_use"` // Ory: access_token, refresh_token
	claims
}

// decodeIntrospection reads an introspection answer by exact member names,
// as decodeClaims reads a JWT's claims.
func decodeIntrospection(body []byte) (introspectionAnswer, map[string]json.RawMessage, error) {
	var ans introspectionAnswer
	all, err := members(body)
	if err != nil {
		return ans, nil, err
	}
	fields := ans.fields()
	fields["active"], fields["token_type"], fields["typ"], fields["token_use"] = &ans.Active, &ans.TokenType, &ans.Typ, &ans.TokenUse
	err = fill(all, fields)
	return ans, all, err
}

// introspect asks the endpoint about token and checks the answer into e.
func (a *Authenticator) introspect(ctx context.Context, token string, e *cachedToken) error {
	if token == "" || !isB64Token(token) {
		return ErrMalformed
	}
	body, err := a.askIntrospection(ctx, token)
	if err != nil {
		a.opts.Logger.Warn("auth: token introspection failed; answering 503", "err", err, "token", e.p.TokenTag)
		return ErrIntrospection
	}
	ans, all, err := decodeIntrospection(body)
	switch {
	case errors.Is(err, errDuplicateMember):
		// The issuer answered, but about claims two readers could take
		// two ways.
		return ErrClaims
	case err != nil || ans.Active == nil:
		a.opts.Logger.Warn("auth: token introspection answered no active member; answering 503", "token", e.p.TokenTag)
		return ErrIntrospection
	}
	if !*ans.Active {
		return ErrInactive
	}
	for _, t := range []struct{ got, want string }{
		{ans.TokenType, "bearer"}, {ans.Typ, "bearer"}, {ans.TokenUse, "access_token"},
	} {
		if t.got != "" && !strings.EqualFold(t.got, t.want) {
			return ErrNotAccessToken
		}
	}
	// RFC 7662 §2.2 makes iss optional; the issuer's own endpoint answered.
	if ans.Iss == "" {
		ans.Iss = a.opts.Issuer
	}
	if err := a.checkClaims(&ans.claims, all, e); err != nil {
		return err
	}
	if limit := a.opts.Now().Add(a.opts.Introspection.MaxCacheTTL); e.until.After(limit) {
		e.until = limit
	}
	e.p.Recheck = e.until
	return nil
}

// askIntrospection posts token to the endpoint and returns the body of a
// 200 answer.
func (a *Authenticator) askIntrospection(ctx context.Context, token string) ([]byte, error) {
	endpoint, err := a.keys.introspectionEndpoint()
	if err != nil {
		return nil, err
	}
	in := a.opts.Introspection
	ctx, cancel := context.WithTimeout(ctx, in.Timeout)
	defer cancel()
	select {
	case a.isem <- struct{}{}:
		defer func() { <-a.isem }()
	case <-ctx.Done():
		return nil, fmt.Errorf("all %d introspection slots stayed busy for %s", in.MaxConcurrent, in.Timeout)
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: each part form-encoded before Basic.
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(string(in.ClientSecret)))
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		a.pauseIntrospection(resp.Header.Get("Retry-After"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s refused this resource server's client credentials (HTTP %d); check the introspection client id and secret", endpoint, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s answered HTTP %d", endpoint, resp.StatusCode)
	case len(body) > maxIntrospectionBytes:
		return nil, fmt.Errorf("%s answered more than %d bytes", endpoint, maxIntrospectionBytes)
	}
	return body, nil
}

// errNoIntrospectionEndpoint: discovery has not happened yet.
var errNoIntrospectionEndpoint = errors.New("auth: the issuer's discovery document has not been loaded yet")

// pauseIntrospection stops asking the endpoint for the Retry-After it
// sent with a 429 or 503 (seconds; 5 when absent or unreadable; at most a
// minute): tokens the caches cannot answer get 503 meanwhile, and those
// the endpoint called active before are served from what it said.
func (a *Authenticator) pauseIntrospection(retryAfter string) {
	d := time.Duration(introspectionRetryAfter) * time.Second
	if n, err := strconv.Atoi(retryAfter); err == nil && n > 0 {
		d = min(time.Duration(n)*time.Second, maxIntrospectionBackoff)
	}
	a.ipause.Store(a.opts.Now().Add(d).UnixNano())
}

// introspectionPaused reports whether the endpoint asked not to be asked
// until after now.
func (a *Authenticator) introspectionPaused(now time.Time) bool {
	return now.UnixNano() < a.ipause.Load()
}
