package oauthclient

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseProof checks a proof's signature with the key it carries and
// returns its header and claims.
func parseProof(t *testing.T, proof string) (header, claims map[string]any, jkt string) {
	t.Helper()
	parts := strings.Split(proof, ".")
	require.Len(t, parts, 3)
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(hb, &header))
	require.NoError(t, json.Unmarshal(cb, &claims))
	jb, _ := json.Marshal(header["jwk"])
	k, err := jwk.ParseKey(jb)
	require.NoError(t, err)
	var pub any
	require.NoError(t, jwk.Export(k, &pub))
	require.NoError(t, jwsbb.Verify(pub, "ES256", []byte(parts[0]+"."+parts[1]), sig), "the signature verifies with the proof's jwk")
	tp, err := k.Thumbprint(crypto.SHA256)
	require.NoError(t, err)
	return header, claims, base64.RawURLEncoding.EncodeToString(tp)
}

func TestDPoPProof(t *testing.T) {
	k, err := NewDPoPKey()
	require.NoError(t, err)
	u, _ := url.Parse("https://mcp.example.com/mcp?x=1#frag")
	p, err := k.Proof("POST", u, "tok", "n1")
	require.NoError(t, err)
	h, c, jkt := parseProof(t, p)
	assert.Equal(t, "dpop+jwt", h["typ"])
	assert.Equal(t, "ES256", h["alg"])
	assert.NotContains(t, h["jwk"], "d", "the jwk is public only")
	assert.Equal(t, k.Thumbprint(), jkt, "Thumbprint is RFC 7638's")
	assert.Equal(t, "POST", c["htm"])
	assert.Equal(t, "https://mcp.example.com/mcp", c["htu"], "htu without query and fragment")
	sum := sha256.Sum256([]byte("tok"))
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), c["ath"])
	assert.Equal(t, "n1", c["nonce"])
	assert.NotZero(t, c["iat"])

	p2, err := k.Proof("POST", u, "", "")
	require.NoError(t, err)
	_, c2, _ := parseProof(t, p2)
	assert.NotContains(t, c2, "ath", "no ath without a token")
	assert.NotContains(t, c2, "nonce")
	assert.NotEqual(t, c["jti"], c2["jti"], "every proof has its own jti")
}

// TestDPoPKeyFile: the key is made once, 0600, beside the cache, and every
// process gets the same one, also when several make it at once.
func TestDPoPKeyFile(t *testing.T) {
	c := Cache{Path: filepath.Join(t.TempDir(), "mcpgate", "tokens.json")}
	var wg sync.WaitGroup
	keys := make([]*DPoPKey, 8)
	for i := range keys {
		wg.Go(func() {
			k, err := c.DPoPKey()
			assert.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		require.NotNil(t, k)
		assert.Equal(t, keys[0].Thumbprint(), k.Thumbprint())
	}
	p, _ := c.DPoPKeyPath()
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	again, err := c.DPoPKey()
	require.NoError(t, err)
	assert.Equal(t, keys[0].Thumbprint(), again.Thumbprint(), "reused")
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".tmp", "no temporary file left")
	}

	require.NoError(t, os.Chmod(p, 0o644))
	_, err = c.DPoPKey()
	require.Error(t, err, "a key others may read is refused")
	require.NoError(t, os.Chmod(p, 0o600))
	require.NoError(t, os.WriteFile(p, []byte("garbage"), 0o600))
	_, err = c.DPoPKey()
	require.ErrorContains(t, err, "not a PEM private key")
}

// TestDPoPTransport: bound tokens go as DPoP with a proof, retried once
// with the server's nonce; the nonce is kept for the next request; token
// endpoint requests get a proof without ath and a use_dpop_nonce retry;
// anything else passes unchanged.
func TestDPoPTransport(t *testing.T) {
	k, err := NewDPoPKey()
	require.NoError(t, err)
	type seen struct{ auth, proof, body string }
	var mu sync.Mutex
	var log []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		mu.Lock()
		log = append(log, seen{r.Header.Get("Authorization"), r.Header.Get("DPoP"), string(b[:n])})
		mu.Unlock()
		proof := r.Header.Get("DPoP")
		var nonce any
		if proof != "" {
			_, c, _ := parseProof(t, proof)
			nonce = c["nonce"]
		}
		switch {
		case proof == "":
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/token" && nonce != "as-nonce":
			w.Header().Set("DPoP-Nonce", "as-nonce")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"use_dpop_nonce"}`))
		case r.URL.Path == "/mcp" && nonce != "rs-nonce":
			w.Header().Set("DPoP-Nonce", "rs-nonce")
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	hc := DPoPClient(srv.Client(), k, srv.URL+"/token", func(tok string) bool { return tok == "bound" })
	post := func(path, auth string) int {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader("body"))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	take := func() []seen {
		mu.Lock()
		defer mu.Unlock()
		l := log
		log = nil
		return l
	}

	assert.Equal(t, 200, post("/mcp", "Bearer bound"))
	l := take()
	require.Len(t, l, 2, "refused for want of a nonce, then retried with it")
	for _, s := range l {
		assert.Equal(t, "DPoP bound", s.auth)
		assert.Equal(t, "body", s.body, "the retry carries the body again")
		_, c, _ := parseProof(t, s.proof)
		assert.NotEmpty(t, c["ath"])
	}
	assert.Equal(t, 200, post("/mcp", "Bearer bound"))
	require.Len(t, take(), 1, "the nonce was remembered")

	assert.Equal(t, 200, post("/token", ""))
	l = take()
	require.Len(t, l, 2)
	_, c, _ := parseProof(t, l[1].proof)
	assert.NotContains(t, c, "ath", "a token request's proof has no ath")
	assert.Equal(t, "", l[1].auth)

	assert.Equal(t, 200, post("/mcp", "Bearer plain"))
	assert.Equal(t, []seen{{"Bearer plain", "", "body"}}, take(), "an unbound token passes unchanged")
	assert.Equal(t, 200, post("/other", ""))
	assert.Equal(t, []seen{{"", "", "body"}}, take())
}
