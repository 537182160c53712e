package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

const (
	introClient = "mcpgate-rs"
	introSecret = "s3cret-introspection-0123456789"
)

// setupIntrospection is setup with introspection on, the issuer's
// endpoint accepting our client.
func setupIntrospection(t testing.TB, mod func(*auth.Options)) *env {
	return setup(t, func(o *auth.Options) {
		o.Introspection = &auth.Introspection{ClientID: introClient, ClientSecret: []byte(introSecret)}
		if mod != nil {
			mod(o)
		}
	})
}

func introEnv(t *testing.T, mod func(*auth.Options)) *env {
	t.Helper()
	e := setupIntrospection(t, mod)
	e.iss.SetIntrospectionClient(introClient, introSecret)
	return e
}

func TestIntrospectionAccepts(t *testing.T) {
	e := introEnv(t, nil)
	tok := e.iss.Opaque(e.iss.KeycloakClaims("alice", resource, "mcp:use"))
	p, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	assert.Equal(t, "alice", p.UserID)
	assert.Equal(t, e.iss.URL, p.Issuer)
	assert.Equal(t, []string{"mcp:use"}, p.Scopes)
	assert.True(t, p.ReadOnly)

	// The JWT path stays local: no introspection for a JWT.
	n := e.iss.Introspections()
	_, err = e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Keycloak("bob", resource, full...))))
	require.NoError(t, err)
	assert.Equal(t, n, e.iss.Introspections())
}

func TestIntrospectionRejects(t *testing.T) {
	e := introEnv(t, nil)
	now := e.clock.Now()
	valid := func() map[string]any { return e.iss.KeycloakClaims("alice", resource, full...) }
	with := func(k string, v any) string {
		c := valid()
		c[k] = v
		return e.iss.Opaque(c)
	}
	without := func(k string) string {
		c := valid()
		delete(c, k)
		return e.iss.Opaque(c)
	}
	cases := []struct {
		name string
		tok  string
		want error
	}{
		{"unknown (inactive)", "ot_never-issued", auth.ErrInactive},
		{"wrong aud", with("aud", "https://other.example/mcp"), auth.ErrAudience},
		{"other issuer", with("iss", "https://evil.example"), auth.ErrIssuer},
		{"missing scope", with("scope", "mcp:write"), auth.ErrMissingScope},
		{"no exp", without("exp"), auth.ErrNoExpiry},
		{"active but exp passed", with("exp", now.Add(-time.Second).Unix()), auth.ErrExpired},
		{"nbf in the future", with("nbf", now.Add(2*time.Minute).Unix()), auth.ErrNotYetValid},
		{"no sub", without("sub"), auth.ErrNoSubject},
		{"no user claim", without("preferred_username"), auth.ErrUserID},
		{"user id like an option", with("preferred_username", "-rf"), auth.ErrUserID},
		{"cnf.jkt not a thumbprint", with("cnf", map[string]any{"jkt": "x"}), auth.ErrBadConfirmation},
		{"DPoP bound, as Bearer", with("cnf", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}), auth.ErrDPoPAsBearer},
		{"a Keycloak refresh token", with("typ", "Refresh"), auth.ErrNotAccessToken},
		{"an Ory refresh token", with("token_use", "refresh_token"), auth.ErrNotAccessToken},
		{"scope of the wrong type", with("scope", 42), auth.ErrIntrospection},
		{"a member named twice", with("realm_access", json.RawMessage(`{"roles":["a"],"roles":["admin"]}`)), auth.ErrClaims},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // and the failure is not cached as good
				_, err := e.a.Authenticate(request("Bearer " + tc.tok))
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}

