package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Kinds of refusal. Every error Authenticate returns matches exactly one of
// them with errors.Is; the middleware maps kinds to answers in one table
// (see answers).
var (
	// ErrNoToken: the request carries no bearer credentials at all.
	ErrNoToken = errors.New("auth: no bearer token")
	// ErrInvalidRequest: credentials in the wrong place or repeated
	// (RFC 6750 §3.1 invalid_request).
	ErrInvalidRequest = errors.New("auth: malformed authorization")
	// ErrInvalidToken: the token failed a check (RFC 6750 §3.1 invalid_token).
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrInsufficientScope: a valid token lacks a required scope
	// (RFC 6750 §3.1 insufficient_scope).
	ErrInsufficientScope = errors.New("auth: insufficient scope")
	// ErrUnavailable: the issuer's keys have not been fetched yet.
	ErrUnavailable = errors.New("auth: signing keys are not available yet")
	// ErrTooManyRequests: the request's client caused more work at the
	// issuer than its share allows (429 with Retry-After).
	ErrTooManyRequests = errors.New("auth: too many requests")
	// ErrInvalidDPoPProof: the DPoP proof failed a check (RFC 9449 §7.1
	// invalid_dpop_proof).
	ErrInvalidDPoPProof = errors.New("auth: invalid DPoP proof")
	// ErrUseDPoPNonce: the DPoP proof lacks the server's current nonce
	// (RFC 9449 §9 use_dpop_nonce); the answer carries one in DPoP-Nonce.
	ErrUseDPoPNonce = errors.New("auth: DPoP proof needs the server's nonce")
)

// checkError is one failed check. Its message, minus the "auth: " prefix,
// is safe to show the client: it names the check, never token contents.
type checkError struct {
	kind error
	msg  string
}

func (e *checkError) Error() string { return e.msg }
func (e *checkError) Unwrap() error { return e.kind }

func check(kind error, msg string) error { return &checkError{kind: kind, msg: "auth: " + msg} }

// The checks. Callers may test for each with errors.Is; each also matches
// its kind.
var (
	ErrTokenInQuery      = check(ErrInvalidRequest, "access tokens are accepted only in the Authorization header")
	ErrFormBody          = check(ErrInvalidRequest, "form-encoded requests are refused: access tokens are accepted only in the Authorization header")
	ErrManyAuthorization = check(ErrInvalidRequest, "more than one Authorization header")
	ErrTokenTooLarge     = check(ErrInvalidToken, "token is too large")
	ErrMalformed         = check(ErrInvalidToken, "token is not a well-formed JWS compact serialization")
	ErrAlgorithm         = check(ErrInvalidToken, "token algorithm is not allowed")
	ErrType              = check(ErrInvalidToken, "token type (typ header) is not accepted")
	ErrUnsupportedHeader = check(ErrInvalidToken, "token header asks for a critical extension (crit) or an unencoded payload (b64), which this resource does not support")
	ErrUnknownKey        = check(ErrInvalidToken, "token signing key is unknown")
	ErrSignature         = check(ErrInvalidToken, "token signature is invalid")
	ErrClaims            = check(ErrInvalidToken, "token claims are malformed")
	ErrIssuer            = check(ErrInvalidToken, "token issuer is not the configured issuer")
	ErrAudience          = check(ErrInvalidToken, "token audience does not include this resource")
	ErrNoExpiry          = check(ErrInvalidToken, "token has no expiry")
	ErrExpired           = check(ErrInvalidToken, "token has expired")
	ErrNotYetValid       = check(ErrInvalidToken, "token is not valid yet")
	ErrIssuedInFuture    = check(ErrInvalidToken, "token was issued in the future")
	ErrNoSubject         = check(ErrInvalidToken, "token has no subject")
	ErrUserID            = check(ErrInvalidToken, "token user claim is missing or not a valid user id")
	ErrDPoPBound         = check(ErrInvalidToken, "token is bound to a DPoP key (cnf.jkt, RFC 9449) and this resource accepts only Bearer tokens; request a token without DPoP")
	ErrBadConfirmation   = check(ErrInvalidToken, "token cnf.jkt is not a SHA-256 JWK thumbprint (43 base64url characters)")
	ErrCertBound         = check(ErrInvalidToken, "token is bound to a client certificate (cnf.x5t#S256, RFC 8705) and this resource accepts only Bearer tokens; request a token that is not certificate-bound")
	ErrKeyBound          = check(ErrInvalidToken, "token is bound to a key (cnf, RFC 7800) and this resource accepts only Bearer tokens; request an unbound token")
	ErrMissingScope      = check(ErrInsufficientScope, "token lacks a required scope")
)

