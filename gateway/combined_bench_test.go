package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// BenchmarkCombined compares a 2026-07-28 tools/call through the combined
// endpoint (sdk__echo) against the same call through the server's own
// gateway (echo), each behind its own authenticator (the combined
// endpoint's audience and the server's), in one run: the calls take
// turns, and each is timed around the handler alone. It reports each
// median and their difference, what the combined endpoint adds to a call
// (p50-combined-over-direct-µs), and the median of the two calls'
// difference within a turn (p50-turn-diff-µs).
func BenchmarkCombined(b *testing.B) {
	iss := authtest.New(b)
	newAuth := func(resource string) *auth.Authenticator {
		return testAuthenticator(b, iss, auth.Options{Resource: resource, RequiredScopes: []string{"mcp:use"}})
	}
	memberResource := accessResource + "/sdk"
	g := commandMember(b, []string{sdkWorker}, "echo")
	direct := newAuth(memberResource).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serveMCP(w, r)
	}))
	c, err := NewCombined([]Member{
		{Name: "db", Gateway: commandMember(b, []string{sdkWorker}, "echo"), Rights: combinedRights("db")},
		{Name: "sdk", Gateway: g, Rights: combinedRights("sdk")},
	}, Options{Logger: testLogger(b), Middleware: newAuth(accessResource).Middleware})
	if err != nil {
		b.Fatal(err)
	}
	tokFor := func(resource string) string {
		tok, err := iss.Sign(iss.KeycloakClaims("alice", resource, "mcp:use", "sdk:use", "db:use"), authtest.SignOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	directTok, combinedTok := tokFor(memberResource), tokFor(accessResource)

	call := func(h http.Handler, tok, tool string) (*httptest.ResponseRecorder, time.Duration) {
		body := modernBody("1", "tools/call", `"name":"`+tool+`","arguments":{"text":"hi"}`)
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(protoHdr, modernVersion)
		req.Header.Set(methodHdr, "tools/call")
		req.Header.Set(nameHdr, tool)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		return rec, time.Since(start)
	}
	// Both reach the same per-user worker, started before the clock runs.
	for _, warm := range []func() (*httptest.ResponseRecorder, time.Duration){
		func() (*httptest.ResponseRecorder, time.Duration) { return call(direct, directTok, "echo") },
		func() (*httptest.ResponseRecorder, time.Duration) { return call(c, combinedTok, "sdk__echo") },
	} {
		if rec, _ := warm(); rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"hi"`)) {
			b.Fatalf("warm-up call: got %d %s", rec.Code, rec.Body)
		}
	}
	var td, tc []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		rec, d := call(direct, directTok, "echo")
		if rec.Code != http.StatusOK {
			b.Fatalf("direct call: got %d %s", rec.Code, rec.Body)
		}
		td = append(td, d)
		rec, d = call(c, combinedTok, "sdk__echo")
		if rec.Code != http.StatusOK {
			b.Fatalf("combined call: got %d %s", rec.Code, rec.Body)
		}
		tc = append(tc, d)
	}
	// The calls of one turn ran under the same load: their difference,
	// at the median, is steadier on a busy machine than the difference
	// of the medians.
	diffs := make([]time.Duration, len(td))
	for i := range td {
		diffs[i] = tc[i] - td[i]
	}
	b.ReportMetric(medianMicros(diffs), "p50-turn-diff-µs")
	pd, pc := medianMicros(td), medianMicros(tc)
	b.ReportMetric(pd, "p50-direct-µs")
	b.ReportMetric(pc, "p50-combined-µs")
	b.ReportMetric(pc-pd, "p50-combined-over-direct-µs")
}
