package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DPoP modes (DPoP.Mode).
const (
	// DPoPOff refuses DPoP-bound tokens and ignores the DPoP scheme, as a
	// resource that knows nothing of RFC 9449 does.
	DPoPOff = "off"
	// DPoPAllowed accepts DPoP-bound tokens with a valid proof and plain
	// Bearer tokens alike. The default.
	DPoPAllowed = "allowed"
	// DPoPRequired accepts only DPoP-bound tokens with a valid proof.
	DPoPRequired = "required"
)

// DPoP configures sender-constrained tokens by RFC 9449 (Demonstrating
// Proof of Possession). MCP knows it as an extension (SEP-1932); the
// 2026-07-28 specification text does not mention it, and a client that
// never heard of it keeps using Bearer tokens in the default mode.
type DPoP struct {
	// Mode is DPoPOff, DPoPAllowed or DPoPRequired; empty means DPoPAllowed.
	Mode string
	// PublicURL is the URL clients reach this server at (a proxy path
	// prefix included), which names a request's URI the way the client
	// saw it when it made the proof's htu: PublicURL + the request's
	// path. Default: the scheme and host of Options.Resource.
	PublicURL string
	// ProofLifetime is how old a proof's iat may be (RFC 9449 §11.1); a
	// proof up to Options.Leeway in the future passes too (clock skew).
	// Default DefaultProofLifetime.
	ProofLifetime time.Duration
	// Nonce makes every proof carry a nonce this server handed out in a
	// DPoP-Nonce header (RFC 9449 §9): a request without one, or with a
	// stale one, gets 401 use_dpop_nonce with a fresh nonce to retry with.
	Nonce bool
	// NonceSecret, with Nonce, is the key nonces are made with, at least
	// MinHMACSecret bytes: replicas that share it accept each other's
	// nonces. Empty: a random key per Authenticator, so a nonce (and so a
	// proof) is good only at the process that handed it out.
	NonceSecret []byte
	// NonceLifetime is how long a nonce is accepted: nonces change every
	// half of it, each accepted until NonceLifetime after its half began
	// (so between half and all of it after it was handed out), and a
	// successful response carries the next one once it has changed.
	// Default DefaultNonceLifetime.
	NonceLifetime time.Duration
	// ReplayCacheSize bounds the jti values remembered to refuse a proof
	// seen before (RFC 9449 §11.1), each for ProofLifetime plus the
	// leeway. When it is full of live entries a proof is answered 503
	// rather than let through unchecked. Default DefaultReplayCacheSize.
	ReplayCacheSize int
}

// DPoP defaults.
const (
	DefaultProofLifetime   = 60 * time.Second
	DefaultNonceLifetime   = 5 * time.Minute
	DefaultReplayCacheSize = 1 << 20
	// MaxProofBytes caps a DPoP header: a proof carries one public key,
	// a handful of claims and a signature, a few KiB for RSA-4096.
	MaxProofBytes = 8 << 10
)

func (d *DPoP) normalize(resource string, bad func(string, ...any)) {
	if d.Mode == "" {
		d.Mode = DPoPAllowed
	}
	switch d.Mode {
	case DPoPOff, DPoPAllowed, DPoPRequired:
	default:
		bad("dpop mode %q is not off, allowed or required", d.Mode)
	}
	if d.PublicURL == "" {
		if u, err := url.Parse(resource); err == nil {
			d.PublicURL = u.Scheme + "://" + u.Host
		}
	} else if err := CheckURL(d.PublicURL); err != nil {
		bad("dpop public url: %v", err)
	}
	d.PublicURL = strings.TrimRight(d.PublicURL, "/")
	if d.ProofLifetime == 0 {
		d.ProofLifetime = DefaultProofLifetime
	}
	if d.ProofLifetime < 0 || d.ProofLifetime > time.Hour {
		bad("dpop proof lifetime %s is not between 0 and 1h", d.ProofLifetime)
	}
	if d.NonceLifetime == 0 {
		d.NonceLifetime = DefaultNonceLifetime
	}
	if d.NonceLifetime < 2*time.Second || d.NonceLifetime > 24*time.Hour {
		bad("dpop nonce lifetime %s is not between 2s and 24h", d.NonceLifetime)
	}
	if len(d.NonceSecret) > 0 {
		if err := checkHMACSecret(d.NonceSecret); err != nil {
			bad("dpop nonce secret %v", err)
		}
	}
	if d.ReplayCacheSize == 0 {
		d.ReplayCacheSize = DefaultReplayCacheSize
	}
	if d.ReplayCacheSize < 0 {
		bad("dpop replay cache size %d is negative", d.ReplayCacheSize)
	}
}

