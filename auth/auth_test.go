package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

var full = []string{"mcp:use", "mcp:write"}

func TestAuthenticateRejects(t *testing.T) {
	e := setup(t, nil)
	iss := e.iss
	other := authtest.New(t) // a second issuer: same kid names, other keys
	rsaKid, _ := iss.KeyIDs()

	valid := func() map[string]any { return iss.KeycloakClaims("alice", resource, full...) }
	sign := func(c map[string]any, o authtest.SignOptions) string {
		return mint(t)(iss.Sign(c, o))
	}
	with := func(k string, v any) string {
		c := valid()
		c[k] = v
		return sign(c, authtest.SignOptions{})
	}
	without := func(k string) string {
		c := valid()
		delete(c, k)
		return sign(c, authtest.SignOptions{})
	}
	now := e.clock.Now()
	good := sign(valid(), authtest.SignOptions{})

	cases := []struct {
		name   string
		req    func() *http.Request
		want   error
		status int
	}{
		{"no token", func() *http.Request { return request() }, auth.ErrNoToken, 401},
		{"basic scheme", func() *http.Request { return request("Basic YWxpY2U6c2VjcmV0") }, auth.ErrNoToken, 401},
		{"empty bearer", func() *http.Request { return request("Bearer ") }, auth.ErrMalformed, 401},
		{"garbage", func() *http.Request { return request("Bearer probe-invalid-k3j4") }, auth.ErrMalformed, 401},
		{"alg none", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{Alg: "none"}))
		}, auth.ErrAlgorithm, 401},
		{"HMAC signed with the RSA public key", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{Alg: "HS256", HMACKey: iss.RSAPublicKeyPEM(), KeyID: rsaKid}))
		}, auth.ErrAlgorithm, 401},
		{"unknown kid", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{KeyID: "no-such-key"}))
		}, auth.ErrUnknownKey, 401},
		{"wrong iss", func() *http.Request { return request("Bearer " + with("iss", iss.URL+"/")) }, auth.ErrIssuer, 401},
		{"wrong aud", func() *http.Request { return request("Bearer " + with("aud", "https://other.example/mcp")) }, auth.ErrAudience, 401},
		{"aud of the wrong type", func() *http.Request { return request("Bearer " + with("aud", 42)) }, auth.ErrClaims, 401},
		{"expired", func() *http.Request { return request("Bearer " + with("exp", now.Add(-time.Second).Unix())) }, auth.ErrExpired, 401},
		{"exp is now", func() *http.Request { return request("Bearer " + with("exp", now.Unix())) }, auth.ErrExpired, 401},
		{"nbf in the future", func() *http.Request { return request("Bearer " + with("nbf", now.Add(2*time.Minute).Unix())) }, auth.ErrNotYetValid, 401},
		{"iat in the future", func() *http.Request { return request("Bearer " + with("iat", now.Add(2*time.Minute).Unix())) }, auth.ErrIssuedInFuture, 401},
		{"no exp", func() *http.Request { return request("Bearer " + without("exp")) }, auth.ErrNoExpiry, 401},
		{"no sub", func() *http.Request { return request("Bearer " + without("sub")) }, auth.ErrNoSubject, 401},
		{"no user claim", func() *http.Request { return request("Bearer " + without("preferred_username")) }, auth.ErrUserID, 401},
		{"user id like an option", func() *http.Request { return request("Bearer " + with("preferred_username", "-rf")) }, auth.ErrUserID, 401},
		{"user id with a slash", func() *http.Request { return request("Bearer " + with("preferred_username", "../etc")) }, auth.ErrUserID, 401},
		{"bad signature", func() *http.Request {
			h, rest, _ := strings.Cut(good, ".")
			p, s, _ := strings.Cut(rest, ".")
			b := []byte(s)
			if b[len(b)/2] == 'A' {
				b[len(b)/2] = 'B'
			} else {
				b[len(b)/2] = 'A'
			}
			return request("Bearer " + h + "." + p + "." + string(b))
		}, auth.ErrSignature, 401},
		{"payload swapped under a valid signature", func() *http.Request {
			h, rest, _ := strings.Cut(good, ".")
			_, s, _ := strings.Cut(rest, ".")
			other := sign(with2(valid(), "preferred_username", "mallory"), authtest.SignOptions{})
			_, orest, _ := strings.Cut(other, ".")
			op, _, _ := strings.Cut(orest, ".")
			return request("Bearer " + h + "." + op + "." + s)
		}, auth.ErrSignature, 401},
		{"signed by another issuer's key with our kid", func() *http.Request {
			return request("Bearer " + mint(t)(other.Sign(valid(), authtest.SignOptions{KeyID: rsaKid})))
		}, auth.ErrSignature, 401},
		{"oversized", func() *http.Request {
			return request("Bearer " + with("padding", strings.Repeat("x", auth.DefaultMaxTokenBytes)))
		}, auth.ErrTokenTooLarge, 401},
		{"token in the query string", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, resource+"?access_token="+url.QueryEscape(good), nil)
		}, auth.ErrTokenInQuery, 401},
		{"token in the query string and the header", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, resource+"?access_token="+url.QueryEscape(good), nil)
			r.Header.Set("Authorization", "Bearer "+good)
			return r
		}, auth.ErrTokenInQuery, 401},
		{"token in a form body", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader("access_token="+good))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			return r
		}, auth.ErrFormBody, 401},
		{"two Authorization headers", func() *http.Request { return request("Bearer "+good, "Bearer "+good) }, auth.ErrManyAuthorization, 401},
		{"algorithm other than the key's", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{Alg: "PS256"}))
		}, auth.ErrUnknownKey, 401},
		{"aud with a space is one audience", func() *http.Request { return request("Bearer " + with("aud", "x "+resource)) }, auth.ErrAudience, 401},
		{"scope of the wrong type", func() *http.Request { return request("Bearer " + with("scope", 7)) }, auth.ErrClaims, 401},
		{"wrong typ", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{Typ: "dpop+jwt"}))
		}, auth.ErrType, 401},
		{"id token typ", func() *http.Request {
			return request("Bearer " + sign(valid(), authtest.SignOptions{Typ: "id_token+jwt"}))
		}, auth.ErrType, 401},
		{"missing required scope", func() *http.Request {
			return request("Bearer " + mint(t)(iss.Keycloak("alice", resource, "profile", "mcp:write")))
		}, auth.ErrMissingScope, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.a.Authenticate(tc.req())
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
			if p != nil {
				t.Errorf("got principal %+v with an error, want nil", p)
			}
			ran := false
			next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })
			rec := httptest.NewRecorder()
			e.a.Middleware(next).ServeHTTP(rec, tc.req())
			if ran {
				t.Error("next handler ran for a refused request")
			}
			if rec.Code != tc.status {
				t.Errorf("got status %d, want %d", rec.Code, tc.status)
			}
			ch := rec.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, `resource_metadata="`) {
				t.Errorf("got challenge %q, want a Bearer challenge with resource_metadata", ch)
			}
			if strings.Contains(rec.Body.String(), "eyJ") || strings.Contains(ch, "eyJ") {
				t.Errorf("answer echoes token contents: %q / %q", ch, rec.Body.String())
			}
		})
	}
}

