package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var b64 = base64.RawURLEncoding.EncodeToString

func ecJWK(t *testing.T, c elliptic.Curve, crv string) (x, y []byte, jwk string) {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	require.NoError(t, err)
	pt, err := k.PublicKey.Bytes()
	require.NoError(t, err)
	size := (len(pt) - 1) / 2
	x, y = pt[1:1+size], pt[1+size:]
	return x, y, fmt.Sprintf(`{"kty":"EC","crv":%q,"x":%q,"y":%q}`, crv, b64(x), b64(y))
}

// TestProofJWKRefusals: what the hand-read jwk refuses, each a key a
// client could send to make a proof pass that should not.
func TestProofJWKRefusals(t *testing.T) {
	x, y, good := ecJWK(t, elliptic.P256(), "P-256")
	_, _, p384 := ecJWK(t, elliptic.P384(), "P-384")
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	n := b64(rk.N.Bytes())
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	big8k := new(big.Int).Lsh(big.NewInt(1), 4200)
	ed := b64(make([]byte, 32))
	for _, ok := range []string{good, p384, `{"kty":"RSA","e":"AQAB","n":"` + n + `"}`, `{"kty":"OKP","crv":"Ed25519","x":"` + ed + `"}`} {
		_, err := parseProofJWK([]byte(ok))
		require.NoError(t, err, ok)
	}
	for name, raw := range map[string]string{
		"not an object":           `[]`,
		"null":                    `null`,
		"no kty":                  fmt.Sprintf(`{"crv":"P-256","x":%q,"y":%q}`, b64(x), b64(y)),
		"a symmetric key":         `{"kty":"oct","k":"c2VjcmV0"}`,
		"a private member":        fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"d":"AA"}`, b64(x), b64(y)),
		"a member twice":          fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"x":%q}`, b64(x), b64(y), b64(y)),
		"x not a string":          fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":1,"y":%q}`, b64(y)),
		"an unknown curve":        fmt.Sprintf(`{"kty":"EC","crv":"secp256k1","x":%q,"y":%q}`, b64(x), b64(y)),
		"a short x":               fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, b64(x[1:]), b64(y)),
		"a long x":                fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, b64(append([]byte{0}, x...)), b64(y)),
		"a point off the curve":   fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, b64(x), b64(x)),
		"the point at infinity":   fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, b64(make([]byte, 32)), b64(make([]byte, 32))),
		"P-256 named P-384":       fmt.Sprintf(`{"kty":"EC","crv":"P-384","x":%q,"y":%q}`, b64(x), b64(y)),
		"padded base64":           fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, base64.URLEncoding.EncodeToString(x), b64(y)),
		"RSA of 1024 bits":        `{"kty":"RSA","e":"AQAB","n":"` + b64(small.N.Bytes()) + `"}`,
		"RSA over 4096 bits":      `{"kty":"RSA","e":"AQAB","n":"` + b64(big8k.Bytes()) + `"}`,
		"RSA exponent 1":          `{"kty":"RSA","e":"AQ","n":"` + n + `"}`,
		"RSA exponent of 5 bytes": `{"kty":"RSA","e":"AQAAAAE","n":"` + n + `"}`,
		"RSA without e":           `{"kty":"RSA","n":"` + n + `"}`,
		"OKP X25519":              `{"kty":"OKP","crv":"X25519","x":"` + ed + `"}`,
		"OKP Ed25519 short":       `{"kty":"OKP","crv":"Ed25519","x":"` + b64(make([]byte, 31)) + `"}`,
	} {
		_, err := parseProofJWK([]byte(raw))
		assert.ErrorIs(t, err, ErrProofKey, name)
	}
}

// TestProofKeyCache: a key read once is kept by its jwk's bytes, yet
// still refused under an algorithm of another kind; the cache keeps at
// most its bound, the least recently used key out first.
func TestProofKeyCache(t *testing.T) {
	d := &dpopState{keys: newKeyCache(2)}
	_, _, a := ecJWK(t, elliptic.P256(), "P-256")
	_, _, b := ecJWK(t, elliptic.P256(), "P-256")
	_, _, c := ecJWK(t, elliptic.P256(), "P-256")
	ka, err := d.proofKeyOf([]byte(a), "ES256")
	require.NoError(t, err)
	again, err := d.proofKeyOf([]byte(a), "ES256")
	require.NoError(t, err)
	assert.Same(t, ka, again, "read once")
	for _, alg := range []string{"ES384", "ES512", "RS256", "PS256", "EdDSA", "HS256", "none"} {
		_, err := d.proofKeyOf([]byte(a), alg)
		assert.ErrorIs(t, err, ErrProofKey, alg)
	}
	_, err = d.proofKeyOf(nil, "ES256")
	assert.ErrorIs(t, err, ErrProofKey)
	_, err = d.proofKeyOf([]byte(`{"kty":"oct","k":"AA"}`), "ES256")
	assert.ErrorIs(t, err, ErrProofKey)
	assert.Equal(t, 1, d.keys.order.Len(), "a refused key is not kept")

	for _, j := range []string{b, a, c} { // a most recent before c: b goes
		_, err := d.proofKeyOf([]byte(j), "ES256")
		require.NoError(t, err)
	}
	assert.Equal(t, 2, d.keys.order.Len())
	again, err = d.proofKeyOf([]byte(a), "ES256")
	require.NoError(t, err)
	assert.Same(t, ka, again, "a kept")
	_, inB := d.keys.byKey[sha256Sum(b)]
	assert.False(t, inB, "b evicted")
}

func sha256Sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// TestReadString: a proof claim is read as json.Unmarshal reads it,
// whether or not it takes the way without a decoder.
func TestReadString(t *testing.T) {
	for _, raw := range []string{`"plain"`, `""`, `"caf\u00e9"`, `"a\"b"`, `"\u0068tm"`, "\"\xff\xfe\"", `"é"`, `"a\/b"`, `null`, `12`, `{}`, `[]`, `true`} {
		var want, got string
		wantErr := json.Unmarshal([]byte(raw), &want)
		gotErr := readString(json.RawMessage(raw), &got)
		assert.Equal(t, wantErr == nil, gotErr == nil, raw)
		assert.Equal(t, want, got, raw)
	}
}
