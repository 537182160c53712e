package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

const (
	dpopScope = `scope="mcp:use mcp:write profile offline_access"`
	dpopMeta  = `resource_metadata="` + wantMetadataURL + `"`
	dpopAlgs  = `algs="RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA"`
)

// plainChallenges are the challenges of a 401 without an error: Bearer,
// and DPoP with the proof algorithms beside it (RFC 9449 §7.1).
var plainChallenges = []string{
	`Bearer ` + dpopMeta + `, ` + dpopScope,
	`DPoP ` + dpopAlgs + `, ` + dpopMeta + `, ` + dpopScope,
}

// dpopRefusal is the challenge pair for a DPoP-scheme request refused
// with code: the error in the DPoP challenge.
func dpopRefusal(code, desc string) []string {
	return []string{
		`Bearer ` + dpopMeta + `, ` + dpopScope,
		`DPoP error="` + code + `", error_description="` + desc + `", ` + dpopAlgs + `, ` + dpopMeta + `, ` + dpopScope,
	}
}

// bearerRefusal is the pair for a Bearer-scheme request refused with code.
func bearerRefusal(code, desc string) []string {
	return []string{
		`Bearer error="` + code + `", error_description="` + desc + `", ` + dpopMeta + `, ` + dpopScope,
		`DPoP ` + dpopAlgs + `, ` + dpopMeta + `, ` + dpopScope,
	}
}

// serve runs r through a's middleware to a handler that answers 204 and
// records the principal.
func serve(a *auth.Authenticator, r *http.Request) (*httptest.ResponseRecorder, *auth.Principal) {
	var p *auth.Principal
	rec := httptest.NewRecorder()
	a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p = auth.PrincipalFrom(r.Context())
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(rec, r)
	return rec, p
}

// proved is a POST to resource with tok as a DPoP-bound token and proof.
func proved(tok, proof string) *http.Request {
	r := request("DPoP " + tok)
	r.Header.Set("DPoP", proof)
	return r
}