// answer is how one kind of refusal goes on the wire.
type answer struct {
	status int
	code   string // RFC 6750 §3.1 error code; "" sends none in the challenge
	body   string // the body's "error" when code is empty
}

// answers is the one table from refusal kind to HTTP answer.
//
// MCP 2025-11-25 §Token Handling: a missing, invalid or expired token gets
// 401. A token in the query string is answered 401 too, with
// invalid_request, rather than RFC 6750's SHOULD 400: to the client it is a
// request without a usable token, and 401 is what makes it authorize.
var answers = []struct {
	kind error
	answer
}{
	{ErrNoToken, answer{http.StatusUnauthorized, "", "unauthorized"}},
	{ErrInvalidRequest, answer{http.StatusUnauthorized, "invalid_request", ""}},
	{ErrInvalidToken, answer{http.StatusUnauthorized, "invalid_token", ""}},
	{ErrInsufficientScope, answer{http.StatusForbidden, "insufficient_scope", ""}},
	{ErrUnavailable, answer{http.StatusServiceUnavailable, "", "temporarily_unavailable"}},
	{ErrTooManyRequests, answer{http.StatusTooManyRequests, "", "too_many_requests"}},
	{ErrInvalidDPoPProof, answer{http.StatusUnauthorized, "invalid_dpop_proof", ""}},
	{ErrUseDPoPNonce, answer{http.StatusUnauthorized, "use_dpop_nonce", ""}},
}

func answerFor(err error) answer {
	for _, a := range answers {
		if errors.Is(err, a.kind) {
			return a.answer
		}
	}
	return answer{http.StatusInternalServerError, "", "server_error"}
}

// description is the client-safe text for err.
func description(err error) string {
	var ce *checkError
	if errors.As(err, &ce) {
		return strings.TrimPrefix(ce.msg, "auth: ")
	}
	switch {
	case errors.Is(err, ErrNoToken):
		return "a bearer token is required in the Authorization header"
	case errors.Is(err, ErrUnavailable):
		return "the authorization server's signing keys are not available yet; retry later"
	}
	return "authentication failed"
}

// WriteError answers a request that Authenticate refused: the status, the
// RFC 6750 §3 WWW-Authenticate challenge (with RFC 9728 §5.1
// resource_metadata and the derived scope), Retry-After on 503, and a JSON
// body that says the same in words.
func (a *Authenticator) WriteError(w http.ResponseWriter, err error) {
	desc := description(err)
	if errors.Is(err, ErrTokenTooLarge) {
		// Name the limit, so the operator of the client knows what to fix.
		desc = "token is larger than the limit of " + strconv.Itoa(a.opts.MaxTokenBytes) + " bytes"
	}
	a.writeError(w, err, desc, a.scopeParam)
}

// writeError is WriteError with the description and the challenge's scope
// given.
func (a *Authenticator) writeError(w http.ResponseWriter, err error, desc, scope string) {
	ans := answerFor(err)
	h := w.Header()
	switch ans.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		for _, c := range a.challenges(err, ans.code, desc, scope) {
			h.Add("WWW-Authenticate", c)
		}
		if errors.Is(err, ErrUseDPoPNonce) && a.dpop != nil && a.dpop.nonces != nil {
			h.Set("DPoP-Nonce", a.dpop.nonces.current(a.opts.Now()))
		}
	case http.StatusServiceUnavailable:
		retry := 1
		switch {
		case errors.Is(err, ErrIntrospection):
			retry = introspectionRetryAfter
		case errors.Is(err, ErrReplayCacheFull):
		case a.keys != nil:
			retry = a.keys.retryAfterSeconds()
		}
		h.Set("Retry-After", strconv.Itoa(retry))
	case http.StatusTooManyRequests:
		h.Set("Retry-After", strconv.Itoa(introspectionRetryAfter))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	code := ans.code
	if code == "" {
		code = ans.body
	}
	body, _ := json.Marshal(struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}{code, desc})
	w.WriteHeader(ans.status)
	w.Write(append(body, '\n'))
}

// ErrNeedsWriteScope: a valid token without the write scope asked for
// something only a write token may do.
var ErrNeedsWriteScope = check(ErrInsufficientScope, "this request needs the write scope")

