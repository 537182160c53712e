package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`

// BenchmarkForward measures the forward path: a tools/call POST in, through
// the session table and the id rewriting to the stub worker's stdin, and its
// answer out of the worker's stdout as application/json. The handler is
// called directly, so allocations are the gateway's (plus the recorder's),
// not an HTTP client's; "parallel" runs many calls in flight on one session.
func BenchmarkForward(b *testing.B) {
	g, srv := newTestGateway(b, Options{})
	sid := rawSession(b, srv.URL)
	call := func() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(benchCall)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sidHdr, sid)
		req.Header.Set(protoHdr, "2025-11-25")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"hello"`)) {
			b.Fatalf("got %d %s", rec.Code, rec.Body)
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
	})
}

// BenchmarkForwardHTTP is the same path over a real loopback connection.
func BenchmarkForwardHTTP(b *testing.B) {
	_, srv := newTestGateway(b, Options{})
	sid := rawSession(b, srv.URL)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(benchCall)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(sidHdr, sid)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("got %d", resp.StatusCode)
			}
		}
	})
}
