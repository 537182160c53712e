package gateway

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// sseOpen sends req's headers and body to url and returns the stream,
// bounded by a 30s context so that a stream that never ends fails the
// test rather than hanging it.
func sseOpen(t *testing.T, method, url, body string, headers ...string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return bufio.NewReader(resp.Body)
}

// drain reads r to its end and returns the data lines it carried; it fails
// when the stream does not end by itself.
func drain(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	var data []string
	for {
		line, err := r.ReadString('\n')
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, strings.TrimSpace(d))
		}
		if err == io.EOF {
			return data
		}
		require.NoError(t, err, "the stream must end by itself")
	}
}

// listenBody is a subscriptions/listen request.
var listenBody = modernBody(`"l1"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)

// TestStreamsEndAtTokenExpiry: a stream opened with a token that expires
// soon ends then, although it is quiet and keeps receiving keep-alives: a
// session's GET stream is closed, a subscriptions/listen ends with its
// completion result. Tokens from the test issuer, a few seconds long.
func TestStreamsEndAtTokenExpiry(t *testing.T) {
	a := newAuthedGateway(t, Options{KeepAliveInterval: 200 * time.Millisecond})
	short := func(user string) string {
		return a.token(t, user, writeScopes, func(c map[string]any) { c["exp"] = time.Now().Add(3 * time.Second).Unix() })
	}
	t.Run("GET stream", func(t *testing.T) {
		tok := short("alice")
		sid := rawSessionWith(t, a.url, "Authorization", "Bearer "+tok)
		st := sseOpen(t, http.MethodGet, a.url, "", sidHdr, sid, protoHdr, "2025-11-25", "Authorization", "Bearer "+tok)
		assert.Empty(t, drain(t, st), "closed without a message")
	})
	t.Run("listen", func(t *testing.T) {
		tok := short("bob")
		st := sseOpen(t, http.MethodPost, a.url, listenBody, protoHdr, "2026-07-28", "Mcp-Method", "subscriptions/listen", "Authorization", "Bearer "+tok)
		data := drain(t, st)
		require.Len(t, data, 2, "the acknowledgement, then the completion result")
		assert.Contains(t, data[0], "notifications/subscriptions/acknowledged")
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":"l1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"l1"}}}`, data[1])
	})
}

// TestStreamsLifetimeCapped: without a token's expiry (the localhost
// mode), MaxStreamLifetime ends both kinds of stream.
func TestStreamsLifetimeCapped(t *testing.T) {
	_, srv := newTestGateway(t, Options{MaxStreamLifetime: time.Second, KeepAliveInterval: 200 * time.Millisecond})
	sid := rawSession(t, srv.URL)
	assert.Empty(t, drain(t, sseOpen(t, http.MethodGet, srv.URL, "", sidHdr, sid, protoHdr, "2025-11-25")))
	data := drain(t, sseOpen(t, http.MethodPost, srv.URL, listenBody, protoHdr, "2026-07-28", "Mcp-Method", "subscriptions/listen"))
	require.Len(t, data, 2)
	assert.Contains(t, data[1], `"resultType":"complete"`)
}

// TestOpenListenIsNotActivity: an open listen, on a worker that speaks
// 2026-07-28 (where the gateway holds its own listen in the worker) and on
// a 2025-only one, does not keep its per-user worker from idle reaping; the
// reaping ends the listen with its completion result.
func TestOpenListenIsNotActivity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
	}{{"modern worker", []string{"sdkworker"}}, {"2025 worker", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			g, url := principalGateway(t, tc.command, Options{Now: clock, SessionIdleTimeout: 10 * time.Minute})
			st := sseOpen(t, http.MethodPost, url, listenBody, protoHdr, "2026-07-28", "Mcp-Method", "subscriptions/listen", "X-Test-User", "erin")
			nextData(t, st) // the acknowledgement: the listen is open

			mu.Lock()
			now = now.Add(11 * time.Minute)
			mu.Unlock()
			g.reapIdle()
			assert.Equal(t, 0, g.PerUserWorkers(), "the worker with only a listen open is idle")
			data := drain(t, st)
			require.Len(t, data, 1)
			assert.Contains(t, data[0], `"resultType":"complete"`)
		})
	}
}

// TestStreamsEndWhenIntrospectionIsDue: a stream opened with an opaque
// token lasts no longer than the introspection answer that let it open is
// reused (auth.introspection_max_cache_ttl), though the token's exp is an
// hour away: a token revoked at the issuer stops working within that TTL,
// its open streams included. Reopened, the revoked token is refused.
func TestStreamsEndWhenIntrospectionIsDue(t *testing.T) {
	const id, secret = "mcpgate-rs", "s3cret-introspection-0123456789"
	a := newAuthedGatewayWith(t, auth.Options{
		RequiredScopes: readScopes, WriteScope: "mcp:write",
		Introspection: &auth.Introspection{ClientID: id, ClientSecret: []byte(secret), MaxCacheTTL: 2 * time.Second},
	}, Options{KeepAliveInterval: 200 * time.Millisecond})
	a.iss.SetIntrospectionClient(id, secret)
	opaque := func(user string) string {
		c := a.iss.KeycloakClaims(user, accessResource, writeScopes...)
		c["exp"] = time.Now().Add(time.Hour).Unix()
		return a.iss.Opaque(c)
	}
	t.Run("GET stream", func(t *testing.T) {
		tok := opaque("alice")
		sid := rawSessionWith(t, a.url, "Authorization", "Bearer "+tok)
		st := sseOpen(t, http.MethodGet, a.url, "", sidHdr, sid, protoHdr, "2025-11-25", "Authorization", "Bearer "+tok)
		a.iss.Revoke(tok)
		assert.Empty(t, drain(t, st), "closed without a message")
		resp, _ := rawDo(t, http.MethodGet, a.url, "", sidHdr, sid, protoHdr, "2025-11-25", "Authorization", "Bearer "+tok)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the revoked token opens no new stream")
	})
	t.Run("listen", func(t *testing.T) {
		tok := opaque("bob")
		st := sseOpen(t, http.MethodPost, a.url, listenBody, protoHdr, "2026-07-28", "Mcp-Method", "subscriptions/listen", "Authorization", "Bearer "+tok)
		a.iss.Revoke(tok)
		data := drain(t, st)
		require.Len(t, data, 2, "the acknowledgement, then the completion result")
		assert.Contains(t, data[1], `"resultType":"complete"`)
	})
}
