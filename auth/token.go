package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// header is the part of the JOSE header we decide on before verifying,
// read by exact member names (decodeHeader; the tags only document them).
type header struct {
	Alg string  `json:"alg"`
	Kid string  `json:"kid"`
	Typ *string `json:"typ"`
	// Crit (RFC 7515 §4.1.11) and b64 (RFC 7797) change how a token is
	// to be read; none is supported, so their presence refuses it.
	Crit json.RawMessage `json:"crit"`
	B64  json.RawMessage `json:"b64"`
}

// claims are the registered and well-known claims we read, each by its
// exact name (decodeClaims; the tags only document the names). Unknown
// claims are ignored; a known claim of the wrong JSON type fails the token.
type claims struct {
	Iss      string      `json:"iss"`
	Sub      string      `json:"sub"`
	Aud      audience    `json:"aud"`
	Exp      numericDate `json:"exp"`
	Nbf      numericDate `json:"nbf"`
	Iat      numericDate `json:"iat"`
	Azp      string      `json:"azp"`
	ClientID string      `json:"client_id"`
	Scope    scopeList   `json:"scope"`
	Scp      scopeList   `json:"scp"`
	// Cnf binds the token to a key (RFC 7800 §3.1): a JSON object whose
	// members name the confirmation method.
	Cnf map[string]json.RawMessage `json:"cnf"`

	// The usual user claims, decoded here to spare a second pass.
	PreferredUsername string `json:"preferred_username"`
	Email             string `json:"email"`
}

// audience is aud: one StringOrURI or an array of them (RFC 7519 §4.1.3).
type audience []string

func (l *audience) UnmarshalJSON(b []byte) error {
	s, isString, a, err := stringOrArray(b)
	if isString {
		a = []string{s}
	}
	*l = a
	return err
}

// scopeList is scope or scp: a space-separated string (RFC 8693 §4.2,
// Keycloak) or an array (Ory and others). present tells an absent claim
// from an empty one.
type scopeList struct {
	present bool
	scopes  []string
}

func (l *scopeList) UnmarshalJSON(b []byte) error {
	s, isString, a, err := stringOrArray(b)
	if isString {
		a = strings.Fields(s)
	}
	*l = scopeList{present: !bytes.Equal(b, []byte("null")), scopes: a}
	return err
}

// stringOrArray decodes b, one JSON value already validated by the
// decoder that called UnmarshalJSON, as a string or an array of strings.
// A string without escapes, in valid UTF-8, is its bytes between the
// quotes, exactly what encoding/json would decode, and is taken without a
// second decoder (which costs several allocations per claim); anything
// else goes to encoding/json.
func stringOrArray(b []byte) (string, bool, []string, error) {
	if len(b) > 0 && b[0] == '"' {
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
			return string(b[1 : len(b)-1]), true, nil, nil
		}
		return slowString(b)
	}
	return slowArray(b)
}

// slowString and slowArray keep the variables encoding/json needs a
// pointer to, which then live on the heap, out of stringOrArray's fast
// path.
func slowString(b []byte) (string, bool, []string, error) {
	var s string
	err := json.Unmarshal(b, &s)
	return s, true, nil, err
}

func slowArray(b []byte) (string, bool, []string, error) {
	var a []string
	err := json.Unmarshal(b, &a)
	return "", false, a, err
}

// numericDate is seconds since the epoch, possibly fractional (RFC 7519 §2).
// set tells a present claim from an absent (or null) one; a value rather
// than a pointer in claims, it costs no allocation.
type numericDate struct {
	time.Time
	set bool
}

func (d *numericDate) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = numericDate{} // as absent, as a nil pointer was
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return fmt.Errorf("auth: bad NumericDate %.20q", b)
	}
	sec, frac := math.Modf(f)
	d.Time, d.set = time.Unix(int64(sec), int64(frac*1e9)), true
	return nil
}