// DPoPAlgorithms are the proof algorithms accepted and advertised
// (dpop_signing_alg_values_supported, the challenge's algs): asymmetric
// ones only, as RFC 9449 §4.3 demands; never none, never HMAC.
func DPoPAlgorithms() []string { return DefaultAlgorithms() }

// The proof checks, in RFC 9449 §4.3's order. Each is invalid_dpop_proof
// (§7.1), except the nonce (use_dpop_nonce, §9).
var (
	ErrProofMissing    = check(ErrInvalidDPoPProof, "the DPoP scheme needs a DPoP header with a proof")
	ErrManyProofs      = check(ErrInvalidDPoPProof, "more than one DPoP header")
	ErrProofMalformed  = check(ErrInvalidDPoPProof, "DPoP proof is not a well-formed JWS compact serialization with a JSON header and claims")
	ErrProofTooLarge   = check(ErrInvalidDPoPProof, "DPoP proof is too large")
	ErrProofType       = check(ErrInvalidDPoPProof, "DPoP proof typ header is not dpop+jwt")
	ErrProofAlgorithm  = check(ErrInvalidDPoPProof, "DPoP proof algorithm is not an allowed asymmetric algorithm")
	ErrProofHeader     = check(ErrInvalidDPoPProof, "DPoP proof header asks for a critical extension (crit) or an unencoded payload (b64)")
	ErrProofKey        = check(ErrInvalidDPoPProof, "DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")
	ErrProofSignature  = check(ErrInvalidDPoPProof, "DPoP proof signature does not verify with its jwk")
	ErrProofClaims     = check(ErrInvalidDPoPProof, "DPoP proof claims jti, htm, htu and iat are required, as strings (iat a number)")
	ErrProofMethod     = check(ErrInvalidDPoPProof, "DPoP proof htm is not the request's method")
	ErrProofURI        = check(ErrInvalidDPoPProof, "DPoP proof htu is not the request's URI (scheme, host and path as the server's public URL names them, without query or fragment)")
	ErrProofStale      = check(ErrInvalidDPoPProof, "DPoP proof iat is too old; make a new proof for each request")
	ErrProofFuture     = check(ErrInvalidDPoPProof, "DPoP proof iat is in the future")
	ErrProofTokenHash  = check(ErrInvalidDPoPProof, "DPoP proof ath is missing or is not the hash of the access token")
	ErrProofReplayed   = check(ErrInvalidDPoPProof, "DPoP proof was used before (jti); make a new proof for each request")
	ErrProofNonce      = check(ErrUseDPoPNonce, "DPoP proof must carry the nonce in the DPoP-Nonce header")
	ErrProofWithBearer = check(ErrInvalidRequest, "a DPoP proof came with the Bearer scheme; a DPoP-bound token goes in Authorization: DPoP")
	ErrNotDPoPBound    = check(ErrInvalidToken, "token is not bound to a DPoP key (no cnf.jkt); send it with the Bearer scheme and no proof")
	ErrDPoPKeyMismatch = check(ErrInvalidToken, "token is bound to another key than the DPoP proof's (cnf.jkt is not the jwk's thumbprint)")
	ErrDPoPAsBearer    = check(ErrInvalidToken, "token is bound to a DPoP key (cnf.jkt, RFC 9449): send it as Authorization: DPoP with a DPoP proof")
	ErrDPoPRequired    = check(ErrInvalidToken, "this resource accepts only DPoP-bound tokens (RFC 9449): send Authorization: DPoP with a DPoP proof")
	ErrReplayCacheFull = check(ErrUnavailable, "too many DPoP proofs to remember right now; retry later")
)

// proofHeader is the part of a proof's JOSE header the checks read.
type proofHeader struct {
	Typ  string
	Alg  string
	JWK  json.RawMessage
	Crit json.RawMessage
	B64  json.RawMessage
}

// proofClaims are the claims RFC 9449 §4.2 defines.
type proofClaims struct {
	Jti, Htm, Htu, Ath, Nonce string
	Iat                       numericDate
}

// proof is what a verified proof tells: the thumbprint of its key and
// what the replay check needs.
type proof struct {
	jkt   string // RFC 7638 thumbprint of jwk, base64url
	jti   string
	iat   time.Time
	nonce string
}

// dpopState is an Authenticator's DPoP checker.
type dpopState struct {
	opts    DPoP
	leeway  time.Duration
	algs    map[string]bool
	replay  *replayCache
	keys    *keyCache   // parsed proof keys
	heads   headCache   // proof headers that passed (dpophead.go)
	nonces  *nonceMaker // nil without DPoP.Nonce
	algList string      // the challenge's algs
}

