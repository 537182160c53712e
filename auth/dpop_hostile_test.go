package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestDPoPHostileURIs: an htu is accepted only for the URI the request
// reached, compared after RFC 3986 normalization (case of scheme and
// host, a default port, escapes of unreserved characters) and nothing
// more: another path spelled with a dot segment, a trailing slash, a
// query, user info or another port is another URI; a lowercase htm is
// not the method.
func TestDPoPHostileURIs(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	for _, tc := range []struct {
		method, htu string
		want        int
	}{
		{"POST", "https://mcp.example.test/mcp", 204},
		{"POST", "HTTPS://MCP.EXAMPLE.TEST/mcp", 204},
		{"POST", "https://mcp.example.test:443/mcp", 204},
		{"POST", "https://mcp.example.test/%6d%63%70", 204},
		{"POST", "https://mcp.example.test/mcp/", 401},
		{"POST", "https://mcp.example.test/MCP", 401},
		{"POST", "https://mcp.example.test/x/../mcp", 401},
		{"POST", "https://mcp.example.test/./mcp", 401},
		{"POST", "https://mcp.example.test/mcp%2F", 401},
		{"POST", "https://mcp.example.test:8443/mcp", 401},
		{"POST", "https://mcp.example.test:0443/mcp", 401},
		{"POST", "http://mcp.example.test:443/mcp", 401},
		{"POST", "https://alice@mcp.example.test/mcp", 401},
		{"POST", "https://mcp.example.test/mcp?", 401},
		{"POST", "https://mcp.example.test.evil.test/mcp", 401},
		{"POST", "//mcp.example.test/mcp", 401},
		{"POST", "/mcp", 401},
		{"post", "https://mcp.example.test/mcp", 401},
		{"Post", "https://mcp.example.test/mcp", 401},
	} {
		r := proved(tok, key.Proof(tc.method, tc.htu, tok, "", e.clock.Now()))
		rec, _ := serve(e.a, r)
		assert.Equal(t, tc.want, rec.Code, "%s %s", tc.method, tc.htu)
	}
}

// TestDPoPHostileReplay: a jti once accepted is refused again for that key
// in any new proof around it (another htu spelling, another iat, another
// header encoding), whatever the token; a jti differing in case is another
// jti (RFC 7519 §4.1.7 compares it exactly) and passes once.
func TestDPoPHostileReplay(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	tok2 := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, "mcp:use"))
	now := e.clock.Now()
	send := func(token string, mod func(h, c map[string]any)) int {
		h, c := key.ProofHeader(), key.ProofClaims("POST", resource, token, "", e.clock.Now())
		c["jti"] = "the-jti"
		mod(h, c)
		p, err := key.Sign(h, c)
		require.NoError(t, err)
		rec, _ := serve(e.a, proved(token, p))
		return rec.Code
	}
	none := func(h, c map[string]any) {}
	require.Equal(t, 204, send(tok, none))
	for name, mod := range map[string]func(h, c map[string]any){
		"the same claims":     none,
		"another htu":         func(_, c map[string]any) { c["htu"] = "https://MCP.example.test:443/mcp" },
		"an older iat":        func(_, c map[string]any) { c["iat"] = now.Add(-30 * time.Second).Unix() },
		"a fractional iat":    func(_, c map[string]any) { c["iat"] = float64(now.Unix()) + 0.5 },
		"a header in caps":    func(h, _ map[string]any) { h["typ"] = "DPOP+JWT" },
		"a header with a kid": func(h, _ map[string]any) { h["kid"] = "k1" },
	} {
		assert.Equal(t, 401, send(tok, mod), name)
	}
	assert.Equal(t, 401, send(tok2, none), "another token of the same key")
	e.clock.Advance(20 * time.Second)
	assert.Equal(t, 401, send(tok, none), "later, within the proof lifetime")
	assert.Equal(t, 204, send(tok, func(_, c map[string]any) { c["jti"] = "THE-JTI" }), "another jti")
}