// isB64Token reports whether s has the RFC 6750 §2.1 b64token syntax.
func isB64Token(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// VerifyToken checks a bearer token (the credentials without "Bearer ") and
// returns its principal. Authenticate calls it after finding the token in
// the request; it is exported for callers that hold a token some other way.
func (a *Authenticator) VerifyToken(ctx context.Context, token string) (*Principal, error) {
	p, err := a.check(ctx, token, "")
	if err == nil && p.KeyThumbprint != "" {
		// Bound to a key, and no request to prove it with.
		err = ErrDPoPAsBearer
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// check answers from the cache of verified tokens when it can, and
// verifies otherwise, caching a success. The principal it returns carries
// what is known even on failure, for the log line. source is the client's
// address key (AddressKey), "" when unknown.
func (a *Authenticator) check(ctx context.Context, token, source string) (*Principal, error) {
	if len(token) > a.opts.MaxTokenBytes {
		return &Principal{}, ErrTokenTooLarge
	}
	sum := sha256.Sum256([]byte(token))
	return a.checkSum(ctx, token, &sum, source)
}

// checkSum is check for a token whose SHA-256 is sum (unset, and unread,
// for a token over MaxTokenBytes).
func (a *Authenticator) checkSum(ctx context.Context, token string, sum *[32]byte, source string) (*Principal, error) {
	if len(token) > a.opts.MaxTokenBytes {
		return &Principal{}, ErrTokenTooLarge
	}
	if a.introspects(token) {
		return a.checkIntrospected(ctx, token, sum, source)
	}
	gen := a.keyGen()
	if e := a.cache.get(sum, gen, a.opts.Now(), a.opts.Leeway); e != nil {
		return e.principal(), nil
	}
	e := cachedToken{p: Principal{TokenTag: hex.EncodeToString(sum[:6])}, gen: gen}
	if err := a.verify(ctx, token, &e); err != nil {
		return &e.p, err
	}
	a.cache.put(sum, e)
	return &e.p, nil
}

// checkIntrospected is check for a token the endpoint decides on. Its
// answers are cached apart from JWTs, and not emptied by a key rotation,
// which does not change them: an "active" answer for MaxCacheTTL (and kept
// for IntrospectionStaleGrace more, for when the endpoint fails), a refusal
// for IntrospectionRefusalTTL. What no cache answers costs an introspection
// request, at most PerAddressPerMinute for source.
func (a *Authenticator) checkIntrospected(ctx context.Context, token string, sum *[32]byte, source string) (*Principal, error) {
	now := a.opts.Now()
	if e := a.icache.get(sum, nil, now, a.opts.Leeway); e != nil {
		return e.principal(), nil
	}
	if e := a.irefused.get(sum, nil, now, 0); e != nil {
		return e.principal(), e.refusal
	}
	e := cachedToken{p: Principal{TokenTag: hex.EncodeToString(sum[:6])}}
	var err error
	switch {
	case a.introspectionPaused(now):
		err = ErrIntrospection
	case !a.ilimit.allow(source, now):
		return &e.p, ErrIntrospectionLimited
	default:
		err = a.introspect(ctx, token, &e)
	}
	switch {
	case err == nil:
		e.stale = now.Add(a.opts.Introspection.MaxCacheTTL + IntrospectionStaleGrace)
		if e.p.Expiry.Before(e.stale) {
			e.stale = e.p.Expiry
		}
		a.icache.put(sum, e)
		return &e.p, nil
	case errors.Is(err, ErrIntrospection):
		// Not known to be bad: what the endpoint said before still holds
		// for a while.
		if old := a.icache.getStale(sum, now); old != nil {
			a.opts.Logger.Warn("auth: token introspection unavailable; using the endpoint's earlier answer", "token", old.p.TokenTag, "user", old.p.UserID)
			p := old.principal()
			p.Recheck = old.stale // what it opens ends with the grace
			return p, nil
		}
	case errors.Is(err, ErrInvalidToken), errors.Is(err, ErrInsufficientScope):
		// Known to be bad now (revoked, say): what the endpoint said
		// before no longer serves it, not even while the endpoint fails.
		a.icache.revoke(sum)
		a.irefused.put(sum, cachedToken{p: e.p, until: now.Add(IntrospectionRefusalTTL), refusal: err})
	}
	return &e.p, err
}

// keyGen names the keys tokens are verified with now.
func (a *Authenticator) keyGen() any {
	if a.keys == nil {
		return nil
	}
	if idx := a.keys.current(); idx != nil {
		return idx.gen
	}
	return nil
}

// verify fills e, whose principal carries what is known so far even on
// failure, for the log line. e.gen names the keys when it is called; verify
// replaces it with the generation of the keys a JWKS key came from.
func (a *Authenticator) verify(ctx context.Context, token string, e *cachedToken) error {
	p := &e.p
	if len(token) > a.opts.MaxTokenBytes {
		return ErrTokenTooLarge
	}
	if token == "" || !isB64Token(token) || strings.Count(token, ".") != 2 {
		return ErrMalformed
	}
	encHdr, _, _ := strings.Cut(token, ".")
	rawHdr, err := base64.RawURLEncoding.DecodeString(encHdr)
	if err != nil {
		return ErrMalformed
	}
	h, err := decodeHeader(rawHdr)
	if err != nil {
		return ErrMalformed
	}
	p.KeyID = h.Kid // for the log line; capped, it is the sender's text
	if len(p.KeyID) > 64 {
		p.KeyID = p.KeyID[:64]
	}
	alg, ok := a.algs[h.Alg]
	if !ok {
		return ErrAlgorithm
	}
	if !a.typeAccepted(h.Typ) {
		return ErrType
	}

	if h.Crit != nil || h.B64 != nil {
		return ErrUnsupportedHeader
	}

	// The signature is checked here rather than by jws.VerifyCompactFast,
	// which parses the header a second time and builds a verifier per
	// call: about half the allocations of a verification.
	dot := strings.LastIndexByte(token, '.')
	input := []byte(token[:dot])
	sig, err := base64.RawURLEncoding.DecodeString(token[dot+1:])
	if err != nil {
		return ErrMalformed
	}
	if alg.IsSymmetric() {
		// Only the configured secret: never a JWKS key, whatever kid says.
		err = jwsbb.Verify(a.opts.HMACSecret, h.Alg, input, sig)
	} else {
		idx, keys, kerr := a.keys.keys(ctx, h.Kid, alg)
		if kerr != nil {
			return kerr
		}
		e.gen = idx.gen
		for _, k := range keys {
			if err = jwsbb.Verify(k.raw, h.Alg, input, sig); err == nil {
				p.KeyID = k.kid
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrSignature, err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(token[strings.IndexByte(token, '.')+1 : dot])
	if err != nil {
		return ErrMalformed
	}

	c, all, err := decodeClaims(payload)
	if err != nil {
		return ErrClaims
	}
	return a.checkClaims(&c, all, e)
}

// checkClaims applies the checks on authentic claims, from a verified JWT
// or an introspection answer, and fills e. all holds every member they
// were decoded from, by exact name, for a user claim outside claims and
// the policy's claims.
//
// These checks are not jwx's jwt.Parse options (WithIssuer, WithAudience,
// WithAcceptableSkew, WithRequiredClaim) because they also judge RFC 7662
// introspection answers, which never pass through jwx, and because jwx's
// skew applies to exp as well (jwt/validate.go), where this server allows
// none. Each check returns its own error (ErrIssuer, ErrExpired, …), which
// the challenge, the log and the refusal metric name; jwx would give one
// validation error to take apart.
func (a *Authenticator) checkClaims(c *claims, all map[string]json.RawMessage, e *cachedToken) error {
	p := &e.p
	// The claims are authentic from here on, so the log line of a refusal
	// may name the user even when a later check fails.
	p.Issuer, p.Subject = c.Iss, c.Sub
	p.ClientID = c.Azp
	if p.ClientID == "" {
		p.ClientID = c.ClientID
	}
	user, userErr := a.userID(c, all)
	if userErr == nil {
		p.UserID = user
	}
	if c.Iss != a.opts.Issuer {
		return ErrIssuer
	}
	if !slices.Contains(c.Aud, a.opts.Resource) {
		return ErrAudience
	}
	now := a.opts.Now()
	switch {
	case !c.Exp.set:
		return ErrNoExpiry
	case !now.Before(c.Exp.Time):
		return ErrExpired
	case c.Nbf.set && c.Nbf.After(now.Add(a.opts.Leeway)):
		return ErrNotYetValid
	case c.Iat.set && c.Iat.After(now.Add(a.opts.Leeway)):
		return ErrIssuedInFuture
	}
	p.Expiry = c.Exp.Time
	e.until = c.Exp.Time
	if c.Nbf.set {
		e.nbf = c.Nbf.Time
	}
	if c.Iat.set {
		e.iat = c.Iat.Time
	}
	if c.Sub == "" {
		return ErrNoSubject
	}
	jkt, x5t, err := a.confirmation(c.Cnf)
	if err != nil {
		return err
	}
	p.KeyThumbprint, p.CertThumbprint = jkt, x5t
	if userErr != nil {
		return userErr
	}

	if c.Scope.present {
		p.Scopes = c.Scope.scopes
	} else {
		p.Scopes = c.Scp.scopes
	}
	p.ReadOnly = a.opts.WriteScope != "" && !slices.Contains(p.Scopes, a.opts.WriteScope)
	for _, s := range a.opts.RequiredScopes {
		if !slices.Contains(p.Scopes, s) {
			return ErrMissingScope
		}
	}
	a.grant(p, all)
	return nil
}

// userID reads the configured user claim and checks it is a sane id.
func (a *Authenticator) userID(c *claims, all map[string]json.RawMessage) (string, error) {
	var user string
	switch a.opts.UserClaim {
	case "sub":
		user = c.Sub
	case "preferred_username":
		user = c.PreferredUsername
	case "email":
		user = c.Email
	default:
		if json.Unmarshal(all[a.opts.UserClaim], &user) != nil {
			return "", ErrUserID
		}
	}
	if !ValidUserID(user) {
		return "", ErrUserID
	}
	return user, nil
}

// typeAccepted applies RFC 9068 §2.1 / RFC 8725 §3.11: typ is compared
// case-insensitively and "application/" may be omitted.
func (a *Authenticator) typeAccepted(typ *string) bool {
	if typ == nil {
		return !a.opts.RequireATJWT
	}
	t := strings.TrimPrefix(strings.ToLower(*typ), "application/")
	if t == "at+jwt" {
		return true
	}
	return t == "jwt" && !a.opts.RequireATJWT
}

// ValidUserID reports whether id is a sane user identifier: 1 to 128
// characters of A-Z a-z 0-9 . _ @ -, not starting with a dash (so it can
// never be taken for a command-line option where a worker passes it on).
func ValidUserID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}
