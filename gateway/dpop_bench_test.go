package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// BenchmarkDPoP compares a tools/call on a session opened with a
// DPoP-bound token, with a fresh proof on every call, against the same
// call on a session opened with a Bearer token, in one run: the calls take
// turns, and each is timed around the gateway's handler alone (the client
// makes its proof before the clock starts). It reports each median and
// their difference, the cost of checking a proof: p50-dpop-over-bearer-µs.
func BenchmarkDPoP(b *testing.B) {
	iss := authtest.New(b)
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: iss.URL, Resource: accessResource, UserClaim: "preferred_username",
		RequiredScopes: readScopes, WriteScope: "mcp:write",
		HTTPClient: iss.Client(), Logger: testLogger(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close() })
	<-a.Ready()
	g, _ := newTestGateway(b, Options{Middleware: a.Middleware})
	key := authtest.MustDPoPKey(b, "ES256")
	bearer, err := iss.Keycloak("alice", accessResource, writeScopes...)
	if err != nil {
		b.Fatal(err)
	}
	bound, err := iss.KeycloakDPoP(key, "alice", accessResource, writeScopes...)
	if err != nil {
		b.Fatal(err)
	}

	// call sends body on session sid (none when empty) and times the
	// handler; proof, when set, makes the call a DPoP one.
	call := func(sid, tok, body string, proof bool) (*httptest.ResponseRecorder, time.Duration) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(protoHdr, "2025-11-25")
		if sid != "" {
			req.Header.Set(sidHdr, sid)
		}
		if proof {
			req.Header.Set("Authorization", "DPoP "+tok)
			req.Header.Set("DPoP", key.Proof(http.MethodPost, accessResource, tok, "", time.Now()))
		} else {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		start := time.Now()
		g.ServeHTTP(rec, req)
		return rec, time.Since(start)
	}
	open := func(tok string, proof bool) string {
		rec, _ := call("", tok, initBody, proof)
		if rec.Code != http.StatusOK {
			b.Fatalf("initialize: got %d %s", rec.Code, rec.Body)
		}
		sid := rec.Header().Get(sidHdr)
		call(sid, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, proof)
		return sid
	}
	bearerSID, dpopSID := open(bearer, false), open(bound, true)

	var tb, td []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		rec, d := call(bearerSID, bearer, benchCall, false)
		if rec.Code != http.StatusOK {
			b.Fatalf("bearer call: got %d %s", rec.Code, rec.Body)
		}
		tb = append(tb, d)
		rec, d = call(dpopSID, bound, benchCall, true)
		if rec.Code != http.StatusOK {
			b.Fatalf("DPoP call: got %d %s", rec.Code, rec.Body)
		}
		td = append(td, d)
	}
	pb, pd := medianMicros(tb), medianMicros(td)
	b.ReportMetric(pb, "p50-bearer-µs")
	b.ReportMetric(pd, "p50-dpop-µs")
	b.ReportMetric(pd-pb, "p50-dpop-over-bearer-µs")
}

// medianMicros is the median of ds in microseconds; it sorts ds.
func medianMicros(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Microsecond)
}