func with2(c map[string]any, k string, v any) map[string]any { c[k] = v; return c }

func TestAuthenticateAccepts(t *testing.T) {
	e := setup(t, nil)
	iss := e.iss
	rsaKid, ecKid := iss.KeyIDs()
	kc := mint(t)(iss.Keycloak("alice", resource, "mcp:use", "mcp:write", "profile"))

	t.Run("Keycloak shape", func(t *testing.T) {
		p, err := e.a.Authenticate(request("Bearer " + kc))
		require.NoError(t, err)
		claims := iss.KeycloakClaims("alice", resource)
		assert.Equal(t, iss.URL, p.Issuer)
		assert.Equal(t, claims["sub"], p.Subject)
		assert.Equal(t, "alice", p.UserID)
		assert.Equal(t, "mcp-client", p.ClientID)
		assert.Equal(t, []string{"mcp:use", "mcp:write", "profile"}, p.Scopes)
		assert.False(t, p.ReadOnly)
		assert.Equal(t, rsaKid, p.KeyID)
		assert.Len(t, p.TokenTag, 12)
		assert.Equal(t, e.clock.Now().Add(5*time.Minute), p.Expiry)
	})
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		t.Run("scheme "+scheme, func(t *testing.T) {
			_, err := e.a.Authenticate(request(scheme + " " + kc))
			require.NoError(t, err)
		})
	}
	t.Run("read-only without the write scope", func(t *testing.T) {
		p, err := e.a.Authenticate(request("Bearer " + mint(t)(iss.Keycloak("alice", resource, "mcp:use"))))
		require.NoError(t, err)
		assert.True(t, p.ReadOnly)
	})
	t.Run("audience array naming us among others", func(t *testing.T) {
		c := iss.KeycloakClaims("alice", resource, full...)
		c["aud"] = []string{"account", resource}
		_, err := e.a.Authenticate(request("Bearer " + mint(t)(iss.Sign(c, authtest.SignOptions{}))))
		require.NoError(t, err)
	})
	t.Run("nbf and iat within the leeway", func(t *testing.T) {
		c := iss.KeycloakClaims("alice", resource, full...)
		c["nbf"] = e.clock.Now().Add(30 * time.Second).Unix()
		c["iat"] = e.clock.Now().Add(30 * time.Second).Unix()
		_, err := e.a.Authenticate(request("Bearer " + mint(t)(iss.Sign(c, authtest.SignOptions{}))))
		require.NoError(t, err)
	})
	t.Run("no typ header", func(t *testing.T) {
		tok := mint(t)(iss.Sign(iss.KeycloakClaims("alice", resource, full...), authtest.SignOptions{NoTyp: true}))
		_, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
	})
	t.Run("token without kid", func(t *testing.T) {
		tok := mint(t)(iss.Sign(iss.KeycloakClaims("alice", resource, full...), authtest.SignOptions{KeyID: ""}))
		_, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
	})
	t.Run("scope as an array", func(t *testing.T) {
		c := iss.KeycloakClaims("alice", resource)
		c["scope"] = full
		p, err := e.a.Authenticate(request("Bearer " + mint(t)(iss.Sign(c, authtest.SignOptions{}))))
		require.NoError(t, err)
		assert.Equal(t, full, p.Scopes)
	})

	t.Run("Ory shape", func(t *testing.T) {
		o := setup(t, func(o *auth.Options) { o.UserClaim = "" })
		tok := mint(t)(o.iss.Ory("bob", resource, "mcp:use"))
		p, err := o.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		assert.Equal(t, "bob", p.UserID)
		assert.Equal(t, "bob", p.Subject)
		assert.Equal(t, "mcp-client", p.ClientID)
		assert.Equal(t, []string{"mcp:use"}, p.Scopes)
		assert.True(t, p.ReadOnly)
		_, ecKid2 := o.iss.KeyIDs()
		assert.Equal(t, ecKid2, p.KeyID)
	})
	t.Run("custom user claim", func(t *testing.T) {
		o := setup(t, func(o *auth.Options) { o.UserClaim = "uid" })
		c := o.iss.KeycloakClaims("alice", resource, full...)
		c["uid"] = "u12345"
		p, err := o.a.Authenticate(request("Bearer " + mint(t)(o.iss.Sign(c, authtest.SignOptions{}))))
		require.NoError(t, err)
		assert.Equal(t, "u12345", p.UserID)
		c["uid"] = 12345
		_, err = o.a.Authenticate(request("Bearer " + mint(t)(o.iss.Sign(c, authtest.SignOptions{}))))
		require.ErrorIs(t, err, auth.ErrUserID)
	})
	t.Run("scp as a string", func(t *testing.T) {
		c := iss.OryClaims("alice", resource)
		c["preferred_username"] = "alice"
		c["scp"] = "mcp:use mcp:write"
		tok := mint(t)(iss.Sign(c, authtest.SignOptions{Alg: "ES256", Typ: "at+jwt"}))
		p, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		assert.Equal(t, full, p.Scopes)
		assert.False(t, p.ReadOnly)
		assert.Equal(t, ecKid, p.KeyID)
	})
}

