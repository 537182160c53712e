package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// DPoPKey is a client's DPoP key (RFC 9449): it makes proofs, correct
// ones with Proof, and any shape at all with Sign, for hostile tests.
type DPoPKey struct {
	Alg        string
	priv       crypto.Signer
	public     map[string]any // the public JWK's members
	thumbprint string
}

// NewDPoPKey makes a key for alg: ES256, ES384, ES512, RS256, RS384,
// RS512, PS256, PS384, PS512 or EdDSA.
func NewDPoPKey(alg string) (*DPoPKey, error) {
	var priv crypto.Signer
	var err error
	switch alg {
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ES512":
		priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("authtest: no DPoP key for %q", alg)
	}
	if err != nil {
		return nil, err
	}
	k, err := jwk.Import(priv.Public())
	if err != nil {
		return nil, err
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(k)
	var pub map[string]any
	if err := json.Unmarshal(b, &pub); err != nil {
		return nil, err
	}
	return &DPoPKey{Alg: alg, priv: priv, public: pub, thumbprint: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

// MustDPoPKey is NewDPoPKey for a test.
func MustDPoPKey(t interface{ Fatalf(string, ...any) }, alg string) *DPoPKey {
	k, err := NewDPoPKey(alg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return k
}

// Thumbprint is the key's RFC 7638 SHA-256 thumbprint, base64url: the
// cnf.jkt of tokens bound to it.
func (k *DPoPKey) Thumbprint() string { return k.thumbprint }

// PublicJWK is a copy of the public key's JWK members.
func (k *DPoPKey) PublicJWK() map[string]any {
	m := make(map[string]any, len(k.public))
	for n, v := range k.public {
		m[n] = v
	}
	return m
}

// PrivateJWK is the key's JWK with its private members: what a proof must
// never carry.
func (k *DPoPKey) PrivateJWK() map[string]any {
	j, _ := jwk.Import(k.priv)
	b, _ := json.Marshal(j)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// ProofHeader and ProofClaims are a correct proof's header and claims for
// a request, for a test to change before Sign.
func (k *DPoPKey) ProofHeader() map[string]any {
	return map[string]any{"typ": "dpop+jwt", "alg": k.Alg, "jwk": k.PublicJWK()}
}

// ProofClaims: jti, htm, htu, iat at now, ath of token when it is not
// empty, nonce when it is not empty.
func (k *DPoPKey) ProofClaims(method, htu, token, nonce string, now time.Time) map[string]any {
	c := map[string]any{"jti": randomID(), "htm": method, "htu": htu, "iat": now.Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	return c
}

// Proof is a correct proof for a request.
func (k *DPoPKey) Proof(method, htu, token, nonce string, now time.Time) string {
	p, err := k.Sign(k.ProofHeader(), k.ProofClaims(method, htu, token, nonce, now))
	if err != nil {
		panic(err) // only a key that cannot sign
	}
	return p
}

// Sign serializes header and claims as a compact JWS signed with the key
// by header's alg when it is the key's, else by the key's own alg (a
// signature that then does not verify under the header's alg).
func (k *DPoPKey) Sign(header, claims map[string]any) (string, error) {
	hb, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hb) + "." + enc(cb)
	alg, _ := header["alg"].(string)
	if alg != k.Alg {
		alg = k.Alg
	}
	sig, err := jwsbb.Sign(k.priv, alg, []byte(input), rand.Reader)
	if err != nil {
		return "", err
	}
	return input + "." + enc(sig), nil
}

// Bind makes claims a DPoP-bound token's (cnf.jkt, RFC 9449 §6.1).
func (k *DPoPKey) Bind(claims map[string]any) map[string]any {
	claims["cnf"] = map[string]any{"jkt": k.thumbprint}
	return claims
}

// KeycloakDPoP mints a Keycloak-shaped token bound to key, as Keycloak
// issues one to a client whose token request carried a DPoP proof.
func (i *Issuer) KeycloakDPoP(key *DPoPKey, user, audience string, scopes ...string) (string, error) {
	return i.Sign(key.Bind(i.KeycloakClaims(user, audience, scopes...)), SignOptions{})
}

// DPoPTransport is an http.RoundTripper that sends Token as a DPoP-bound
// token with a fresh proof of Key on every request, and answers a
// use_dpop_nonce refusal (RFC 9449 §9) by retrying once with the nonce
// the server sent, which it keeps for the next requests. Requests with a
// body must have GetBody set to be retried (http.NewRequest does that).
type DPoPTransport struct {
	Base  http.RoundTripper // default http.DefaultTransport
	Key   *DPoPKey
	Token func() string
	// HTU names the request's URI as the proof's htu; default the
	// request's URL without query and fragment.
	HTU func(*http.Request) string

	mu    sync.Mutex
	nonce string
	// Retries counts the use_dpop_nonce retries made.
	Retries int
}

// RoundTrip implements http.RoundTripper.
func (t *DPoPTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	send := func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		tok := t.Token()
		htu := *r.URL
		htu.RawQuery, htu.Fragment = "", ""
		u := htu.String()
		if t.HTU != nil {
			u = t.HTU(r)
		}
		t.mu.Lock()
		nonce := t.nonce
		t.mu.Unlock()
		r.Header.Set("Authorization", "DPoP "+tok)
		r.Header.Set("DPoP", t.Key.Proof(r.Method, u, tok, nonce, time.Now()))
		resp, err := base.RoundTrip(r)
		if err == nil {
			if n := resp.Header.Get("DPoP-Nonce"); n != "" {
				t.mu.Lock()
				t.nonce = n
				t.mu.Unlock()
			}
		}
		return resp, err
	}
	resp, err := send(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("DPoP-Nonce") == "" {
		return resp, err
	}
	retry := r
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return resp, nil
		}
		body, err := r.GetBody()
		if err != nil {
			return resp, nil
		}
		retry = r.Clone(r.Context())
		retry.Body = body
	}
	resp.Body.Close()
	t.mu.Lock()
	t.Retries++
	t.mu.Unlock()
	return send(retry)
}
