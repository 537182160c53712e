package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewSessionEndsTheUsersLeastRecentlyUsedIdleOne: clients that never
// send DELETE leave sessions, each with a worker process, until the idle
// timeout. At the per-user limit a new initialize ends the user's least
// recently used idle session instead of being refused; a session in use
// (a request or a stream open) is never ended, and with every session in
// use the limit still answers 429. Before, the new session got 429 until
// an abandoned one expired.
func TestNewSessionEndsTheUsersLeastRecentlyUsedIdleOne(t *testing.T) {
	var clock atomic.Int64 // each reading one second later: a strict order of use
	start := time.Now()
	now := func() time.Time { return start.Add(time.Duration(clock.Add(1)) * time.Second) }
	g, srv := newTestGateway(t, Options{MaxSessionsPerUser: 2, Now: now})
	alive := func(sid string) bool {
		status, _ := callRaw(t, srv.URL, sid, "1", "echo", map[string]any{"text": "x"})
		return status == http.StatusOK
	}

	s1 := rawSession(t, srv.URL)
	s2 := rawSession(t, srv.URL)
	require.True(t, alive(s1)) // s1 used last: s2 is the least recently used
	s3 := rawSession(t, srv.URL)
	assert.False(t, alive(s2), "the least recently used idle session was ended")
	assert.True(t, alive(s1))
	assert.True(t, alive(s3))
	assert.Equal(t, 2, g.Sessions())

	// s3 holds its GET stream open: in use, whatever its age.
	require.True(t, alive(s1)) // s3 is now the least recently used
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openStream(t, ctx, http.MethodGet, srv.URL, s3, "")
	s4 := rawSession(t, srv.URL)
	assert.False(t, alive(s1), "the idle one ended, not the one with a stream open")
	assert.True(t, alive(s3))

	// s4 in use too (a GET stream): nothing idle to end, so 429.
	openStream(t, ctx, http.MethodGet, srv.URL, s4, "")
	resp, _ := rawDo(t, http.MethodPost, srv.URL, initBody)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}
