package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/worker"
)

// TestReadyzIsCheapAndSaysNothing: anonymous probes cannot turn into a
// flood of readiness checks (database connections), and the body never
// carries the reason.
func TestReadyzIsCheapAndSaysNothing(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fail := errors.New("db: postgres does not answer: dial unix /run/secret-host/.s.PGSQL.5432")
	g, err := New(launcher(t, nil, worker.LauncherOptions{}), Options{Logger: testLogger(t), Now: clock,
		Ready: func(context.Context) error { calls.Add(1); return fail }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	h := g.HealthHandler()
	probe := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			code, body := probe("/readyz")
			assert.Equal(t, http.StatusServiceUnavailable, code)
			assert.Equal(t, "not ready\n", body)
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, calls.Load(), "50 probes within the cache time run the checks once")

	mu.Lock()
	now = now.Add(readyCacheFor)
	mu.Unlock()
	probe("/readyz")
	assert.EqualValues(t, 2, calls.Load(), "after the cache time the checks run again")

	code, body := probe("/healthz")
	assert.Equal(t, http.StatusOK, code, "alive even when not ready")
	assert.Equal(t, "ok\n", body)
}

// TestDrainRefusesNewSessionsOnly: while a gateway drains, a new session
// gets 503 with Retry-After, an existing one is still served, and Drain
// returns once nothing is in flight.
func TestDrainRefusesNewSessionsOnly(t *testing.T) {
	g, srv := newTestGateway(t, Options{})
	sid := rawSession(t, srv.URL)
	require.NoError(t, g.Ready(context.Background()))

	done := make(chan error, 1)
	go func() { done <- g.Drain(context.Background()) }()
	require.NoError(t, <-done, "nothing in flight: the drain ends at once")
	assert.Error(t, g.Ready(context.Background()), "not ready while draining")

	resp, body := rawDo(t, http.MethodPost, srv.URL, initBody)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	assert.Contains(t, body, "draining")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	code, m := callRaw(t, srv.URL, sid, "2", "echo", map[string]any{"text": "still served"})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "still served", resultText(m))
}

// TestDrainPerUserWorkers: on 2026-07-28 a drain refuses a user's first
// request (it would start a worker) with 503, serves users whose worker
// runs, is not held up by an open subscriptions/listen stream, and ends
// that stream with its completion result.
func TestDrainPerUserWorkers(t *testing.T) {
	g, url := principalGateway(t, []string{sdkWorker}, Options{})
	status, m := modernCall(t, url, "alice", false, "1", "echo", map[string]any{"text": "x"})
	require.Equal(t, http.StatusOK, status, "%v", m)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(modernBody(`"l"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		protoHdr: "2026-07-28", "Mcp-Method": "subscriptions/listen", "X-Test-User": "alice"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	listen := bufio.NewReader(resp.Body)
	nextData(t, listen) // acknowledged

	require.NoError(t, g.Drain(context.Background()), "an open listen stream does not hold the drain")
	rest, _ := io.ReadAll(listen)
	assert.Contains(t, string(rest), `"id":"l"`, "the listen stream ends with its completion result")

	status, m = modernCall(t, url, "bob", false, "1", "echo", map[string]any{"text": "x"})
	assert.Equal(t, http.StatusServiceUnavailable, status, "a new per-user worker is refused while draining")
	assert.Contains(t, fmt.Sprint(m), "draining")
	status, m = modernCall(t, url, "alice", false, "2", "echo", map[string]any{"text": "still served"})
	assert.Equal(t, http.StatusOK, status, "%v", m)
}

// TestDrainLastsAtLeastDrainMin: with nothing in flight a drain still
// lasts Options.DrainMin, so that a load balancer's health check sees
// /readyz fail before the gateway stops answering; a cancelled context (a
// second SIGTERM) cuts it short.
func TestDrainLastsAtLeastDrainMin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := New(launcher(t, nil, worker.LauncherOptions{}), Options{DrainMin: 6 * time.Second, Logger: testLogger(t)})
		require.NoError(t, err)
		defer func() { require.NoError(t, g.Close(context.Background())) }()

		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- g.Drain(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the drain ended at once (%v), before DrainMin", err)
		default:
		}
		assert.True(t, g.Draining())
		require.NoError(t, <-done)
		assert.Equal(t, 6*time.Second, time.Since(start), "the drain lasts DrainMin (the bubble's clock)")

		ctx, cancel := context.WithCancel(context.Background())
		start = time.Now()
		go func() { done <- g.Drain(ctx) }()
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		assert.Zero(t, time.Since(start), "a cancelled drain does not wait DrainMin out")
	})
}
