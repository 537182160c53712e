package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/worker"
)

// budgetGateway serves the stub worker under a connection budget of 4 in
// all and 2 per principal, a per-user worker counting 2; the principal's
// subject comes from X-Test-Sub, its user id from X-Test-User.
func budgetGateway(t *testing.T) (*Gateway, string) {
	t.Helper()
	opts := Options{DB: DBBudget{Max: 4, MaxPerUser: 2, PerSession: 1, PerUserWorker: 2}}
	opts.Middleware = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Issuer: "https://issuer", Subject: r.Header.Get("X-Test-Sub"), UserID: r.Header.Get("X-Test-User")}
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}
	g, srv := newTestGatewayOf(t, nil, opts)
	return g, srv.URL
}

// TestDBBudgetPerPrincipal: a principal whose sessions and workers hold
// its share of database connections gets 429 for the next session, and
// for a 2026-07-28 call that needs a worker, under any user id; another
// principal still gets its own; a session's end gives its share back.
func TestDBBudgetPerPrincipal(t *testing.T) {
	g, url := budgetGateway(t)
	as := func(sub, user string) []string { return []string{"X-Test-Sub", sub, "X-Test-User", user} }
	first := rawSessionWith(t, url, as("sub-gina", "gina")...)
	rawSessionWith(t, url, as("sub-gina", "gina")...)
	assert.Equal(t, 2, g.DBConnections())

	resp, body := rawDo(t, http.MethodPost, url, initBody, as("sub-gina", "gina")...)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, body, "database connections as one user may (limits.max_db_connections_per_user)")
	resp, body = rawDo(t, http.MethodPost, url, initBody, as("sub-gina", "gina-alias")...)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the budget is the principal's, whatever its user id: %s", body)
	resp, body = rawDo(t, http.MethodPost, url, modernBody("1", "tools/call", `"name":"echo","arguments":{"text":"x"}`),
		append(as("sub-gina", "gina"), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")...)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a per-user worker counts too: %s", body)

	rawSessionWith(t, url, as("sub-hank", "hank")...) // another principal is not held back

	resp, _ = rawDo(t, http.MethodDelete, url, "", append(as("sub-gina", "gina"), "MCP-Session-Id", first, protoHdr, "2025-11-25")...)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rawSessionWith(t, url, as("sub-gina", "gina")...)
	assert.Equal(t, 3, g.DBConnections())

	// The whole budget: 3 taken, a per-user worker needs 2.
	resp, body = rawDo(t, http.MethodPost, url, modernBody("1", "tools/call", `"name":"echo","arguments":{"text":"x"}`),
		append(as("sub-ivan", "ivan"), protoHdr, "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")...)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	assert.Contains(t, body, "limits.max_db_connections)")
	rawSessionWith(t, url, as("sub-ivan", "ivan")...) // one connection is left
	assert.Equal(t, 4, g.DBConnections())
}

func TestCheckDBBudget(t *testing.T) {
	assert.NoError(t, CheckDBBudget(DBBudget{}))
	assert.NoError(t, CheckDBBudget(DBBudget{Max: 64, MaxPerUser: 10, PerSession: 1, PerUserWorker: 5}))
	assert.Error(t, CheckDBBudget(DBBudget{Max: 8, MaxPerUser: 9}))
	assert.Error(t, CheckDBBudget(DBBudget{Max: 64, MaxPerUser: 4, PerUserWorker: 5}))
}

// TestDBBudgetHeldUntilWorkerExits (hostile): a session's share of the
// budget comes back when its worker has exited, not when the session
// leaves the table: a worker still ending (a statement running up to its
// timeout, a grace before the kill) still holds its database connection,
// so a principal that deletes a busy session and at once starts another
// would hold more than its share.
func TestDBBudgetHeldUntilWorkerExits(t *testing.T) {
	opts := Options{DB: DBBudget{Max: 4, MaxPerUser: 1, PerSession: 1, PerUserWorker: 1}}
	opts.Middleware = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Issuer: "https://issuer", Subject: "sub-gina", UserID: "gina"}
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}
	g, srv := newTestGatewayOf(t, nil, opts, worker.LauncherOptions{Env: []string{"STUB_IGNORE_TERM=1"}, StopGrace: 3 * time.Second})
	sid := rawSession(t, srv.URL)
	require.Equal(t, 1, g.DBConnections())
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		rawDo(t, http.MethodDelete, srv.URL, "", sidHdr, sid)
	}()
	require.Eventually(t, func() bool { return g.Sessions() == 0 }, 2*time.Second, time.Millisecond, "the session leaves the table")
	assert.Equal(t, 1, g.DBConnections(), "its worker has not exited yet")
	resp, body := rawDo(t, http.MethodPost, srv.URL, initBody)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	<-deleted
	assert.Equal(t, 0, g.DBConnections(), "the worker has exited")
	rawSession(t, srv.URL)
}