// TestDPoPProofChecks: one failing case per RFC 9449 §4.3 check (and
// §7.1's binding), each with its exact status and challenges; the valid
// proof beside them passes.
func TestDPoPProofChecks(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	other := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	otherTok := mint(t)(e.iss.KeycloakDPoP(other, "alice", resource, full...))
	unbound := mint(t)(e.iss.Keycloak("alice", resource, full...))
	now := e.clock.Now()

	// proof signs a proof for POST resource with tok, changed by mod.
	proof := func(mod func(h, c map[string]any)) string {
		h, c := key.ProofHeader(), key.ProofClaims(http.MethodPost, resource, tok, "", now)
		if mod != nil {
			mod(h, c)
		}
		p, err := key.Sign(h, c)
		require.NoError(t, err)
		return p
	}
	withProofs := func(authz string, proofs ...string) *http.Request {
		r := request(authz)
		for _, p := range proofs {
			r.Header.Add("DPoP", p)
		}
		return r
	}
	forged := proof(nil)
	forged = forged[:strings.LastIndexByte(forged, '.')+1] + strings.Repeat("A", 86)
	replayed := proof(nil)

	invalid := func(desc string) []string { return dpopRefusal("invalid_dpop_proof", desc) }
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	weakRSA := map[string]any{"kty": "RSA", "e": "AQAB", "n": base64.RawURLEncoding.EncodeToString(weak.N.Bytes())}
	for _, tc := range []struct {
		name       string
		r          *http.Request
		status     int
		challenges []string
	}{
		{"a valid proof", withProofs("DPoP "+tok, proof(nil)), 204, nil},
		{"typ is JWT", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { h["typ"] = "JWT" })), 401,
			invalid("DPoP proof typ header is not dpop+jwt")},
		{"typ is absent", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { delete(h, "typ") })), 401,
			invalid("DPoP proof typ header is not dpop+jwt")},
		{"alg none", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { h["alg"] = "none" })), 401,
			invalid("DPoP proof algorithm is not an allowed asymmetric algorithm")},
		{"alg HS256", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { h["alg"] = "HS256" })), 401,
			invalid("DPoP proof algorithm is not an allowed asymmetric algorithm")},
		{"a private jwk", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { h["jwk"] = key.PrivateJWK() })), 401,
			invalid("DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")},
		{"no jwk", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { delete(h, "jwk") })), 401,
			invalid("DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")},
		{"a jwk of another curve than alg", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) {
			h["jwk"] = authtest.MustDPoPKey(t, "ES384").PublicJWK()
		})), 401, invalid("DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")},
		{"a symmetric jwk", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) {
			h["jwk"] = map[string]any{"kty": "oct", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}
		})), 401, invalid("DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")},
		{"an RSA jwk of 1024 bits", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) {
			h["alg"], h["jwk"] = "RS256", weakRSA
		})), 401, invalid("DPoP proof jwk is missing, not a public key, or not of the kind its algorithm needs")},
		{"a bad signature", withProofs("DPoP "+tok, forged), 401,
			invalid("DPoP proof signature does not verify with its jwk")},
		{"signed by another key than its jwk", withProofs("DPoP "+tok, proof(func(h, _ map[string]any) { h["jwk"] = other.PublicJWK() })), 401,
			invalid("DPoP proof signature does not verify with its jwk")},
		{"htm is GET", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["htm"] = "GET" })), 401,
			invalid("DPoP proof htm is not the request's method")},
		{"htu with a query", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["htu"] = resource + "?a=b" })), 401,
			invalid("DPoP proof htu is not the request's URI (scheme, host and path as the server's public URL names them, without query or fragment)")},
		{"htu of another host", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["htu"] = "https://evil.example.test/mcp" })), 401,
			invalid("DPoP proof htu is not the request's URI (scheme, host and path as the server's public URL names them, without query or fragment)")},
		{"htu of another scheme", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["htu"] = "http://mcp.example.test/mcp" })), 401,
			invalid("DPoP proof htu is not the request's URI (scheme, host and path as the server's public URL names them, without query or fragment)")},
		{"htu of another path", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["htu"] = "https://mcp.example.test/mcp/x" })), 401,
			invalid("DPoP proof htu is not the request's URI (scheme, host and path as the server's public URL names them, without query or fragment)")},
		{"a stale iat", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["iat"] = now.Add(-61 * time.Second).Unix() })), 401,
			invalid("DPoP proof iat is too old; make a new proof for each request")},
		{"a future iat", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["iat"] = now.Add(2 * time.Minute).Unix() })), 401,
			invalid("DPoP proof iat is in the future")},
		{"no jti", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { delete(c, "jti") })), 401,
			invalid("DPoP proof claims jti, htm, htu and iat are required, as strings (iat a number)")},
		{"a replayed jti (first use)", withProofs("DPoP "+tok, replayed), 204, nil},
		{"a replayed jti", withProofs("DPoP "+tok, replayed), 401,
			invalid("DPoP proof was used before (jti); make a new proof for each request")},
		{"no ath", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { delete(c, "ath") })), 401,
			invalid("DPoP proof ath is missing or is not the hash of the access token")},
		{"a wrong ath", withProofs("DPoP "+tok, proof(func(_, c map[string]any) { c["ath"] = "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU" })), 401,
			invalid("DPoP proof ath is missing or is not the hash of the access token")},
		{"cnf.jkt of another key", withProofs("DPoP "+otherTok, proof(func(_, c map[string]any) {
			c["ath"] = key.ProofClaims("POST", resource, otherTok, "", now)["ath"]
		})), 401, dpopRefusal("invalid_token", "token is bound to another key than the DPoP proof's (cnf.jkt is not the jwk's thumbprint)")},
		{"two DPoP headers", withProofs("DPoP "+tok, proof(nil), proof(nil)), 401,
			invalid("more than one DPoP header")},
		{"no DPoP header", withProofs("DPoP " + tok), 401,
			invalid("the DPoP scheme needs a DPoP header with a proof")},
		{"a proof on a Bearer-scheme request", withProofs("Bearer "+unbound, proof(nil)), 401,
			bearerRefusal("invalid_request", "a DPoP proof came with the Bearer scheme; a DPoP-bound token goes in Authorization: DPoP")},
		{"a bound token as Bearer", withProofs("Bearer " + tok), 401,
			bearerRefusal("invalid_token", "token is bound to a DPoP key (cnf.jkt, RFC 9449): send it as Authorization: DPoP with a DPoP proof")},
		{"an unbound token with a proof", withProofs("DPoP "+unbound, proof(func(_, c map[string]any) {
			c["ath"] = key.ProofClaims("POST", resource, unbound, "", now)["ath"]
		})), 401, dpopRefusal("invalid_token", "token is not bound to a DPoP key (no cnf.jkt); send it with the Bearer scheme and no proof")},
		{"a proof that is not a JWS", withProofs("DPoP "+tok, "a.b"), 401,
			invalid("DPoP proof is not a well-formed JWS compact serialization with a JSON header and claims")},
		{"no token at all", withProofs(""), 401, plainChallenges},
		{"an unbound Bearer token", withProofs("Bearer " + unbound), 204, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.Header.Get("Authorization") == "" {
				tc.r.Header.Del("Authorization")
			}
			isDPoP := strings.HasPrefix(tc.r.Header.Get("Authorization"), "DPoP")
			rec, p := serve(e.a, tc.r)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.status != 204 {
				assert.Equal(t, tc.challenges, rec.Header().Values("WWW-Authenticate"))
				assert.Nil(t, p)
				return
			}
			require.NotNil(t, p)
			want := ""
			if isDPoP {
				want = key.Thumbprint()
			}
			assert.Equal(t, want, p.KeyThumbprint)
		})
	}
}