func newDPoPState(o *Options) (*dpopState, error) {
	d := &dpopState{opts: o.DPoP, leeway: o.Leeway, algs: map[string]bool{}}
	for _, a := range DPoPAlgorithms() {
		d.algs[a] = true
	}
	d.algList = strings.Join(DPoPAlgorithms(), " ")
	d.replay = newReplayCache(o.DPoP.ReplayCacheSize)
	d.keys = newKeyCache(proofKeyCacheSize)
	d.heads = newLRU[[32]byte, *proofHead](proofKeyCacheSize)
	if o.DPoP.Nonce {
		n, err := newNonceMaker(o.DPoP.NonceSecret, o.DPoP.NonceLifetime)
		if err != nil {
			return nil, err
		}
		d.nonces = n
	}
	return d, nil
}

// verifyProof applies RFC 9449 §4.3 checks 2 to 12 to the proof of r,
// which carries the token whose SHA-256 is tokenSum in its Authorization
// header, except the jti replay check, made once the token is known to be
// bound to the proof's key (remember). It checks a nonce only with
// DPoP.Nonce. The signature is checked last: it is the one check that
// costs, and a proof that fails a claim never reaches it.
func (d *dpopState) verifyProof(r *http.Request, raw string, tokenSum *[32]byte, now time.Time) (*proof, error) {
	if len(raw) > MaxProofBytes {
		return nil, ErrProofTooLarge
	}
	// 2: one well-formed JWT.
	first := strings.IndexByte(raw, '.')
	last := strings.LastIndexByte(raw, '.')
	if first <= 0 || last == first || last == len(raw)-1 || strings.IndexByte(raw[first+1:last], '.') >= 0 {
		return nil, ErrProofMalformed
	}
	// 4, 5, 7: the header (dpophead.go).
	h, err := d.head(raw[:first])
	if err != nil {
		return nil, err
	}
	payload, err := base64.RawURLEncoding.DecodeString(raw[first+1 : last])
	if err != nil {
		return nil, ErrProofMalformed
	}
	// 3: the claims.
	c, err := decodeProofClaims(payload)
	if err != nil || c.Jti == "" || len(c.Jti) > 256 || c.Htm == "" || c.Htu == "" || !c.Iat.set {
		return nil, ErrProofClaims
	}
	// 8: htm; 9: htu.
	if c.Htm != r.Method {
		return nil, ErrProofMethod
	}
	if !d.sameURI(c.Htu, r) {
		return nil, ErrProofURI
	}
	// 11: iat within the window (a nonce, 10, is checked by the caller,
	// after the token).
	switch {
	case c.Iat.Before(now.Add(-d.opts.ProofLifetime)):
		return nil, ErrProofStale
	case c.Iat.After(now.Add(d.leeway)):
		return nil, ErrProofFuture
	}
	// 12: ath, the token's hash (made once, for the token cache too).
	var ath [43]byte
	base64.RawURLEncoding.Encode(ath[:], tokenSum[:])
	if c.Ath != string(ath[:]) {
		return nil, ErrProofTokenHash
	}
	// 6: the signature.
	sig, err := base64.RawURLEncoding.DecodeString(raw[last+1:])
	if err != nil {
		return nil, ErrProofMalformed
	}
	if !h.key.verify(h.alg, []byte(raw[:last]), sig) {
		return nil, ErrProofSignature
	}
	return &proof{jkt: h.key.jkt, jti: c.Jti, iat: c.Iat.Time, nonce: c.Nonce}, nil
}

func decodeProofHeader(b []byte) (proofHeader, error) {
	var h proofHeader
	all, err := headerMembers(b)
	if err != nil {
		return h, err
	}
	err = fill(all, map[string]any{"typ": &h.Typ, "alg": &h.Alg})
	h.JWK, h.Crit, h.B64 = all["jwk"], all["crit"], all["b64"]
	return h, err
}

// decodeProofClaims reads a proof's claims as a JOSE header is read
// (headerMembers): one pass over the top-level members, at most
// maxHeaderMembers of them, none twice. Like a header they are read
// before the signature is checked (and anyone can sign a proof with a key
// of their own), and only top-level string and number members are used.
func decodeProofClaims(b []byte) (proofClaims, error) {
	var c proofClaims
	all, err := headerMembers(b)
	if err != nil {
		return c, err
	}
	for name, dst := range map[string]*string{"jti": &c.Jti, "htm": &c.Htm, "htu": &c.Htu, "ath": &c.Ath, "nonce": &c.Nonce} {
		if raw, ok := all[name]; ok {
			if err := readString(raw, dst); err != nil {
				return c, err
			}
		}
	}
	if raw, ok := all["iat"]; ok {
		err = c.Iat.UnmarshalJSON(raw)
	}
	return c, err
}

