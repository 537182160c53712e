package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

func TestKeyRotation(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.MinRefetchInterval = time.Minute })
	old := mint(t)(e.iss.Keycloak("alice", resource, full...))
	_, err := e.a.Authenticate(request("Bearer " + old))
	require.NoError(t, err)

	// A token signed with a new key: its kid is unknown, so the JWKS is
	// refetched and the new key found.
	require.NoError(t, e.iss.Rotate())
	rotated := mint(t)(e.iss.Keycloak("alice", resource, full...))
	p, err := e.a.Authenticate(request("Bearer " + rotated))
	require.NoError(t, err, "token signed with the rotated key")
	newKid, _ := e.iss.KeyIDs()
	require.Equal(t, newKid, p.KeyID)

	// The old key is no longer published.
	_, err = e.a.Authenticate(request("Bearer " + old))
	require.ErrorIs(t, err, auth.ErrUnknownKey)

	// Within MinRefetchInterval, unknown kids cause no refetch at all, so a
	// flood of forged kids cannot make us hammer the issuer.
	require.NoError(t, e.iss.Rotate())
	again := mint(t)(e.iss.Keycloak("alice", resource, full...))
	before := e.iss.JWKSFetches()
	for range 5 {
		_, err = e.a.Authenticate(request("Bearer " + again))
		require.ErrorIs(t, err, auth.ErrUnknownKey)
	}
	if got := e.iss.JWKSFetches(); got != before {
		t.Errorf("got %d JWKS fetches within the refetch bound, want %d", got, before)
	}

	// Once the bound has passed, the next unknown kid refetches again.
	e.clock.Advance(time.Minute)
	again = mint(t)(e.iss.Keycloak("alice", resource, full...)) // fresh iat/exp on the moved clock
	_, err = e.a.Authenticate(request("Bearer " + again))
	require.NoError(t, err)
}

func TestIssuerDownAfterStart(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.MinRefetchInterval = -1 })
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	unknown := mint(t)(e.iss.Sign(e.iss.KeycloakClaims("alice", resource, full...), authtest.SignOptions{KeyID: "later"}))
	e.iss.Stop()

	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err, "cached keys keep verifying while the issuer is down")
	// An unknown kid tries a refetch, which fails: still a plain 401.
	_, err = e.a.Authenticate(request("Bearer " + unknown))
	require.ErrorIs(t, err, auth.ErrUnknownKey)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err, "a failed refetch keeps the cached keys")
}

func TestIssuerDownAtStart(t *testing.T) {
	iss := authtest.New(t)
	c := newClock()
	iss.Now = c.Now
	iss.Stop()
	a, err := auth.New(context.Background(), baseOptions(iss, c))
	require.NoError(t, err, "New must not wait for the issuer")
	t.Cleanup(func() { a.Close() })

	tok := mint(t)(iss.Keycloak("alice", resource, full...))
	_, err = a.Authenticate(request("Bearer " + tok))
	require.ErrorIs(t, err, auth.ErrUnavailable)

	rec := httptest.NewRecorder()
	a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request("Bearer "+tok))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("got Retry-After %q, want a positive number of seconds", rec.Header().Get("Retry-After"))
	}
	require.JSONEq(t, `{"error":"temporarily_unavailable","error_description":"the authorization server's signing keys are not available yet; retry later"}`, rec.Body.String())

	// A request without a token is still told to authenticate.
	rec = httptest.NewRecorder()
	a.Middleware(http.NotFoundHandler()).ServeHTTP(rec, request())
	require.Equal(t, http.StatusUnauthorized, rec.Code)

	require.NoError(t, iss.Start())
	waitReady(t, a)
	p, err := a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	require.Equal(t, "alice", p.UserID)
}

func TestCloseStopsRetrying(t *testing.T) {
	iss := authtest.New(t)
	iss.Stop()
	a, err := auth.New(context.Background(), baseOptions(iss, newClock()))
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestConcurrentUnknownKid: many requests with a new key at once share one
// refetch, and all of them then verify.
func TestConcurrentUnknownKid(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.MinRefetchInterval = time.Minute })
	require.NoError(t, e.iss.Rotate())
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	before := e.iss.JWKSFetches()
	errs := make(chan error, 20)
	for range cap(errs) {
		go func() {
			_, err := e.a.Authenticate(request("Bearer " + tok))
			errs <- err
		}()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	if got := e.iss.JWKSFetches() - before; got != 1 {
		t.Errorf("got %d JWKS fetches, want 1", got)
	}
}