func TestIntrospectionFailureIs503(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(e *env)
	}{
		{"endpoint answers 500", func(e *env) { e.iss.FailIntrospection(http.StatusInternalServerError) }},
		{"our credentials refused", func(e *env) { e.iss.SetIntrospectionClient(introClient, "another-secret") }},
		{"issuer down", func(e *env) { e.iss.Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			var mu sync.Mutex
			e := introEnv(t, func(o *auth.Options) {
				o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			tok := e.iss.Opaque(e.iss.KeycloakClaims("alice", resource, full...))
			tc.break_(e)
			rec := httptest.NewRecorder()
			e.a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				t.Error("the handler ran")
			})).ServeHTTP(rec, request("Bearer "+tok))
			assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
			assert.Equal(t, "5", rec.Header().Get("Retry-After"))
			assert.Empty(t, rec.Header().Get("WWW-Authenticate"), "not an invalid token")
			assert.Contains(t, rec.Body.String(), "introspection failed")

			// Mended, the same token is accepted: the failure was not cached.
			e.iss.FailIntrospection(0)
			e.iss.SetIntrospectionClient(introClient, introSecret)
			require.NoError(t, e.iss.Start())
			_, err := e.a.Authenticate(request("Bearer " + tok))
			require.NoError(t, err)

			mu.Lock()
			defer mu.Unlock()
			assert.NotContains(t, logs.String(), introSecret)
			assert.NotContains(t, logs.String(), tok)
		})
	}
}

func TestIntrospectionCache(t *testing.T) {
	e := introEnv(t, func(o *auth.Options) { o.Introspection.MaxCacheTTL = 30 * time.Second })
	c := e.iss.KeycloakClaims("alice", resource, full...)
	exp := e.clock.Now().Add(45 * time.Second)
	c["exp"] = exp.Unix()
	tok := e.iss.Opaque(c)

	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	n := e.iss.Introspections()
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	assert.Equal(t, n, e.iss.Introspections(), "answered from the cache")

	// Revoked at the issuer: served from the cache at most MaxCacheTTL.
	e.iss.Revoke(tok)
	e.clock.Advance(30*time.Second - time.Nanosecond)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	e.clock.Advance(time.Nanosecond)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.ErrorIs(t, err, auth.ErrInactive, "never past the maximum")

	// And never past exp, even within the maximum.
	c2 := e.iss.KeycloakClaims("bob", resource, full...)
	exp2 := e.clock.Now().Add(10 * time.Second)
	c2["exp"] = exp2.Unix()
	tok2 := e.iss.Opaque(c2)
	_, err = e.a.Authenticate(request("Bearer " + tok2))
	require.NoError(t, err)
	e.clock.Advance(exp2.Sub(e.clock.Now()))
	_, err = e.a.Authenticate(request("Bearer " + tok2))
	require.Error(t, err, "exactly at exp")
}

func TestIntrospectionLightweight(t *testing.T) {
	// Keycloak lightweight access tokens are JWTs without aud, scope or
	// user claims: with All, the endpoint decides for them too.
	c := func(e *env) map[string]any { return e.iss.KeycloakClaims("alice", resource, full...) }
	t.Run("introspected", func(t *testing.T) {
		e := introEnv(t, func(o *auth.Options) { o.Introspection.All = true })
		tok := mint(t)(e.iss.Lightweight(c(e)))
		p, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		assert.Equal(t, "alice", p.UserID)
		assert.Equal(t, 1, e.iss.Introspections())
	})
	t.Run("refused as a JWT without All", func(t *testing.T) {
		e := introEnv(t, nil)
		_, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Lightweight(c(e)))))
		require.ErrorIs(t, err, auth.ErrAudience)
	})
}

func TestIntrospectionBounded(t *testing.T) {
	// Tokens nobody vouched for must not make the gateway hold an
	// unbounded number of requests open at the issuer: beyond
	// MaxConcurrent, a request waits at most Timeout for a slot, then 503.
	e := introEnv(t, func(o *auth.Options) {
		o.Introspection.MaxConcurrent = 1
		// Long enough that the first request keeps its slot until
		// released, however loaded the machine: the second gives up on
		// its own context's deadline instead.
		o.Introspection.Timeout = time.Minute
	})
	entered, release := e.iss.HoldIntrospection()
	defer release()
	first := make(chan error, 1)
	go func() {
		_, err := e.a.VerifyToken(context.Background(), "ot_first")
		first <- err
	}()
	<-entered // the first request holds the only slot
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.a.VerifyToken(ctx, "ot_second")
	require.ErrorIs(t, err, auth.ErrIntrospection)
	assert.Equal(t, 1, e.iss.Introspections(), "the second never reached the issuer")
	release()
	<-first
}

