package credential_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/credential"
)

const (
	gatewayClient = "mcpgate"
	gatewaySecret = "s3cret: with spaces & symbols"
	resource      = "https://gw.example.com/mcp"
	github        = "github-mcp"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// setup starts an issuer that lets the gateway's client exchange tokens
// for the github-mcp client, and a broker with one token_exchange
// credential.
func setup(t testing.TB, mod func(*credential.ExchangeOptions)) (*authtest.Issuer, *credential.Broker, *credential.Exchanger, *clock) {
	t.Helper()
	iss := authtest.New(t)
	iss.SetExchangeClient(gatewayClient, gatewaySecret)
	iss.AddClient(github)
	clk := &clock{t: time.Now()}
	iss.Now = clk.Now
	o := credential.ExchangeOptions{Issuer: iss.URL, ClientID: gatewayClient, ClientSecret: []byte(gatewaySecret), HTTPClient: iss.Client(), Now: clk.Now}
	if mod != nil {
		mod(&o)
	}
	ex, err := credential.NewExchanger(o)
	require.NoError(t, err)
	b, err := credential.New("github", credential.Options{Credentials: []credential.Credential{
		{Env: "GITHUB_TOKEN", From: credential.FromTokenExchange, Audience: github, Scope: "repo"},
	}}, ex)
	require.NoError(t, err)
	return iss, b, ex, clk
}

// userToken mints user's access token for the gateway, naming the
// gateway's client among its audiences as Keycloak's standard exchange
// needs.
func userToken(t testing.TB, iss *authtest.Issuer, user string, aud ...string) (*auth.Principal, string) {
	t.Helper()
	c := iss.KeycloakClaims(user, resource, "mcp:use")
	if aud == nil {
		aud = []string{resource, gatewayClient}
	}
	c["aud"] = aud
	tok, err := iss.Sign(c, authtest.SignOptions{})
	require.NoError(t, err)
	return &auth.Principal{Issuer: iss.URL, Subject: c["sub"].(string), UserID: user}, tok
}

// claims decodes a JWT's payload, unverified: the test reads what the
// issuer put in the exchanged token.
func claims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

func envValue(t *testing.T, s credential.Set, name string) string {
	t.Helper()
	for _, kv := range s.Env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s in the set", name)
	return ""
}

func TestExchangeGivesTheUsersOwnToken(t *testing.T) {
	iss, b, _, clk := setup(t, nil)
	p, tok := userToken(t, iss, "alice")
	s, err := b.Get(context.Background(), p, tok)
	require.NoError(t, err)
	got := envValue(t, s, "GITHUB_TOKEN")
	assert.NotEqual(t, tok, got, "the client's own token must never be handed on")
	c := claims(t, got)
	assert.Equal(t, github, c["aud"])
	assert.Equal(t, gatewayClient, c["azp"])
	assert.Equal(t, "alice", c["preferred_username"])
	assert.Equal(t, "repo", c["scope"])
	// Five minutes' lifetime: renewed a minute before.
	assert.WithinDuration(t, clk.Now().Add(4*time.Minute), s.Renew, time.Second)
	assert.NotContains(t, s.String(), got)
}

// TestExchangeKeycloakRefusals: the issuer's refusals, by Keycloak's rules,
// reach the caller as an error naming the server, the credential and the
// issuer's error code, never a token.
func TestExchangeKeycloakRefusals(t *testing.T) {
	tests := []struct {
		name     string
		mod      func(*credential.ExchangeOptions)
		aud      []string
		code     string
		audience string
	}{
		{"wrong client secret", func(o *credential.ExchangeOptions) { o.ClientSecret = []byte("nope") }, nil, "invalid_client", github},
		{"subject token lacks the gateway's audience", nil, []string{resource}, "access_denied", github},
		{"audience names no client", nil, nil, "invalid_client", "no-such-client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, _, ex, _ := setup(t, tt.mod)
			b, err := credential.New("github", credential.Options{Credentials: []credential.Credential{
				{Env: "GITHUB_TOKEN", From: credential.FromTokenExchange, Audience: tt.audience},
			}}, ex)
			require.NoError(t, err)
			p, tok := userToken(t, iss, "alice", tt.aud...)
			_, err = b.Get(context.Background(), p, tok)
			require.Error(t, err)
			assert.ErrorIs(t, err, credential.ErrRefused)
			var e *credential.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.IssuerError)
			assert.Contains(t, err.Error(), `server "github"`)
			assert.Contains(t, err.Error(), "GITHUB_TOKEN")
			assert.Contains(t, err.Error(), tt.code)
			assert.NotContains(t, err.Error(), tok)
		})
	}
}

func TestExchangeRefusesSenderConstrainedTokens(t *testing.T) {
	iss, b, _, _ := setup(t, nil)
	p, tok := userToken(t, iss, "alice")
	p.KeyThumbprint = "jkt"
	_, err := b.Get(context.Background(), p, tok)
	require.ErrorIs(t, err, credential.ErrRefused)
	assert.Contains(t, err.Error(), "DPoP-bound")
	assert.Equal(t, 0, iss.Exchanges(), "a DPoP-bound token is never sent to the issuer")
}