func TestRequireATJWT(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.RequireATJWT = true })
	for _, tc := range []struct {
		typ   string
		noTyp bool
		want  error
	}{
		{typ: "at+jwt"},
		{typ: "application/at+jwt"},
		{typ: "AT+JWT"},
		{typ: "JWT", want: auth.ErrType},
		{noTyp: true, want: auth.ErrType},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			tok := mint(t)(e.iss.Sign(e.iss.KeycloakClaims("alice", resource, full...), authtest.SignOptions{Typ: tc.typ, NoTyp: tc.noTyp}))
			_, err := e.a.Authenticate(request("Bearer " + tok))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestHMAC(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := setup(t, func(o *auth.Options) { o.HMACSecret = secret })
	rsaKid, _ := e.iss.KeyIDs()
	claims := e.iss.KeycloakClaims("alice", resource, full...)
	for _, tc := range []struct {
		name string
		o    authtest.SignOptions
		want error
	}{
		{"shared secret", authtest.SignOptions{Alg: "HS256", HMACKey: secret}, nil},
		{"shared secret HS512", authtest.SignOptions{Alg: "HS512", HMACKey: secret}, nil},
		// The confusion attack: the RSA public key as the HMAC secret, kid
		// naming the RSA key. Only the configured secret is ever tried.
		{"RSA public key as secret", authtest.SignOptions{Alg: "HS256", HMACKey: e.iss.RSAPublicKeyPEM(), KeyID: rsaKid}, auth.ErrSignature},
		{"RS256 still works", authtest.SignOptions{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Sign(claims, tc.o))))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMiddlewarePassesPrincipalAndStripsToken(t *testing.T) {
	e := setup(t, nil)
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	var got *auth.Principal
	var authz []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = auth.PrincipalFrom(r.Context())
		authz = r.Header.Values("Authorization")
		w.WriteHeader(http.StatusTeapot)
	})
	rec := httptest.NewRecorder()
	e.a.Middleware(next).ServeHTTP(rec, request("Bearer "+tok))
	require.Equal(t, http.StatusTeapot, rec.Code)
	require.NotNil(t, got)
	assert.Equal(t, "alice", got.UserID)
	assert.Empty(t, authz, "Authorization must not reach the next handler")
}