func TestIntrospectionOptions(t *testing.T) {
	iss := authtest.New(t)
	opts := baseOptions(iss, newClock())
	opts.Introspection = &auth.Introspection{}
	_, err := auth.New(context.Background(), opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "client id")
	assert.Contains(t, err.Error(), "client secret")
}

// BenchmarkIntrospection is an opaque token's check: miss (every request
// asks the endpoint) and cached.
func BenchmarkIntrospection(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"miss", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			e := setupIntrospection(b, func(o *auth.Options) { o.TokenCacheSize = bc.size })
			e.iss.SetIntrospectionClient(introClient, introSecret)
			r := request("Bearer " + e.iss.Opaque(e.iss.KeycloakClaims("alice", resource, full...)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// from is request with the client address set.
func from(addr, authz string) *http.Request {
	r := request(authz)
	r.RemoteAddr = addr
	return r
}

// TestIntrospectionRefusalsCached: a token the endpoint refused is
// refused again from memory for IntrospectionRefusalTTL, at no cost at the
// issuer; after it, the endpoint is asked again.
func TestIntrospectionRefusalsCached(t *testing.T) {
	e := introEnv(t, nil)
	n := e.iss.Introspections()
	for range 5 {
		_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_never-issued"))
		require.ErrorIs(t, err, auth.ErrInactive)
	}
	assert.Equal(t, n+1, e.iss.Introspections(), "one introspection for five refusals of one token")
	e.clock.Advance(auth.IntrospectionRefusalTTL)
	_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_never-issued"))
	require.ErrorIs(t, err, auth.ErrInactive)
	assert.Equal(t, n+2, e.iss.Introspections(), "asked again once the refusal is old")
}

// TestIntrospectionPerAddressLimit: made-up tokens from one address cause
// at most PerAddressPerMinute introspections; the rest get 429 without a
// request to the issuer. Another address, and a real user's token already
// answered, are not held back.
func TestIntrospectionPerAddressLimit(t *testing.T) {
	e := introEnv(t, func(o *auth.Options) { o.Introspection.PerAddressPerMinute = 5 })
	good := e.iss.Opaque(e.iss.KeycloakClaims("alice", resource, "mcp:use"))
	_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+good))
	require.NoError(t, err)
	n := e.iss.Introspections()
	limited := 0
	for i := range 50 {
		_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_made-up-"+strconv.Itoa(i)))
		if errors.Is(err, auth.ErrIntrospectionLimited) {
			limited++
			continue
		}
		require.ErrorIs(t, err, auth.ErrInactive)
	}
	assert.Equal(t, n+4, e.iss.Introspections(), "the address's allowance (5 a minute, one spent on the good token)")
	assert.Equal(t, 46, limited)

	rec := httptest.NewRecorder()
	_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_one-more"))
	e.a.WriteError(rec, err)
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))

	_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+good))
	require.NoError(t, err, "a token already answered is served from the cache")
	_, err = e.a.Authenticate(from("[2001:db8::1]:1000", "Bearer ot_from-elsewhere"))
	require.ErrorIs(t, err, auth.ErrInactive, "another address has its own allowance")
	e.clock.Advance(time.Minute)
	_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_a-minute-later"))
	require.ErrorIs(t, err, auth.ErrInactive, "the allowance comes back")
}

