package auth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

const resource = "https://mcp.example.test/mcp"

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a settable clock shared by the issuer and the authenticator.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	iss   *authtest.Issuer
	a     *auth.Authenticator
	clock *clock
}

// baseOptions is a Keycloak-like configuration against iss.
func baseOptions(iss *authtest.Issuer, c *clock) auth.Options {
	return auth.Options{
		Issuer:         iss.URL,
		Resource:       resource,
		RequiredScopes: []string{"mcp:use"},
		WriteScope:     "mcp:write",
		ExtraScopes:    []string{"profile", "offline_access"},
		UserClaim:      "preferred_username",
		HTTPClient:     iss.Client(),
		RetryInterval:  time.Second,
		Logger:         discard,
		Now:            c.Now,
	}
}

// setup starts an issuer and an authenticator; mod adjusts the options.
// It waits until the keys are loaded unless the issuer is down.
func setup(t testing.TB, mod func(*auth.Options)) *env {
	t.Helper()
	e := &env{iss: authtest.New(t), clock: newClock()}
	e.iss.Now = e.clock.Now
	opts := baseOptions(e.iss, e.clock)
	if mod != nil {
		mod(&opts)
	}
	a, err := auth.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	e.a = a
	waitReady(t, a)
	return e
}

func waitReady(t testing.TB, a *auth.Authenticator) {
	t.Helper()
	select {
	case <-a.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("keys never became ready")
	}
}

// request is a POST to /mcp with the given Authorization header values.
func request(authz ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, resource, nil)
	r.Header.Set("Content-Type", "application/json")
	for _, v := range authz {
		r.Header.Add("Authorization", v)
	}
	return r
}

// mint fails the test when minting a token fails: mint(t)(iss.Sign(…)).
func mint(t testing.TB) func(string, error) string {
	return func(tok string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("minting: %v", err)
		}
		return tok
	}
}
