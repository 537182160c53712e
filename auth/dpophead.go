package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// proofHead is what a proof's JOSE header decides (RFC 9449 §4.3 checks 4,
// 5 and 7): the algorithm and the public key, of the kind it needs. A
// client's proofs all carry one header, byte for byte (typ, alg, its
// jwk), so it is read once per client rather than on every request.
type proofHead struct {
	alg string
	key *proofPub
}

// headCache keeps the headers that passed, by the SHA-256 of their
// base64url segment; a header that failed is read, and refused, again
// each time.
type headCache = lru[[32]byte, *proofHead]

// head reads a proof's header segment seg, from the cache or now.
func (d *dpopState) head(seg string) (*proofHead, error) {
	id := sha256.Sum256([]byte(seg))
	if h, ok := d.heads.get(id); ok {
		return h, nil
	}
	hb, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return nil, ErrProofMalformed
	}
	h, err := decodeProofHeader(hb)
	if err != nil {
		return nil, ErrProofMalformed
	}
	// 4: typ; 5: alg; crit and b64 change how the JWS is read: refused.
	if !strings.EqualFold(h.Typ, "dpop+jwt") {
		return nil, ErrProofType
	}
	if !d.algs[h.Alg] {
		return nil, ErrProofAlgorithm
	}
	if h.Crit != nil || h.B64 != nil {
		return nil, ErrProofHeader
	}
	// 7: a public key, of the kind alg needs.
	key, err := d.proofKeyOf(h.JWK, h.Alg)
	if err != nil {
		return nil, err
	}
	return d.heads.add(id, &proofHead{alg: h.Alg, key: key}), nil
}
