package authtest

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// The token endpoint's DPoP half (RFC 9449 §5), as Keycloak does it: a
// token request carrying a valid proof gets a token bound to the proof's
// key (cnf.jkt, token_type DPoP), and so does every refresh of it, which
// must carry a proof of the same key. With DPoPNonce set, a proof without
// that nonce is answered use_dpop_nonce (§8).

// dpopAlgs are the proof algorithms the token endpoint accepts.
var dpopAlgs = []string{"ES256", "ES384", "RS256", "PS256", "EdDSA"}

// TokenProofs counts token requests that carried a valid DPoP proof.
func (i *Issuer) TokenProofs() int { return int(i.tokenProofs.Load()) }

// tokenProof checks the request's DPoP proof, if any, and returns the
// thumbprint of its key ("" without one). ok false means the request was
// answered with an error.
func (i *Issuer) tokenProof(w http.ResponseWriter, r *http.Request) (jkt string, ok bool) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) == 0 {
		return "", true
	}
	bad := func() (string, bool) {
		oauthError(w, http.StatusBadRequest, "invalid_dpop_proof")
		return "", false
	}
	if len(proofs) != 1 {
		return bad()
	}
	raw := proofs[0]
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return bad()
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return bad()
	}
	var h struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}
	var c struct {
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		JTI   string `json:"jti"`
		Nonce string `json:"nonce"`
	}
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil || h.Typ != "dpop+jwt" || !slices.Contains(dpopAlgs, h.Alg) {
		return bad()
	}
	k, err := jwk.ParseKey(h.JWK)
	if err != nil {
		return bad()
	}
	if private, err := jwk.IsPrivateKey(k); err != nil || private {
		return bad()
	}
	var pub any
	if err := jwk.Export(k, &pub); err != nil {
		return bad()
	}
	if err := jwsbb.Verify(pub, h.Alg, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return bad()
	}
	now := time.Now()
	if c.HTM != http.MethodPost || c.HTU != i.URL+"/token" || c.JTI == "" ||
		c.IAT < now.Add(-time.Minute).Unix() || c.IAT > now.Add(time.Minute).Unix() {
		return bad()
	}
	if i.DPoPNonce != "" && c.Nonce != i.DPoPNonce {
		w.Header().Set("DPoP-Nonce", i.DPoPNonce)
		oauthError(w, http.StatusBadRequest, "use_dpop_nonce")
		return "", false
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return bad()
	}
	i.tokenProofs.Add(1)
	return base64.RawURLEncoding.EncodeToString(tp), true
}