// TestDPoPCacheNeverSkipsTheProof: a token verified once (and cached) still
// needs a valid proof on every later request; so does a proof whose
// header (its key) was read before: only the header's reading is kept,
// never a verdict on a signature or a claim.
func TestDPoPCacheNeverSkipsTheProof(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	first := key.Proof("POST", resource, tok, "", e.clock.Now())
	rec, _ := serve(e.a, proved(tok, first))
	require.Equal(t, 204, rec.Code)
	fresh := key.Proof("POST", resource, tok, "", e.clock.Now())
	forged := fresh[:strings.LastIndexByte(fresh, '.')+1] + strings.Repeat("A", 86)
	swapped := first[:strings.LastIndexByte(first, '.')] + fresh[strings.LastIndexByte(fresh, '.'):]
	for name, r := range map[string]*http.Request{
		"the same header, a forged signature":  proved(tok, forged),
		"the same header, another's signature": proved(tok, swapped),
		"the same header, a stale proof":       proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now().Add(-time.Hour))),
		"no proof":                             request("DPoP " + tok),
		"as Bearer":                            request("Bearer " + tok),
		"another key":                          proved(tok, authtest.MustDPoPKey(t, "ES256").Proof("POST", resource, tok, "", e.clock.Now())),
		"the same proof":                       proved(tok, first),
		"a proof for a GET":                    proved(tok, key.Proof("GET", resource, tok, "", e.clock.Now())),
	} {
		rec, _ := serve(e.a, r)
		assert.Equal(t, 401, rec.Code, name)
	}
}

// TestDPoPKeyAlgorithms: proofs by every algorithm of the allow-list, the
// key's thumbprint as RFC 7638 makes it.
func TestDPoPKeyAlgorithms(t *testing.T) {
	e := setup(t, nil)
	for _, alg := range auth.DPoPAlgorithms() {
		t.Run(alg, func(t *testing.T) {
			key := authtest.MustDPoPKey(t, alg)
			tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
			r := proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
			rec, p := serve(e.a, r)
			require.Equal(t, 204, rec.Code, rec.Body.String())
			assert.Equal(t, key.Thumbprint(), p.KeyThumbprint)
		})
	}
}