// readString reads the JSON value raw, which a decoder has found valid,
// into dst as json.Unmarshal does; a string without escapes, all of it
// valid UTF-8 (the usual claim), is taken as it is, without a decoder.
func readString(raw json.RawMessage, dst *string) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		in := raw[1 : n-1]
		if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			*dst = string(in)
			return nil
		}
	}
	return json.Unmarshal(raw, dst)
}

// privateMembers are the JWK members of private and symmetric keys (RFC
// 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2): a proof's jwk must hold none.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// jktPattern: a SHA-256 thumbprint, base64url without padding.
func validJKT(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// bind checks the token's bindings against r: a certificate binding
// (RFC 8705 §3, bindCert), then the DPoP one (RFC 9449 §7.1, §7.2): a
// DPoP-scheme request must carry one valid proof of the key the token's
// cnf.jkt names; a Bearer-scheme request must carry an unbound token and
// no proof, and is refused altogether when DPoP is required. p is the
// token's principal, from the cache or a fresh verification alike; on
// success its KeyThumbprint names the proved key. tokenSum is the token's
// SHA-256. nonce, with DPoP.Nonce, is the DPoP-Nonce to answer with: a
// fresh one once the proof's is past half its lifetime (RFC 9449 §8.2 lets
// a server supply a new nonce on any answer), so a client never has to be
// refused to learn the next one.
func (a *Authenticator) bind(r *http.Request, tokenSum *[32]byte, scheme string, p *Principal) (nonce string, _ error) {
	if err := a.bindCert(r, p.CertThumbprint); err != nil {
		return "", err
	}
	d := a.dpop
	jkt := p.KeyThumbprint
	p.KeyThumbprint = ""
	if d == nil {
		if jkt != "" {
			return "", ErrDPoPBound
		}
		return "", nil
	}
	proofs := r.Header.Values("DPoP")
	if scheme != schemeDPoP {
		switch {
		case len(proofs) > 0:
			return "", ErrProofWithBearer
		case jkt != "":
			return "", ErrDPoPAsBearer
		case d.opts.Mode == DPoPRequired:
			return "", ErrDPoPRequired
		}
		return "", nil
	}
	switch len(proofs) {
	case 0:
		return "", ErrProofMissing
	case 1:
	default:
		return "", ErrManyProofs
	}
	now := a.opts.Now()
	pr, err := d.verifyProof(r, proofs[0], tokenSum, now)
	if err != nil {
		return "", err
	}
	current := true
	if d.nonces != nil {
		var ok bool
		if ok, current = d.nonces.check(pr.nonce, now); !ok {
			return "", ErrProofNonce
		}
	}
	switch {
	case jkt == "":
		return "", ErrNotDPoPBound
	case jkt != pr.jkt:
		return "", ErrDPoPKeyMismatch
	}
	if err := d.replay.remember(replayKey(pr.jkt, pr.jti), pr.iat.Add(d.opts.ProofLifetime+time.Second), now); err != nil {
		return "", err
	}
	p.KeyThumbprint = jkt
	if !current {
		nonce = d.nonces.current(now)
	}
	return nonce, nil
}

// confirmation reads a token's cnf (RFC 7800 §3.1) and returns the DPoP
// key thumbprint and the client certificate thumbprint it names, "" for
// each it does not. Every confirmation method it holds must be one this
// resource checks: cnf.jkt with DPoP on, cnf.x5t#S256 with MTLS on. Any
// other method refuses the token, as does a binding this resource does
// not check: accepting it as a plain Bearer token would let whoever
// copied it use it, which is what the binding exists to prevent. An empty
// cnf binds nothing.
func (a *Authenticator) confirmation(cnf map[string]json.RawMessage) (jkt, x5t string, err error) {
	if len(cnf) == 0 {
		return "", "", nil
	}
	for m := range cnf {
		switch m {
		case "jkt", "x5t#S256":
		default:
			return "", "", ErrKeyBound
		}
	}
	if raw, ok := cnf["x5t#S256"]; ok {
		if !a.opts.MTLS.Enabled {
			return "", "", ErrCertBound
		}
		if json.Unmarshal(raw, &x5t) != nil || !validJKT(x5t) {
			return "", "", ErrBadCertConf
		}
	}
	if raw, ok := cnf["jkt"]; ok {
		if a.dpop == nil {
			return "", "", ErrDPoPBound
		}
		if json.Unmarshal(raw, &jkt) != nil || !validJKT(jkt) {
			return "", "", ErrBadConfirmation
		}
	}
	return jkt, x5t, nil
}
