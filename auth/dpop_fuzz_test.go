package auth

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// FuzzDPoPProof feeds arbitrary DPoP headers to the proof checks: they
// must never panic, every refusal must be invalid_dpop_proof, and a proof
// they accept must be one a careful reader accepts too: three base64url
// parts, typ dpop+jwt, an allowed alg, a jwk whose RFC 7638 thumbprint
// (computed by jwx from the header as decoded) is the one returned, htm
// POST and the ath of the token.
func FuzzDPoPProof(f *testing.F) {
	const token = "the.access.token"
	const htu = "https://mcp.example.test/mcp"
	now := time.Unix(1_900_000_000, 0)
	for _, alg := range []string{"ES256", "RS256", "EdDSA"} {
		key, err := authtest.NewDPoPKey(alg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(key.Proof(http.MethodPost, htu, token, "", now))
		h, c := key.ProofHeader(), key.ProofClaims(http.MethodPost, htu, token, "", now)
		h["jwk"] = key.PrivateJWK()
		p, _ := key.Sign(h, c)
		f.Add(p)
	}
	for _, seed := range []string{"", "a.b.c", "..", "e30.e30.", strings.Repeat("A", 100)} {
		f.Add(seed)
	}
	o, err := Options{Issuer: "https://kc.example.test", Resource: htu}.normalize()
	if err != nil {
		f.Fatal(err)
	}
	d, err := newDPoPState(&o)
	if err != nil {
		f.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, htu, nil)
	sum := sha256.Sum256([]byte(token))
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := d.verifyProof(r, raw, &sum, now)
		if err != nil {
			if !errors.Is(err, ErrInvalidDPoPProof) {
				t.Fatalf("got %v, want an invalid_dpop_proof kind", err)
			}
			return
		}
		parts := strings.Split(raw, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted %d parts", len(parts))
		}
		hb, err := base64.RawURLEncoding.DecodeString(parts[0])
		if err != nil {
			t.Fatalf("accepted a header that is not base64url: %v", err)
		}
		h, err := decodeProofHeader(hb)
		if err != nil || !strings.EqualFold(h.Typ, "dpop+jwt") || !d.algs[h.Alg] {
			t.Fatalf("accepted header %s", hb)
		}
		k, err := jwk.ParseKey(h.JWK)
		if err != nil {
			t.Fatalf("accepted a jwk jwx cannot read: %v", err)
		}
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil || base64.RawURLEncoding.EncodeToString(tp) != p.jkt {
			t.Fatalf("thumbprint %s, want the jwk's", p.jkt)
		}
		if p.jti == "" {
			t.Fatal("accepted a proof without jti")
		}
	})
}