// TestDPoPReplayCacheFull: with every slot of the replay cache holding a
// live proof, a new proof is answered 503, never let through unchecked;
// once the remembered proofs are too old to pass, there is room again.
func TestDPoPReplayCacheFull(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.DPoP.ReplayCacheSize = 2 })
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	send := func() int {
		rec, _ := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now())))
		return rec.Code
	}
	require.Equal(t, 204, send())
	require.Equal(t, 204, send())
	first := key.Proof("POST", resource, tok, "", e.clock.Now())
	rec, _ := serve(e.a, proved(tok, first))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	rec, _ = serve(e.a, proved(tok, first))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "a refused proof is not remembered, nor let in")
	rec, _ = serve(e.a, request("Bearer "+tok))
	assert.Equal(t, 401, rec.Code, "nor the bound token as Bearer")
	e.clock.Advance(auth.DefaultProofLifetime + 2*time.Second)
	assert.Equal(t, 204, send())
}

// TestDPoPIatSkew: a proof made up to the leeway ahead of the clock
// passes, one further ahead does not; one exactly as old as the proof
// lifetime passes, one a second older does not.
func TestDPoPIatSkew(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	for d, want := range map[time.Duration]int{
		auth.DefaultLeeway:                       204,
		auth.DefaultLeeway + time.Second:         401,
		-auth.DefaultProofLifetime:               204,
		-auth.DefaultProofLifetime - time.Second: 401,
	} {
		rec, _ := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now().Add(d))))
		assert.Equal(t, want, rec.Code, "iat %s from now", d)
	}
}

// TestDPoPHostileKeys: the proof's jwk alone verifies it; an RSA jwk
// under an EC alg, an EC point off its curve, or a header that points at
// another key (x5c, jku, kid) never makes a proof by another key pass.
func TestDPoPHostileKeys(t *testing.T) {
	e := setup(t, nil)
	victim := authtest.MustDPoPKey(t, "ES256")
	attacker := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(victim, "alice", resource, full...))
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaJWK := map[string]any{"kty": "RSA", "e": "AQAB", "n": base64.RawURLEncoding.EncodeToString(rsaKey.N.Bytes())}
	offCurve := victim.PublicJWK()
	offCurve["y"] = base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for name, mod := range map[string]func(h map[string]any){
		"an RSA jwk under ES256":    func(h map[string]any) { h["jwk"] = rsaJWK },
		"the victim's jwk":          func(h map[string]any) { h["jwk"] = victim.PublicJWK() },
		"an EC point off the curve": func(h map[string]any) { h["jwk"] = offCurve },
		"the victim's jwk, jku to the attacker": func(h map[string]any) {
			h["jwk"], h["jku"] = victim.PublicJWK(), "https://evil.example.test/jwks"
		},
		"the victim's jwk, kid of the attacker": func(h map[string]any) {
			h["jwk"], h["kid"] = victim.PublicJWK(), attacker.Thumbprint()
		},
		"the victim's jwk, x5c": func(h map[string]any) { h["jwk"], h["x5c"] = victim.PublicJWK(), []string{"MIIB"} },
		"no jwk, a jku":         func(h map[string]any) { delete(h, "jwk"); h["jku"] = "https://evil.example.test/jwks" },
		"a jwk with x5c inside": func(h map[string]any) {
			j := attacker.PublicJWK()
			j["x5c"] = []string{"MIIB"}
			h["jwk"] = j
		},
	} {
		h, c := attacker.ProofHeader(), attacker.ProofClaims("POST", resource, tok, "", e.clock.Now())
		mod(h)
		p, err := attacker.Sign(h, c)
		require.NoError(t, err)
		rec, pr := serve(e.a, proved(tok, p))
		assert.Equal(t, 401, rec.Code, name)
		assert.Nil(t, pr, name)
	}
}