// TestIntrospectionThrottledKeepsKnownTokens: when the endpoint throttles
// (429, 503) or fails, a token it called active before keeps working past
// MaxCacheTTL for IntrospectionStaleGrace, while a token it never saw gets
// 503; a throttling endpoint is not asked again before its Retry-After.
func TestIntrospectionThrottledKeepsKnownTokens(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			e := introEnv(t, nil)
			claims := e.iss.KeycloakClaims("alice", resource, "mcp:use")
			claims["exp"] = e.clock.Now().Add(time.Hour).Unix()
			good := e.iss.Opaque(claims)
			_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+good))
			require.NoError(t, err)

			e.iss.FailIntrospection(status)
			e.clock.Advance(auth.DefaultIntrospectionMaxCacheTTL)
			p, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+good))
			require.NoError(t, err, "the earlier answer serves while the endpoint fails")
			assert.Equal(t, "alice", p.UserID)
			_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_never-seen"))
			require.ErrorIs(t, err, auth.ErrIntrospection, "a token never answered is not guessed")
			if status != http.StatusInternalServerError {
				n := e.iss.Introspections()
				_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer ot_during-the-pause"))
				require.ErrorIs(t, err, auth.ErrIntrospection)
				assert.Equal(t, n, e.iss.Introspections(), "a throttling endpoint is left alone for its Retry-After")
			}

			e.clock.Advance(auth.IntrospectionStaleGrace)
			_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+good))
			require.ErrorIs(t, err, auth.ErrIntrospection, "not past the grace")
		})
	}
}

// TestIntrospectionRevokedNotServedStale: once the endpoint has said a
// token is no longer active, its earlier "active" answer never serves it
// again, not even while the endpoint later fails: the stale answers are
// for tokens the endpoint is not known to have revoked.
func TestIntrospectionRevokedNotServedStale(t *testing.T) {
	e := introEnv(t, nil)
	claims := e.iss.KeycloakClaims("alice", resource, "mcp:use")
	claims["exp"] = e.clock.Now().Add(time.Hour).Unix()
	tok := e.iss.Opaque(claims)
	_, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+tok))
	require.NoError(t, err)

	e.iss.Revoke(tok)
	e.clock.Advance(auth.DefaultIntrospectionMaxCacheTTL)
	_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+tok))
	require.ErrorIs(t, err, auth.ErrInactive, "the endpoint is asked again and says revoked")

	// The endpoint fails once the refusal is no longer remembered: the
	// token must not come back from the earlier answer.
	e.iss.FailIntrospection(http.StatusServiceUnavailable)
	e.clock.Advance(auth.IntrospectionRefusalTTL)
	_, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+tok))
	require.ErrorIs(t, err, auth.ErrIntrospection, "a revoked token is not served from the earlier answer")
}

// TestIntrospectionRecheck: an introspected principal says when its answer
// is due again (what it opened must end by then): MaxCacheTTL after the
// answer, never past exp; served from the earlier answer while the
// endpoint fails, the end of the grace. A JWT's says nothing.
func TestIntrospectionRecheck(t *testing.T) {
	e := introEnv(t, nil)
	claims := e.iss.KeycloakClaims("alice", resource, "mcp:use")
	claims["exp"] = e.clock.Now().Add(time.Hour).Unix()
	tok := e.iss.Opaque(claims)
	start := e.clock.Now()
	p, err := e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+tok))
	require.NoError(t, err)
	assert.Equal(t, start.Add(auth.DefaultIntrospectionMaxCacheTTL), p.Recheck)

	e.iss.FailIntrospection(http.StatusInternalServerError)
	e.clock.Advance(auth.DefaultIntrospectionMaxCacheTTL)
	p, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+tok))
	require.NoError(t, err)
	assert.Equal(t, start.Add(auth.DefaultIntrospectionMaxCacheTTL+auth.IntrospectionStaleGrace), p.Recheck)

	short := e.iss.KeycloakClaims("bob", resource, "mcp:use")
	exp := e.clock.Now().Add(10 * time.Second).Truncate(time.Second)
	short["exp"] = exp.Unix()
	e.iss.FailIntrospection(0)
	p, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+e.iss.Opaque(short)))
	require.NoError(t, err)
	assert.Equal(t, exp.Unix(), p.Recheck.Unix(), "never past exp")

	p, err = e.a.Authenticate(from("192.0.2.1:1000", "Bearer "+mint(t)(e.iss.Keycloak("carol", resource, full...))))
	require.NoError(t, err)
	assert.True(t, p.Recheck.IsZero())
}