func TestExchangeCachedUntilRenewal(t *testing.T) {
	iss, b, _, clk := setup(t, nil)
	iss.SetExchangeTTL(100 * time.Second)
	p, tok := userToken(t, iss, "alice")
	first, err := b.Get(context.Background(), p, tok)
	require.NoError(t, err)
	clk.Add(79 * time.Second)
	again, err := b.Get(context.Background(), p, tok)
	require.NoError(t, err)
	assert.Equal(t, first.Env, again.Env)
	assert.Equal(t, 1, iss.Exchanges())
	clk.Add(2 * time.Second) // past the renewal: a fifth of 100s before expiry
	fresh, err := b.Get(context.Background(), p, tok)
	require.NoError(t, err)
	assert.Equal(t, 2, iss.Exchanges())
	assert.NotEqual(t, first.Env, fresh.Env)
	assert.True(t, fresh.Renew.After(clk.Now()))
}

// TestExchangeFailureBacksOff: an issuer answering 500 is asked again only
// after a backoff that grows, and the caller gets a clear error naming
// the server and the status.
func TestExchangeFailureBacksOff(t *testing.T) {
	var results []string
	var mu sync.Mutex
	iss, b, _, clk := setup(t, func(o *credential.ExchangeOptions) {
		o.Observe = func(r string) { mu.Lock(); results = append(results, r); mu.Unlock() }
	})
	iss.FailExchange(http.StatusInternalServerError)
	p, tok := userToken(t, iss, "alice")
	for range 20 {
		_, err := b.Get(context.Background(), p, tok)
		require.ErrorIs(t, err, credential.ErrUnavailable)
		assert.Contains(t, err.Error(), "HTTP 500")
		assert.Contains(t, err.Error(), `server "github"`)
	}
	assert.Equal(t, 1, iss.Exchanges(), "failures repeat during the backoff without asking the issuer")
	clk.Add(1100 * time.Millisecond)
	_, err := b.Get(context.Background(), p, tok)
	require.Error(t, err)
	assert.Equal(t, 2, iss.Exchanges())
	clk.Add(1100 * time.Millisecond) // the second backoff is two seconds
	_, err = b.Get(context.Background(), p, tok)
	require.Error(t, err)
	assert.Equal(t, 2, iss.Exchanges())
	iss.FailExchange(0)
	clk.Add(time.Second)
	_, err = b.Get(context.Background(), p, tok)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "error", results[0])
	assert.Equal(t, "backoff", results[1])
	assert.Equal(t, "ok", results[len(results)-1])
}

// TestExchangeSlowIssuerNoPileUp: many requests of one user while the
// issuer hangs make one exchange; many users' make at most MaxConcurrent;
// a request whose client gives up returns.
func TestExchangeSlowIssuerNoPileUp(t *testing.T) {
	iss, b, _, _ := setup(t, func(o *credential.ExchangeOptions) { o.MaxConcurrent = 2 })
	entered, release := iss.HoldExchanges()
	defer release()
	p, tok := userToken(t, iss, "alice")
	var wg sync.WaitGroup
	var failed atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	for range 20 {
		wg.Go(func() {
			if _, err := b.Get(ctx, p, tok); err != nil {
				failed.Add(1)
			}
		})
	}
	for i := range 10 {
		q, qt := userToken(t, iss, fmt.Sprintf("user%d", i))
		wg.Go(func() {
			if _, err := b.Get(ctx, q, qt); err != nil {
				failed.Add(1)
			}
		})
	}
	<-entered
	<-entered
	cancel() // every client gives up
	wg.Wait()
	assert.Equal(t, int32(30), failed.Load())
	assert.Equal(t, 2, iss.Exchanges(), "at most MaxConcurrent exchanges reach a slow issuer")
}

func TestExchangeHugeTokenRefused(t *testing.T) {
	iss, b, _, _ := setup(t, nil)
	iss.PadExchangedTokens(1 << 20)
	p, tok := userToken(t, iss, "alice")
	_, err := b.Get(context.Background(), p, tok)
	require.ErrorIs(t, err, credential.ErrUnavailable)
	assert.Contains(t, err.Error(), "KiB")
	assert.Less(t, len(err.Error()), 400)
}

func TestExchangeCacheBounded(t *testing.T) {
	iss, b, ex, _ := setup(t, func(o *credential.ExchangeOptions) { o.MaxCached = 3 })
	for i := range 8 {
		p, tok := userToken(t, iss, fmt.Sprintf("user%d", i))
		_, err := b.Get(context.Background(), p, tok)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, ex.Cached(), 3)
}

// TestExchangeManyUsersNeverCross: many users at once through one shared
// exchanger and cache, each several times: every user gets a token that
// names them, never another's.
func TestExchangeManyUsersNeverCross(t *testing.T) {
	iss, b, _, _ := setup(t, func(o *credential.ExchangeOptions) { o.MaxCached = 16 })
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 40 {
		user := fmt.Sprintf("user%02d", i)
		p, tok := userToken(t, iss, user)
		for range 10 {
			wg.Go(func() {
				s, err := b.Get(context.Background(), p, tok)
				if err != nil {
					errs <- err
					return
				}
				if got := claims(t, envValue(t, s, "GITHUB_TOKEN"))["preferred_username"]; got != user {
					errs <- fmt.Errorf("user %s got a token of %v", user, got)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestExchangeNeedsTheUsersToken(t *testing.T) {
	_, b, _, _ := setup(t, nil)
	_, err := b.Get(context.Background(), nil, "")
	assert.True(t, errors.Is(err, credential.ErrNoAccess))
}

// BenchmarkExchangeCached is the cost a request pays for its exchanged
// token once it is cached.
func BenchmarkExchangeCached(b *testing.B) {
	iss, br, _, _ := setup(b, nil)
	p, tok := userToken(b, iss, "alice")
	if _, err := br.Get(context.Background(), p, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Get(context.Background(), p, tok); err != nil {
			b.Fatal(err)
		}
	}
}
