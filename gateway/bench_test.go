package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/auth"
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

// BenchmarkModern measures 2026-07-28 requests: 64 concurrent stateless
// clients (tools/call echo, no session) of one user, who share one worker,
// and of 16 users, with a worker each, against the go-sdk sdkworker. It
// reports the median latency besides ns/op (the inverse of calls/s).
func BenchmarkModern(b *testing.B) {
	body := []byte(modernBody("1", "tools/call", `"name":"echo","arguments":{"text":"hello"}`))
	for _, users := range []int{1, 16} {
		b.Run(strconv.Itoa(users)+"users", func(b *testing.B) {
			g, _ := newTestGatewayOf(b, []string{sdkWorker}, Options{MaxSessionsPerUser: 4})
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			call := func(user int) {
				req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set(protoHdr, "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "echo")
				u := "u" + strconv.Itoa(user)
				req = req.WithContext(auth.WithPrincipal(req.Context(), &auth.Principal{Issuer: "i", Subject: u, UserID: u}))
				rec := httptest.NewRecorder()
				start := time.Now()
				g.ServeHTTP(rec, req)
				d := time.Since(start)
				if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"hello"`)) {
					b.Errorf("got %d %s", rec.Code, rec.Body)
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
			for u := range users { // start the workers outside the timing
				call(u)
			}
			lat = nil
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				user := int(next.Add(1)) % users
				for pb.Next() {
					call(user)
				}
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			}
			b.ReportMetric(float64(g.PerUserWorkers()), "workers")
			// Memory per active user: the resident set of the user's worker.
			var rss int64
			for _, uw := range g.readyWorkers() {
				rss += residentKiB(uw.conn.Pid())
			}
			b.ReportMetric(float64(rss)/float64(users), "worker-RSS-KiB/user")
		})
	}
}

// residentKiB returns a process's VmRSS from /proc, in KiB (0 when gone).
func residentKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
