package auth_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// The verified-token cache must never answer differently from a full
// verification: these tests attack it with what a cache gets wrong.

func TestCacheNeverHoldsAFailure(t *testing.T) {
	e := setup(t, nil)
	c := e.iss.KeycloakClaims("alice", resource, full...)
	c["aud"] = "https://other.example/mcp"
	wrongAud := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
	noScope := mint(t)(e.iss.Keycloak("alice", resource, "mcp:write"))
	unknownKid := mint(t)(e.iss.Sign(e.iss.KeycloakClaims("alice", resource, full...), authtest.SignOptions{KeyID: "nope"}))
	for _, tc := range []struct {
		name string
		tok  string
		want error
	}{
		{"wrong aud", wrongAud, auth.ErrAudience},
		{"missing scope", noScope, auth.ErrMissingScope},
		{"unknown kid", unknownKid, auth.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 {
				_, err := e.a.Authenticate(request("Bearer " + tc.tok))
				require.ErrorIs(t, err, tc.want)
			}
			assert.Zero(t, auth.CachedTokens(e.a))
		})
	}
}

func TestCacheRefusesAtExpiry(t *testing.T) {
	e := setup(t, nil)
	c := e.iss.KeycloakClaims("alice", resource, full...)
	exp := e.clock.Now().Add(90 * time.Second)
	c["exp"] = exp.Unix()
	tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	require.Equal(t, 1, auth.CachedTokens(e.a))

	e.clock.Advance(exp.Sub(e.clock.Now()) - time.Nanosecond)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err, "one nanosecond before exp")
	e.clock.Advance(time.Nanosecond)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.ErrorIs(t, err, auth.ErrExpired, "exactly at exp")
}

func TestCacheRechecksNotBefore(t *testing.T) {
	// A clock that steps back (NTP) must not let a cached token be used
	// before its nbf, any more than a fresh one.
	e := setup(t, nil)
	c := e.iss.KeycloakClaims("alice", resource, full...)
	c["nbf"] = e.clock.Now().Unix()
	delete(c, "iat") // so that nbf alone decides
	tok := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	e.clock.Advance(-5 * time.Minute)
	_, err = e.a.Authenticate(request("Bearer " + tok))
	require.ErrorIs(t, err, auth.ErrNotYetValid)
}

func TestCacheDroppedOnRotation(t *testing.T) {
	// The new key set arrives with a token that is accepted (and cached),
	// or with one that is refused: either way nothing verified with the
	// removed key may be served.
	for _, accepted := range []bool{true, false} {
		t.Run(fmt.Sprintf("refetched for an accepted token %v", accepted), func(t *testing.T) {
			e := setup(t, nil)
			old := mint(t)(e.iss.Keycloak("alice", resource, full...))
			_, err := e.a.Authenticate(request("Bearer " + old))
			require.NoError(t, err)

			// The issuer removes the key that signed old; a token with the
			// new kid makes the resource refetch the JWKS.
			require.NoError(t, e.iss.Rotate())
			c := e.iss.KeycloakClaims("bob", resource, full...)
			if !accepted {
				c["aud"] = "https://other.example/mcp"
			}
			fresh := mint(t)(e.iss.Sign(c, authtest.SignOptions{}))
			_, err = e.a.Authenticate(request("Bearer " + fresh))
			require.Equal(t, accepted, err == nil, "%v", err)

			_, err = e.a.Authenticate(request("Bearer " + old))
			require.ErrorIs(t, err, auth.ErrUnknownKey, "a token signed by a removed key after the JWKS changed")
		})
	}
}

func TestCacheOneByteChanged(t *testing.T) {
	e := setup(t, nil)
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	// Every position: header, payload and signature; a change in the last
	// character's padding bits may decode to the same bytes, so flip
	// between two letters that differ in their high bits.
	for i := range len(tok) - 1 {
		if tok[i] == '.' {
			continue
		}
		// Cached again first: a changed header may name an unknown kid,
		// whose refetch of the keys empties the cache.
		_, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'z'
		} else {
			b[i] = 'A'
		}
		_, err = e.a.Authenticate(request("Bearer " + string(b)))
		require.Error(t, err, "byte %d changed", i)
	}
}

func TestCacheBounded(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.TokenCacheSize = 8 })
	var toks []string
	for i := range 40 {
		toks = append(toks, mint(t)(e.iss.Keycloak(fmt.Sprintf("user%d", i), resource, full...)))
	}
	for i, tok := range toks {
		p, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("user%d", i), p.UserID)
		require.LessOrEqual(t, auth.CachedTokens(e.a), 8)
	}
	// Every token still answers with its own principal, cached or not.
	for i, tok := range toks {
		p, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("user%d", i), p.UserID)
	}
	require.Equal(t, 8, auth.CachedTokens(e.a))
}

func TestCacheOff(t *testing.T) {
	e := setup(t, func(o *auth.Options) { o.TokenCacheSize = -1 })
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	for range 2 {
		_, err := e.a.Authenticate(request("Bearer " + tok))
		require.NoError(t, err)
	}
	require.Zero(t, auth.CachedTokens(e.a))
}

func TestCachedPrincipalIsACopy(t *testing.T) {
	e := setup(t, nil)
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	p, err := e.a.Authenticate(request("Bearer " + tok)) // from the cache
	require.NoError(t, err)
	p.UserID, p.ReadOnly, p.Scopes[1] = "mallory", true, "x"
	p2, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	assert.Equal(t, "alice", p2.UserID)
	assert.False(t, p2.ReadOnly)
	assert.Equal(t, full, p2.Scopes)
}

func TestCacheNotSharedAcrossConfigs(t *testing.T) {
	// A config change makes a new Authenticator: a token the old one
	// accepted is checked afresh against the new rules.
	e := setup(t, nil)
	tok := mint(t)(e.iss.Keycloak("alice", resource, full...))
	_, err := e.a.Authenticate(request("Bearer " + tok))
	require.NoError(t, err)
	opts := baseOptions(e.iss, e.clock)
	opts.RequiredScopes = []string{"mcp:admin"}
	a2, err := auth.New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { a2.Close() })
	waitReady(t, a2)
	_, err = a2.Authenticate(request("Bearer " + tok))
	require.ErrorIs(t, err, auth.ErrMissingScope)
}

func TestCacheKeptWhenARefetchFindsTheSameKeys(t *testing.T) {
	// A forged kid makes the resource refetch the JWKS (at most once per
	// MinRefetchInterval); when the keys are the same, what was verified
	// with them stays cached.
	e := setup(t, func(o *auth.Options) { o.MinRefetchInterval = -1 })
	_, err := e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Keycloak("alice", resource, full...))))
	require.NoError(t, err)
	fetches := e.iss.JWKSFetches()
	forged := mint(t)(e.iss.Sign(e.iss.KeycloakClaims("mallory", resource, full...), authtest.SignOptions{KeyID: "forged"}))
	_, err = e.a.Authenticate(request("Bearer " + forged))
	require.ErrorIs(t, err, auth.ErrUnknownKey)
	require.Greater(t, e.iss.JWKSFetches(), fetches, "the forged kid made a refetch")
	_, err = e.a.Authenticate(request("Bearer " + mint(t)(e.iss.Keycloak("bob", resource, full...))))
	require.NoError(t, err)
	assert.Equal(t, 2, auth.CachedTokens(e.a), "alice's entry survived the refetch")
}