// TestDPoPRequired: only DPoP; a Bearer token, even unbound, is refused
// with a DPoP-only challenge, and the metadata says so.
func TestDPoPRequired(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.DPoP.Mode = auth.DPoPRequired })
	unbound := mint(t)(e.iss.Keycloak("alice", resource, full...))
	rec, _ := serve(e.a, request("Bearer "+unbound))
	assert.Equal(t, 401, rec.Code)
	assert.Equal(t, []string{`DPoP error="invalid_token", error_description="this resource accepts only DPoP-bound tokens (RFC 9449): send Authorization: DPoP with a DPoP proof", ` +
		dpopAlgs + `, ` + dpopMeta + `, ` + dpopScope}, rec.Header().Values("WWW-Authenticate"))
	rec, _ = serve(e.a, request())
	assert.Equal(t, []string{`DPoP ` + dpopAlgs + `, ` + dpopMeta + `, ` + dpopScope}, rec.Header().Values("WWW-Authenticate"))

	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	r := proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
	rec, _ = serve(e.a, r)
	assert.Equal(t, 204, rec.Code)

	rec = httptest.NewRecorder()
	e.a.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	assert.Equal(t, true, doc["dpop_bound_access_tokens_required"])
	assert.Len(t, doc["dpop_signing_alg_values_supported"], 10)
}

// TestDPoPOff: the resource of old: the DPoP scheme counts as no
// credentials, a bound token is refused, no DPoP challenge or metadata.
func TestDPoPOff(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.DPoP.Mode = auth.DPoPOff })
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	r := proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
	rec, _ := serve(e.a, r)
	assert.Equal(t, 401, rec.Code)
	assert.Equal(t, []string{`Bearer ` + dpopMeta + `, ` + dpopScope}, rec.Header().Values("WWW-Authenticate"))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	assert.ErrorIs(t, err, auth.ErrDPoPBound)

	rec = httptest.NewRecorder()
	e.a.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	assert.NotContains(t, rec.Body.String(), "dpop")
}

// TestDPoPNonce: with nonces on, the first proof gets use_dpop_nonce and a
// DPoP-Nonce; the retry with it passes; the nonce goes stale after its
// lifetime, and a fresh one comes with a success past half of it.
func TestDPoPNonce(t *testing.T) {
	e := setup(t, func(o *auth.Options) {
		o.DPoP.Nonce = true
		o.DPoP.NonceLifetime = 4 * time.Minute
	})
	// Nonces change every two minutes: start at a change, so the steps
	// below fall where they say.
	now := e.clock.Now()
	e.clock.Advance(now.Truncate(2 * time.Minute).Add(2 * time.Minute).Sub(now))
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	send := func(nonce string) *httptest.ResponseRecorder {
		r := proved(tok, key.Proof("POST", resource, tok, nonce, e.clock.Now()))
		rec, _ := serve(e.a, r)
		return rec
	}
	rec := send("")
	require.Equal(t, 401, rec.Code)
	assert.Equal(t, dpopRefusal("use_dpop_nonce", "DPoP proof must carry the nonce in the DPoP-Nonce header"), rec.Header().Values("WWW-Authenticate"))
	nonce := rec.Header().Get("DPoP-Nonce")
	require.NotEmpty(t, nonce)

	rec = send(nonce)
	require.Equal(t, 204, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Header().Get("DPoP-Nonce"), "the nonce is current")

	assert.Equal(t, 401, send("bm90IGEgbm9uY2U").Code, "a nonce this server never made")

	e.clock.Advance(2*time.Minute + time.Second)
	rec = send(nonce)
	require.Equal(t, 204, rec.Code, "within its lifetime")
	fresh := rec.Header().Get("DPoP-Nonce")
	require.NotEmpty(t, fresh, "past half its lifetime, a fresh nonce comes with the answer")
	assert.NotEqual(t, nonce, fresh)

	e.clock.Advance(2 * time.Minute)
	rec = send(nonce)
	assert.Equal(t, 401, rec.Code, "past its lifetime")
	assert.Equal(t, 204, send(fresh).Code)
}