func TestValidUserID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"alice", true},
		{"alice.smith@example.com", true},
		{"a_b-c.9", true},
		{"f81d4fae-7dec-11d0-a765-00a0c91e6bf6", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"-rf", false},
		{"a b", false},
		{"a/b", false},
		{"a\x00b", false},
		{"zoë", false},
		{"$(id)", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if got := auth.ValidUserID(tc.id); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSupportedScopes(t *testing.T) {
	e := setup(t, func(o *auth.Options) {
		o.RequiredScopes = []string{"mcp:use", "mcp:write"}
		o.WriteScope = "mcp:write"
		o.ExtraScopes = []string{"profile", "mcp:use", "offline_access"}
	})
	want := []string{"mcp:use", "mcp:write", "profile", "offline_access"}
	if got := e.a.Supported(); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// BenchmarkAuthenticate is one request's token check: cold (the cache
// off: a full verification every time), miss (the cache on, two tokens
// taking turns in a one-entry cache, so every request verifies and
// inserts) and cached (a hit).
func BenchmarkAuthenticate(b *testing.B) {
	for _, bc := range []struct {
		name   string
		size   int
		tokens int
	}{{"cold", -1, 1}, {"miss", 1, 2}, {"cached", 0, 1}} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, func(o *auth.Options) { o.TokenCacheSize = bc.size })
			var reqs []*http.Request
			for range bc.tokens {
				reqs = append(reqs, request("Bearer "+mint(b)(e.iss.Keycloak("alice", resource, full...))))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := e.a.Authenticate(reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// TestLogs checks that refusals and acceptances are logged with the user,
// kid and token tag, and never with the token.
func TestLogs(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	e := setup(t, func(o *auth.Options) {
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	expired := e.iss.KeycloakClaims("alice", resource, full...)
	expired["exp"] = e.clock.Now().Add(-time.Hour).Unix()
	tokens := []string{
		mint(t)(e.iss.Sign(expired, authtest.SignOptions{})),
		mint(t)(e.iss.Keycloak("alice", resource, full...)),
	}
	for _, tok := range tokens {
		e.a.Authenticate(request("Bearer " + tok))
	}
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	rsaKid, _ := e.iss.KeyIDs()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	refused := lines[slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "token refused") })]
	accepted := lines[slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "token accepted") })]
	for _, want := range []string{`reason="token has expired"`, "user=alice", "client_id=mcp-client", "kid=" + rsaKid, "token="} {
		assert.Contains(t, refused, want)
		if want != `reason="token has expired"` {
			assert.Contains(t, accepted, want)
		}
	}
	for _, tok := range tokens {
		_, rest, _ := strings.Cut(tok, ".")
		if strings.Contains(logs, tok[:20]) || strings.Contains(logs, rest[:20]) {
			t.Errorf("log holds token contents:\n%s", logs)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestUnsupportedHeaders: a correctly signed token whose header asks for
// what this resource does not implement, a critical extension (RFC 7515
// §4.1.11) or an unencoded payload (RFC 7797 b64), is refused: ignoring
// either would read the token otherwise than its issuer meant.
func TestUnsupportedHeaders(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := setup(t, func(o *auth.Options) { o.HMACSecret = secret })
	payload, err := json.Marshal(e.iss.KeycloakClaims("alice", resource, full...))
	require.NoError(t, err)
	sign := func(hdr string) string {
		in := base64.RawURLEncoding.EncodeToString([]byte(hdr)) + "." + base64.RawURLEncoding.EncodeToString(payload)
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	_, err = e.a.Authenticate(request("Bearer " + sign(`{"alg":"HS256","typ":"JWT"}`)))
	require.NoError(t, err, "the same token without the header")
	for _, hdr := range []string{
		`{"alg":"HS256","typ":"JWT","crit":["exp"],"exp":1}`,
		`{"alg":"HS256","typ":"JWT","b64":true}`,
		`{"alg":"HS256","typ":"JWT","b64":false,"crit":["b64"]}`,
	} {
		_, err := e.a.Authenticate(request("Bearer " + sign(hdr)))
		require.ErrorIs(t, err, auth.ErrInvalidToken, hdr)
	}
}