// WriteScopeRequired answers r, whose verified principal lacks the write
// scope for what it asked, with 403 insufficient_scope and a challenge
// whose scope names the required scopes and the write scope: the minimum
// for the operation, so the client can step up in one round (MCP
// 2025-11-25 §Runtime Insufficient Scope Errors). desc says what needed
// it. It writes nothing and reports false when r did not pass an
// Authenticator's Middleware, or no write scope is configured.
func WriteScopeRequired(w http.ResponseWriter, r *http.Request, desc string) bool {
	a, _ := r.Context().Value(authenticatorKey{}).(*Authenticator)
	if rights, p := rightsFrom(r), PrincipalFrom(r.Context()); a != nil && rights != nil && p != nil {
		// A server behind a combined endpoint: its own write scope, and
		// the token keeps what it holds for the others.
		if rights.WriteScope == "" {
			return false
		}
		a.writeError(w, schemeOf(r, ErrNeedsWriteScope), desc, stepUpScopes(a, p, rights, rights.WriteScope))
		return true
	}
	if a == nil || a.opts.WriteScope == "" {
		return false
	}
	scopes := append(append([]string(nil), a.opts.RequiredScopes...), a.opts.WriteScope)
	a.writeError(w, schemeOf(r, ErrNeedsWriteScope), desc, strings.Join(scopes, " "))
	return true
}

// dpopScheme marks the refusal of a request made with the DPoP scheme,
// whose challenge carries the error (RFC 9449 §7.1).
type dpopScheme struct{ error }

func (e dpopScheme) Unwrap() error { return e.error }

// schemeOf marks err as a DPoP refusal when r was let in with a DPoP
// proof, for an answer after the middleware (WriteScopeRequired, StepUp).
func schemeOf(r *http.Request, err error) error {
	if p := PrincipalFrom(r.Context()); p != nil && p.KeyThumbprint != "" {
		return dpopScheme{err}
	}
	return err
}

// challenges builds the WWW-Authenticate challenges: Bearer, and beside it
// DPoP with the proof algorithms (RFC 9449 §7.1) unless DPoP is off; DPoP
// alone when it is required. The error code goes into the challenge of the
// scheme the request used.
func (a *Authenticator) challenges(err error, code, desc, scope string) []string {
	if a.dpop == nil {
		return []string{a.challenge("Bearer", code, desc, scope, "")}
	}
	var ds dpopScheme
	dpopErr := errors.As(err, &ds) || errors.Is(err, ErrInvalidDPoPProof) || errors.Is(err, ErrUseDPoPNonce)
	algs := `algs="` + a.dpop.algList + `"`
	if a.dpop.opts.Mode == DPoPRequired {
		return []string{a.challenge("DPoP", code, desc, scope, algs)}
	}
	if dpopErr {
		return []string{a.challenge("Bearer", "", "", scope, ""), a.challenge("DPoP", code, desc, scope, algs)}
	}
	return []string{a.challenge("Bearer", code, desc, scope, ""), a.challenge("DPoP", "", "", scope, algs)}
}

// challenge builds one challenge of scheme. Without an error code (no
// credentials were sent) it carries only its params, resource_metadata and
// scope, as RFC 6750 §3.1 asks.
func (a *Authenticator) challenge(scheme, code, desc, scope, params string) string {
	var b strings.Builder
	b.WriteString(scheme + " ")
	if code != "" {
		b.WriteString(`error="` + code + `", error_description="` + descriptionParam(desc) + `", `)
	}
	if params != "" {
		b.WriteString(params + ", ")
	}
	b.WriteString(`resource_metadata="` + quote(a.metadataURL) + `"`)
	if scope != "" {
		b.WriteString(`, scope="` + quote(scope) + `"`)
	}
	return b.String()
}

// descriptionParam renders desc as an error_description value. RFC 6750 §3
// allows only %x20-21 / %x23-5B / %x5D-7E there: no quote, no backslash,
// no control character, no DEL and nothing beyond ASCII, which a
// description may hold when it names something the client chose (a tool
// name). Every other byte, and % itself, is percent-encoded, so the text
// stays readable and nothing is lost.
func descriptionParam(desc string) string {
	var b strings.Builder
	for i := 0; i < len(desc); i++ {
		c := desc[i]
		if c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != '%' {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// quote escapes a quoted-string (RFC 9110 §5.6.4).
func quote(s string) string {
	if !strings.ContainsAny(s, `"\`) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return r.Replace(s)
}