// TestDPoPNonceSharedSecret: replicas with one nonce secret accept each
// other's nonces; without it, each only its own.
func TestDPoPNonceSharedSecret(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	iss := authtest.New(t)
	c := newClock()
	iss.Now = c.Now
	make := func(secret []byte) *auth.Authenticator {
		o := baseOptions(iss, c)
		o.DPoP.Nonce, o.DPoP.NonceSecret = true, secret
		a, err := auth.New(t.Context(), o)
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		waitReady(t, a)
		return a
	}
	a1, a2, lone := make(secret), make(secret), make(nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(iss.KeycloakDPoP(key, "alice", resource, full...))
	send := func(a *auth.Authenticator, nonce string) *httptest.ResponseRecorder {
		r := proved(tok, key.Proof("POST", resource, tok, nonce, c.Now()))
		rec, _ := serve(a, r)
		return rec
	}
	nonce := send(a1, "").Header().Get("DPoP-Nonce")
	require.NotEmpty(t, nonce)
	assert.Equal(t, 204, send(a2, nonce).Code)
	assert.Equal(t, 401, send(lone, nonce).Code)
}

// TestDPoPBehindAProxyPrefix: htu names the public URL's path prefix,
// which the proxy strips before the request reaches the gateway.
func TestDPoPBehindAProxyPrefix(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.DPoP.PublicURL = "https://mcp.example.test/team-a/" })
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	for htu, want := range map[string]int{
		"https://mcp.example.test/team-a/mcp":      204,
		"https://MCP.example.test:443/team-a/mcp":  204,
		"https://mcp.example.test/team-a/%6Dcp":    204,
		"https://mcp.example.test/mcp":             401,
		"https://mcp.example.test/team-b/mcp":      401,
		"https://mcp.example.test/team-a/mcp#frag": 401,
	} {
		r := proved(tok, key.Proof("POST", htu, tok, "", e.clock.Now()))
		rec, _ := serve(e.a, r)
		assert.Equal(t, want, rec.Code, htu)
	}
}

// TestDPoPBoundTokenVerifyToken: VerifyToken has no request to prove a
// key with, so a bound token is refused.
func TestDPoPBoundTokenVerifyToken(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	_, err := e.a.VerifyToken(t.Context(), mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...)))
	assert.ErrorIs(t, err, auth.ErrDPoPAsBearer)
}

// TestDPoPBadConfirmation: a cnf.jkt that is no thumbprint, or a cnf with
// another method beside jkt, refuses the token.
func TestDPoPBadConfirmation(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	for name, cnf := range map[string]any{
		"jkt not a thumbprint": map[string]any{"jkt": "x"},
		"jkt a number":         map[string]any{"jkt": 7},
		"jkt and a kid":        map[string]any{"jkt": key.Thumbprint(), "kid": "k"},
	} {
		c := e.iss.KeycloakClaims("alice", resource, full...)
		c["cnf"] = cnf
		tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
		r := proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
		rec, _ := serve(e.a, r)
		assert.Equal(t, 401, rec.Code, name)
	}
}

// BenchmarkDPoPAuthenticate is one request's token and proof check, the
// token cached: what a DPoP call costs beyond a Bearer one (the "bearer"
// case, the same token check without a proof). "p256-verify" is the
// ECDSA verification alone, in the same run: the floor of the difference.
func BenchmarkDPoPAuthenticate(b *testing.B) {
	e := setup(b, nil)
	key := authtest.MustDPoPKey(b, "ES256")
	tok := mint(b)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	bearer := mint(b)(e.iss.Keycloak("alice", resource, full...))
	b.Run("bearer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.a.Authenticate(request("Bearer " + bearer)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("p256-verify", func(b *testing.B) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(b, err)
		sum := sha256.Sum256([]byte(tok))
		sig, err := ecdsa.SignASN1(rand.Reader, k, sum[:])
		require.NoError(b, err)
		for b.Loop() {
			if !ecdsa.VerifyASN1(&k.PublicKey, sum[:], sig) {
				b.Fatal("no")
			}
		}
	})
	b.Run("dpop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now()))
			b.StartTimer()
			if _, err := e.a.Authenticate(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
