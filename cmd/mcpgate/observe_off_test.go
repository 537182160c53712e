package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
)

// newTestObservability builds serve's observability with metrics.listen
// at listen ("off" or a loopback address).
func newTestObservability(tb testing.TB, listen string) *observability {
	tb.Helper()
	cfg := config.Default()
	cfg.Metrics.Listen = listen
	o, err := newObservability(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = o.close(context.Background()) })
	return o
}

func scrape(t *testing.T, o *observability) string {
	t.Helper()
	rec := httptest.NewRecorder()
	o.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestMetricsOffCountsNothing: with metrics.listen off nobody can read the
// metrics, so a request is not counted and the metrics are no observer of
// the gateway's calls; with a listener both are.
func TestMetricsOffCountsNothing(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		listen string
		on     bool
	}{{config.MetricsOff, false}, {"127.0.0.1:0", true}} {
		t.Run(tc.listen, func(t *testing.T) {
			o := newTestObservability(t, tc.listen)
			o.handler(ok).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
			assert.Equal(t, tc.on, strings.Contains(scrape(t, o), "mcpgate_http_requests_total"))
			var opts gateway.Options
			o.gatewayOptions(&opts)
			assert.Equal(t, tc.on, len(opts.Observers) == 2, "observers: %v", opts.Observers)
		})
	}
}

// BenchmarkObservabilityHandler: what the main listener's wrapping costs a
// request, with metrics.listen off and on.
func BenchmarkObservabilityHandler(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, listen := range []string{config.MetricsOff, "127.0.0.1:0"} {
		b.Run("metrics="+strings.ReplaceAll(listen, ":", "_"), func(b *testing.B) {
			h := newTestObservability(b, listen).handler(ok)
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}