// TestDPoPHostileSchemes: two Authorization headers, a DPoP proof beside
// a Bearer token, and a bound token as Bearer are refused.
func TestDPoPHostileSchemes(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	unbound := mint(t)(e.iss.Keycloak("alice", resource, full...))
	proof := func(token string) string { return key.Proof("POST", resource, token, "", e.clock.Now()) }

	r := request("DPoP "+tok, "Bearer "+unbound)
	r.Header.Set("DPoP", proof(tok))
	rec, _ := serve(e.a, r)
	assert.Equal(t, 401, rec.Code, "two Authorization headers")

	r = request("Bearer " + tok)
	r.Header.Set("DPoP", proof(tok))
	rec, _ = serve(e.a, r)
	assert.Equal(t, 401, rec.Code, "a bound token as Bearer with a proof")

	r = request("bearer " + tok)
	rec, _ = serve(e.a, r)
	assert.Equal(t, 401, rec.Code, "a bound token as bearer, lowercase")

	r = request("dpop " + tok)
	r.Header.Set("Dpop", proof(tok))
	rec, p := serve(e.a, r)
	require.Equal(t, 204, rec.Code, "the scheme is case-insensitive (RFC 9110 §11.1)")
	assert.Equal(t, key.Thumbprint(), p.KeyThumbprint)
}

// TestDPoPCachedPrincipalRace: requests with one cached bound token, some
// with a proof and some as Bearer, at once: the binding check of one never
// lets another through, nor races on the cached principal.
func TestDPoPCachedPrincipalRace(t *testing.T) {
	e := setup(t, nil)
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	rec, _ := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now())))
	require.Equal(t, 204, rec.Code)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 20 {
				rec, p := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now())))
				if assert.Equal(t, 204, rec.Code) {
					assert.Equal(t, key.Thumbprint(), p.KeyThumbprint)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				rec, _ := serve(e.a, request("Bearer "+tok))
				assert.Equal(t, 401, rec.Code)
			}
		}()
	}
	wg.Wait()
}

// TestDPoPIntrospectedBoundToken: an opaque token whose introspection
// answer carries cnf.jkt is bound as a JWT is: refused as Bearer, with no
// proof or another key's, on the first request and from the cache alike.
func TestDPoPIntrospectedBoundToken(t *testing.T) {
	e := introEnv(t, nil)
	key, other := authtest.MustDPoPKey(t, "ES256"), authtest.MustDPoPKey(t, "ES256")
	tok := e.iss.Opaque(key.Bind(e.iss.KeycloakClaims("alice", resource, full...)))
	for round := range 2 {
		for name, r := range map[string]*http.Request{
			"as Bearer":   request("Bearer " + tok),
			"no proof":    request("DPoP " + tok),
			"another key": proved(tok, other.Proof("POST", resource, tok, "", e.clock.Now())),
		} {
			rec, _ := serve(e.a, r)
			assert.Equal(t, 401, rec.Code, "%s, round %d", name, round)
		}
		rec, p := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", e.clock.Now())))
		require.Equal(t, 204, rec.Code, rec.Body.String())
		assert.Equal(t, key.Thumbprint(), p.KeyThumbprint)
	}
}

// TestDPoPReplayCacheNotBlockedByAFutureProof: a proof made up to the
// leeway ahead of the clock stays remembered longer than those after it;
// once those have expired they make room, though it came first: the cache
// is full only of proofs still inside their lifetime, as documented, and
// one user's early iat does not get everyone else's proofs a 503.
func TestDPoPReplayCacheNotBlockedByAFutureProof(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.DPoP.ReplayCacheSize = 2 })
	key := authtest.MustDPoPKey(t, "ES256")
	tok := mint(t)(e.iss.KeycloakDPoP(key, "alice", resource, full...))
	send := func(iat time.Time) int {
		rec, _ := serve(e.a, proved(tok, key.Proof("POST", resource, tok, "", iat)))
		return rec.Code
	}
	require.Equal(t, 204, send(e.clock.Now().Add(auth.DefaultLeeway)), "a proof made ahead of the clock")
	require.Equal(t, 204, send(e.clock.Now()))
	e.clock.Advance(auth.DefaultProofLifetime + 2*time.Second)
	assert.Equal(t, 204, send(e.clock.Now()), "the second proof has expired: its slot is free")
	assert.Equal(t, http.StatusServiceUnavailable, send(e.clock.Now()), "now full of live proofs")
}
