package credential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/mcpgate/mcpgate/auth"
)

// RFC 8693 vocabulary.
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// Defaults of ExchangeOptions.
const (
	DefaultMaxCached     = 10000
	DefaultMaxConcurrent = 16
	DefaultTimeout       = 10 * time.Second
	// DefaultLifetime is how long an exchanged token is used when the
	// issuer's answer has no expires_in.
	DefaultLifetime = time.Minute
	// maxResponseBytes bounds the token endpoint's answer read.
	maxResponseBytes = 4 * MaxSecretBytes
	// maxBackoff bounds the wait after failed exchanges of one key.
	maxBackoff = 5 * time.Minute
)

// ExchangeOptions configure the gateway's token exchange client: one
// confidential client of the issuer (auth.introspection_client_id and its
// secret).
type ExchangeOptions struct {
	Issuer       string // auth.issuer; its discovery document names the token endpoint
	ClientID     string
	ClientSecret []byte
	HTTPClient   *http.Client // trusts the issuer's certificate; nil: http.DefaultClient
	// MaxCached bounds the exchanged tokens kept (default
	// DefaultMaxCached); the least recently used goes first.
	MaxCached int
	// MaxConcurrent bounds the exchanges in flight at the issuer (default
	// DefaultMaxConcurrent); Timeout bounds each (default DefaultTimeout).
	MaxConcurrent int
	Timeout       time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Observe, when set, counts each exchange by result: ok, refused (the
	// issuer said no), error (it could not be asked, or answered wrongly),
	// backoff (a failure repeated without asking, during the backoff).
	Observe func(result string)
}

// Exchanger exchanges users' access tokens for tokens of other audiences
// (RFC 8693), caching each result per (issuer, subject, user, server,
// credential) until a margin before it expires. One exchange per key is
// in flight at a time; a failure is repeated, without asking the issuer,
// until a backoff that doubles with each failure has passed.
type Exchanger struct {
	opts ExchangeOptions
	sem  chan struct{}

	mu       sync.Mutex
	entries  map[exchangeKey]*entry
	endpoint string    // the discovered token endpoint
	discErr  error     // the last discovery failure
	discNext time.Time // no discovery before this after a failure
	discWait chan struct{}
}

// exchangeKey is whose exchanged token an entry holds, and for what.
type exchangeKey struct {
	issuer, subject, user, server string
	cred                          int
}

// entry is one key's exchanged token, or its last failure.
type entry struct {
	token    string
	expiry   time.Time
	renew    time.Time // expiry less the margin
	used     time.Time
	wait     chan struct{} // non-nil while an exchange runs
	err      error         // the last failure, repeated until retryAt
	retryAt  time.Time
	failures int
}

// NewExchanger returns the gateway's token exchange client.
func NewExchanger(opts ExchangeOptions) (*Exchanger, error) {
	if opts.Issuer == "" || opts.ClientID == "" || len(opts.ClientSecret) == 0 {
		return nil, errors.New("credential: token exchange needs auth.issuer, auth.introspection_client_id and auth.introspection_client_secret_file: the gateway's confidential client")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.MaxCached <= 0 {
		opts.MaxCached = DefaultMaxCached
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observe == nil {
		opts.Observe = func(string) {}
	}
	return &Exchanger{opts: opts, sem: make(chan struct{}, opts.MaxConcurrent), entries: map[exchangeKey]*entry{}}, nil
}

// Cached returns how many keys the exchanger holds an entry for.
func (x *Exchanger) Cached() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// renewAt is when a token issued now for lifetime is renewed: a fifth of
// its lifetime before it expires, at most a minute before, so that a call
// that starts just before has time to finish with it.
func renewAt(expiry time.Time, lifetime time.Duration) time.Time {
	return expiry.Add(-min(max(lifetime/5, 0), time.Minute))
}

// token returns key's exchanged token and when to renew it, exchanging
// subjectToken for one when none is cached or the cached one is due.
func (x *Exchanger) token(ctx context.Context, key exchangeKey, c Credential, subjectToken string) (string, time.Time, error) {
	x.mu.Lock()
	waited := false // the answer is that of an exchange this call waited for
	for {
		now := x.opts.Now()
		e := x.entries[key]
		switch {
		case e == nil:
			e = &entry{}
			x.evictLocked()
			x.entries[key] = e
		case e.token != "" && now.Before(e.renew):
			e.used = now
			tok, renew := e.token, e.renew
			x.mu.Unlock()
			return tok, renew, nil
		case e.wait != nil:
			w := e.wait
			x.mu.Unlock()
			select {
			case <-w:
			case <-ctx.Done():
				return "", time.Time{}, &Error{Reason: "the token exchange did not finish before the request ended", Kind: ErrUnavailable}
			}
			x.mu.Lock()
			waited = true
			continue
		case e.err != nil && now.Before(e.retryAt):
			err := e.err
			x.mu.Unlock()
			if !waited {
				x.opts.Observe("backoff")
			}
			return "", time.Time{}, err
		}
		e.used = now
		e.wait = make(chan struct{})
		go x.fill(e, c, subjectToken)
	}
}

// fill runs one exchange for e and records its result: in a goroutine of
// its own, so that the request that started it can give up without
// failing the others waiting on it, bounded by ExchangeOptions.Timeout.
func (x *Exchanger) fill(e *entry, c Credential, subjectToken string) {
	tok, lifetime, err := x.exchange(c, subjectToken)
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.opts.Now()
	close(e.wait)
	e.wait = nil
	if err != nil {
		e.failures++
		e.err, e.retryAt = err, now.Add(min(time.Second<<min(e.failures-1, 20), maxBackoff))
		e.token = ""
		return
	}
	e.token, e.expiry, e.renew = tok, now.Add(lifetime), renewAt(now.Add(lifetime), lifetime)
	e.err, e.failures = nil, 0
}

// evictLocked makes room for one more entry: it drops the least recently
// used entry that no exchange is running for.
func (x *Exchanger) evictLocked() {
	if len(x.entries) < x.opts.MaxCached {
		return
	}
	var oldest exchangeKey
	var found *entry
	for k, e := range x.entries {
		if e.wait == nil && (found == nil || e.used.Before(found.used)) {
			oldest, found = k, e
		}
	}
	if found != nil {
		delete(x.entries, oldest)
	}
}

// exchange asks the issuer for a token of c's audience for subjectToken,
// bounded by the exchanger's concurrency and timeout rather than by the
// one request that leads it, which others may be waiting on.
func (x *Exchanger) exchange(c Credential, subjectToken string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), x.opts.Timeout)
	defer cancel()
	select {
	case x.sem <- struct{}{}:
		defer func() { <-x.sem }()
	case <-ctx.Done():
		x.opts.Observe("error")
		return "", 0, &Error{Reason: "too many token exchanges are waiting for the issuer; try again", Kind: ErrUnavailable}
	}
	endpoint, err := x.tokenEndpoint(ctx)
	if err != nil {
		x.opts.Observe("error")
		return "", 0, err
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"subject_token":        {subjectToken},
		"subject_token_type":   {TokenTypeAccess},
		"requested_token_type": {TokenTypeAccess},
		"audience":             {c.Audience},
	}
	if c.Scope != "" {
		form.Set("scope", c.Scope)
	}
	tok, lifetime, err := x.post(ctx, endpoint, form)
	switch {
	case err == nil:
		x.opts.Observe("ok")
	case errors.Is(err, ErrRefused):
		x.opts.Observe("refused")
	default:
		x.opts.Observe("error")
	}
	return tok, lifetime, err
}

// post sends one token request and reads its answer, bounded.
func (x *Exchanger) post(ctx context.Context, endpoint string, form url.Values) (string, time.Duration, error) {
	unavailable := func(reason string) (string, time.Duration, error) {
		return "", 0, &Error{Reason: reason, Kind: ErrUnavailable}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return unavailable("the token endpoint cannot be asked")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: client_secret_basic, each part form-encoded.
	req.SetBasicAuth(url.QueryEscape(x.opts.ClientID), url.QueryEscape(string(x.opts.ClientSecret)))
	resp, err := x.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return unavailable(fmt.Sprintf("the issuer did not answer the token exchange within %v", x.opts.Timeout))
		}
		return unavailable("the issuer's token endpoint cannot be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return unavailable("the issuer's answer to the token exchange could not be read")
	}
	if len(body) > maxResponseBytes {
		return unavailable(fmt.Sprintf("the issuer's answer to the token exchange is over %d KiB; the gateway hands on tokens of at most %d KiB", maxResponseBytes>>10, MaxSecretBytes>>10))
	}
	return readAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), body)
}

