package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
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
