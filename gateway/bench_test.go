package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`

// BenchmarkForward measures the forward path: a tools/call POST in, through
// the session table and the id rewriting to the stub worker's stdin, and its
// answer out of the worker's stdout as application/json. The handler is
// called directly, so allocations are the gateway's (plus the recorder's),
// not an HTTP client's; "parallel" runs many calls in flight on one session.
// The "echo-<size>" cases go over real loopback HTTP with a growing result,
// to show how the cost grows with the bytes the gateway passes through.
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
	for _, size := range []int{16, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("echo-%dB", size), func(b *testing.B) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`,
				strings.Repeat("x", size))
			b.ReportAllocs()
			b.SetBytes(int64(2 * size)) // the text goes in and comes back
			for b.Loop() {
				resp, out := rawDo(b, http.MethodPost, srv.URL, body, sidHdr, sid, protoHdr, "2025-11-25")
				if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"id":7`) {
					b.Fatalf("got %d %.200s, want 200 and the answer to id 7", resp.StatusCode, out)
				}
			}
		})
	}
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