// readAnswer reads the token endpoint's answer to an exchange: the token
// and its lifetime, or an *Error that names the issuer's error code, never
// a token or any other text of the answer.
func readAnswer(status int, contentType string, body []byte) (string, time.Duration, error) {
	unavailable := func(reason string) (string, time.Duration, error) {
		return "", 0, &Error{Reason: reason, Kind: ErrUnavailable}
	}
	if mt, _, _ := mime.ParseMediaType(contentType); mt != "application/json" {
		return unavailable(fmt.Sprintf("the issuer answered the token exchange with HTTP %d and no JSON", status))
	}
	var ans struct {
		AccessToken     string          `json:"access_token"`
		IssuedTokenType string          `json:"issued_token_type"`
		TokenType       string          `json:"token_type"`
		ExpiresIn       json.RawMessage `json:"expires_in"`
		Error           string          `json:"error"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return unavailable(fmt.Sprintf("the issuer's answer to the token exchange (HTTP %d) is not a JSON object", status))
	}
	if status != http.StatusOK {
		code := errorCode(ans.Error)
		e := &Error{IssuerError: code, Kind: ErrRefused, Reason: "the issuer refused the token exchange"}
		if code == "" || status >= 500 {
			e.Kind, e.Reason = ErrUnavailable, fmt.Sprintf("the issuer failed the token exchange with HTTP %d", status)
		}
		return "", 0, e
	}
	switch {
	case ans.AccessToken == "":
		return unavailable("the issuer's answer to the token exchange has no access_token")
	case len(ans.AccessToken) > MaxSecretBytes:
		return unavailable(fmt.Sprintf("the exchanged token is over %d KiB", MaxSecretBytes>>10))
	case ans.IssuedTokenType != "" && ans.IssuedTokenType != TokenTypeAccess:
		return unavailable("the issuer issued a token of another type than the access token asked for")
	case !strings.EqualFold(ans.TokenType, "Bearer"):
		return unavailable("the issuer issued a token that is not a Bearer token (a DPoP-bound one cannot be used by a worker)")
	}
	lifetime := DefaultLifetime
	if len(ans.ExpiresIn) > 0 && string(ans.ExpiresIn) != "null" {
		var secs float64
		if err := json.Unmarshal(ans.ExpiresIn, &secs); err != nil || secs <= 0 || secs > 366*24*3600 {
			return unavailable("the issuer's expires_in is not a positive number of seconds")
		}
		lifetime = time.Duration(secs * float64(time.Second))
	}
	return ans.AccessToken, lifetime, nil
}

// errorCode is an RFC 6749 error code as the issuer sent it, or "" when it
// is not one (§5.2: %x20-21 / %x23-5B / %x5D-7E), clipped, so that an
// issuer's answer cannot put arbitrary text into a client's error.
func errorCode(s string) string {
	if len(s) > 64 {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == ' ' {
			return ""
		}
	}
	return s
}

// tokenEndpoint is discovery's token_endpoint, fetched once; a failure is
// repeated for a backoff before discovery is tried again.
func (x *Exchanger) tokenEndpoint(ctx context.Context) (string, error) {
	x.mu.Lock()
	for {
		switch {
		case x.endpoint != "":
			ep := x.endpoint
			x.mu.Unlock()
			return ep, nil
		case x.discWait != nil:
			w := x.discWait
			x.mu.Unlock()
			select {
			case <-w:
			case <-ctx.Done():
				return "", &Error{Reason: "the issuer's discovery document did not come in time", Kind: ErrUnavailable}
			}
			x.mu.Lock()
			continue
		case x.discErr != nil && x.opts.Now().Before(x.discNext):
			err := x.discErr
			x.mu.Unlock()
			return "", err
		}
		x.discWait = make(chan struct{})
		x.mu.Unlock()
		ep, err := Discover(ctx, x.opts.HTTPClient, x.opts.Issuer)
		x.mu.Lock()
		close(x.discWait)
		x.discWait = nil
		if err != nil {
			x.discErr, x.discNext = &Error{Reason: err.Error(), Kind: ErrUnavailable}, x.opts.Now().Add(10*time.Second)
			continue
		}
		x.endpoint = ep.TokenURL
	}
}

// Endpoint is what discovery says of the issuer's token endpoint.
type Endpoint struct {
	TokenURL string
	// Exchange says the document lists the token exchange grant among
	// grant_types_supported.
	Exchange bool
}

// Discover reads the issuer's discovery document for its token endpoint.
func Discover(ctx context.Context, hc *http.Client, issuer string) (Endpoint, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), issuer)
	if err != nil {
		return Endpoint{}, fmt.Errorf("credential: the issuer's discovery document cannot be read: %w", err)
	}
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Grants        []string `json:"grant_types_supported"`
	}
	if err := p.Claims(&meta); err != nil || meta.TokenEndpoint == "" {
		return Endpoint{}, errors.New("credential: the issuer's discovery document names no token_endpoint")
	}
	if err := auth.CheckURL(meta.TokenEndpoint); err != nil {
		return Endpoint{}, fmt.Errorf("credential: the issuer's token_endpoint: %w", err)
	}
	ep := Endpoint{TokenURL: meta.TokenEndpoint}
	for _, g := range meta.Grants {
		ep.Exchange = ep.Exchange || g == GrantTokenExchange
	}
	return ep, nil
}

// ProbeClient checks that the gateway's client authenticates at the token
// endpoint, without a user's token: a token exchange request without a
// subject_token is refused invalid_request by an issuer that accepted the
// client (Keycloak authenticates the client first), invalid_client or 401
// by one that did not.
func ProbeClient(ctx context.Context, hc *http.Client, endpoint, clientID string, secret []byte) error {
	x := &Exchanger{opts: ExchangeOptions{ClientID: clientID, ClientSecret: secret, HTTPClient: hc, Timeout: DefaultTimeout}}
	_, _, err := x.post(ctx, endpoint, url.Values{"grant_type": {GrantTokenExchange}, "subject_token_type": {TokenTypeAccess}})
	var e *Error
	switch {
	case err == nil:
		return errors.New("credential: the token endpoint exchanged no token at all; it does not check the request")
	case errors.As(err, &e) && e.IssuerError == "invalid_request":
		return nil
	case errors.As(err, &e) && e.IssuerError != "":
		return fmt.Errorf("credential: the token endpoint refused the client: %s", e.IssuerError)
	}
	return err
}
