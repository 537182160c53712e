package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	_ "crypto/sha512" // SHA-384 and SHA-512 for crypto.Hash.New
	"encoding/base64"
	"encoding/json"
	"math/big"
)

// A proof's key is read and its signature checked here by hand, with the
// standard library's crypto alone, rather than through a general JOSE
// library: a proof is checked on every DPoP request, and a general JWK
// reader costs hundreds of allocations for what is three or four members.
// The hand path is safe because it is narrow: it knows only the key types
// the algorithm allow-list can use (EC P-256/P-384/P-521, RSA of 2048 to
// 4096 bits, OKP Ed25519), every coordinate has the exact length its
// curve needs, an EC point must be on its curve (ecdsa.ParseUncompressedPublicKey),
// a key with any private or symmetric member is refused before anything
// else, the key must be of the kind alg names, and every other member
// (x5c, jku, kid, alg, use, key_ops) is never read: only the jwk's own
// key material verifies a proof. The RFC 7638 thumbprint is made from the
// members as parsed, in the RFC's order.

// proofPub is a proof's public key, read from its jwk.
type proofPub struct {
	ec  *ecdsa.PublicKey
	rsa *rsa.PublicKey
	ed  ed25519.PublicKey
	crv string // the EC or OKP curve
	jkt string // RFC 7638 SHA-256 thumbprint, base64url
}

// jwkMembers are the public-key members a proof's jwk is read from.
type jwkMembers struct {
	Kty, Crv, X, Y, N, E string
}

// curveSizes: an EC curve's coordinate length in bytes.
var curveSizes = map[string]int{"P-256": 32, "P-384": 48, "P-521": 66}

// parseProofJWK reads a proof's jwk: a public EC, RSA or OKP Ed25519 key
// with no private members (RSA 2048 to 4096 bits), or ErrProofKey.
func parseProofJWK(raw []byte) (*proofPub, error) {
	all, err := members(raw)
	if err != nil {
		return nil, ErrProofKey
	}
	for _, m := range privateMembers {
		if _, ok := all[m]; ok {
			return nil, ErrProofKey
		}
	}
	var m jwkMembers
	if err := fill(all, map[string]any{"kty": &m.Kty, "crv": &m.Crv, "x": &m.X, "y": &m.Y, "n": &m.N, "e": &m.E}); err != nil {
		return nil, ErrProofKey
	}
	b64 := base64.RawURLEncoding
	p := &proofPub{crv: m.Crv}
	var tp string
	switch m.Kty {
	case "EC":
		size, ok := curveSizes[m.Crv]
		if !ok {
			return nil, ErrProofKey
		}
		x, errX := b64.DecodeString(m.X)
		y, errY := b64.DecodeString(m.Y)
		if errX != nil || errY != nil || len(x) != size || len(y) != size {
			return nil, ErrProofKey
		}
		pt := make([]byte, 0, 1+2*size)
		pt = append(append(append(pt, 4), x...), y...)
		if p.ec, err = ecdsa.ParseUncompressedPublicKey(ecdsaCurve(m.Crv), pt); err != nil {
			return nil, ErrProofKey // not on the curve
		}
		tp = `{"crv":"` + m.Crv + `","kty":"EC","x":"` + b64.EncodeToString(x) + `","y":"` + b64.EncodeToString(y) + `"}`
	case "RSA":
		n, errN := b64.DecodeString(m.N)
		e, errE := b64.DecodeString(m.E)
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			return nil, ErrProofKey
		}
		exp := 0
		for _, c := range e {
			exp = exp<<8 | int(c)
		}
		// At least 2048 bits (RFC 8725 §3.5), and at most 4096: a proof
		// comes before anything else is known of its sender's key, and a
		// huge modulus costs a slow verification.
		p.rsa = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
		if bits := p.rsa.N.BitLen(); bits < 2048 || bits > 4096 || exp < 3 || exp > 1<<31-1 {
			return nil, ErrProofKey
		}
		tp = `{"e":"` + b64.EncodeToString(big.NewInt(int64(exp)).Bytes()) + `","kty":"RSA","n":"` + b64.EncodeToString(p.rsa.N.Bytes()) + `"}`
	case "OKP":
		x, err := b64.DecodeString(m.X)
		if m.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, ErrProofKey
		}
		p.ed = ed25519.PublicKey(x)
		tp = `{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(x) + `"}`
	default:
		return nil, ErrProofKey
	}
	sum := sha256.Sum256([]byte(tp))
	p.jkt = b64.EncodeToString(sum[:])
	return p, nil
}

// fits reports whether p is of the kind alg needs.
func (p *proofPub) fits(alg string) bool {
	switch alg {
	case "ES256":
		return p.ec != nil && p.crv == "P-256"
	case "ES384":
		return p.ec != nil && p.crv == "P-384"
	case "ES512":
		return p.ec != nil && p.crv == "P-521"
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return p.rsa != nil
	case "EdDSA":
		return p.ed != nil
	}
	return false
}

// verify checks sig over signed with p by alg, which p fits.
func (p *proofPub) verify(alg string, signed, sig []byte) bool {
	if alg == "EdDSA" {
		return ed25519.Verify(p.ed, signed, sig)
	}
	var h crypto.Hash
	switch alg[2:] {
	case "256":
		h = crypto.SHA256
	case "384":
		h = crypto.SHA384
	case "512":
		h = crypto.SHA512
	default:
		return false
	}
	d := h.New() // crypto/sha256 and crypto/sha512 are linked in
	d.Write(signed)
	digest := d.Sum(nil)
	switch alg[:2] {
	case "ES":
		// RFC 7518 §3.4: R and S, each the curve's coordinate length.
		size := curveSizes[p.crv]
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(p.ec, digest, r, s)
	case "RS":
		return rsa.VerifyPKCS1v15(p.rsa, h, digest, sig) == nil
	case "PS":
		return rsa.VerifyPSS(p.rsa, h, digest, sig, &rsa.PSSOptions{Hash: h, SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	}
	return false
}

// proofKeyCacheSize bounds the parsed proof keys kept: a client proves
// with the same key on every request, so its key is read once.
const proofKeyCacheSize = 4096

// keyCache remembers parsed proof keys by the SHA-256 of their jwk's
// exact bytes, least recently used first out. Only keys that parsed are
// kept; what alg they fit is checked on every proof.
type keyCache struct {
	lru[[32]byte, *proofPub]
}

func newKeyCache(max int) *keyCache {
	return &keyCache{newLRU[[32]byte, *proofPub](max)}
}

// key is the parsed key of the jwk raw, from the cache or parsed now.
func (c *keyCache) key(raw []byte) (*proofPub, error) {
	id := sha256.Sum256(raw)
	if p, ok := c.get(id); ok {
		return p, nil
	}
	p, err := parseProofJWK(raw)
	if err != nil {
		return nil, err
	}
	return c.add(id, p), nil
}

// proofKeyOf reads a proof's jwk raw for alg: a public key of the kind
// alg needs, or ErrProofKey.
func (d *dpopState) proofKeyOf(raw json.RawMessage, alg string) (*proofPub, error) {
	if raw == nil {
		return nil, ErrProofKey
	}
	p, err := d.keys.key(raw)
	if err != nil || !p.fits(alg) {
		return nil, ErrProofKey
	}
	return p, nil
}

func ecdsaCurve(crv string) elliptic.Curve {
	switch crv {
	case "P-256":
		return elliptic.P256()
	case "P-384":
		return elliptic.P384()
	}
	return elliptic.P521()
}
