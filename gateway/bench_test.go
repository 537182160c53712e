package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
			for _, uw := range g.liveBindings(userGen) {
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

// relaySizes are the result sizes of BenchmarkRelay: 1 KiB shows what a
// call costs whatever its size.
var relaySizes = []int{1 << 10, 1 << 20, 16 << 20}

// BenchmarkRelay measures the relay of a large result (docs/benchmarks.md, Targets):
// the stub worker answers a tools/call "blob" with a pre-built result of
// the size, which the client reads over loopback HTTP. "baseline" is the
// same worker and client with no gateway between them: a handler that
// writes the request to the worker's stdin and copies its stdout line to
// the response as it comes, so the gateway's own cost is "json" (or "sse",
// where a progress notification first turns the response into an event
// stream) less "baseline", in the same run.
func BenchmarkRelay(b *testing.B) {
	for _, size := range relaySizes {
		name := fmt.Sprintf("%dMiB", size>>20)
		if size < 1<<20 {
			name = fmt.Sprintf("%dKiB", size>>10)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"blob","arguments":{"size":%d}}}`, size)
		sseBody := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"blob","arguments":{"size":%d},"_meta":{"progressToken":"p"}}}`, size)
		b.Run("baseline/"+name, func(b *testing.B) {
			url := relayBaseline(b)
			benchRelay(b, url, body, "application/json", size)
		})
		_, srv := newTestGateway(b, Options{})
		sid := rawSession(b, srv.URL)
		b.Run("json/"+name, func(b *testing.B) {
			benchRelay(b, srv.URL, body, "application/json", size, sidHdr, sid, protoHdr, "2025-11-25")
		})
		b.Run("sse/"+name, func(b *testing.B) {
			benchRelay(b, srv.URL, sseBody, "text/event-stream", size, sidHdr, sid, protoHdr, "2025-11-25")
		})
	}
}

// benchRelay posts body to url b.N times and reads each answer through,
// checking its content type, its start and that it holds at least size
// bytes.
func benchRelay(b *testing.B, url, body, ctype string, size int, headers ...string) {
	client := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(client.CloseIdleConnections)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	head := make([]byte, 512)
	cpu0 := processCPU()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.ReadFull(resp.Body, head)
		rest, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype ||
			!bytes.Contains(head[:n], []byte(`"id":7`)) && !bytes.Contains(head[:n], []byte(`"progressToken":"p"`)) || int(rest)+n < size {
			b.Fatalf("got %d %s, %d bytes: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), int(rest)+n, head[:n])
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
}

// processCPU returns the CPU time (user and system) this process has used,
// in nanoseconds: the client's and the gateway's (or the baseline's
// handler's), not the worker's.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// relayBaseline serves the stub worker with no gateway: each POST's body
// goes to the worker's stdin as it is, and the worker's next line comes
// back as the response, copied as it is read. It returns the server's URL.
func relayBaseline(b *testing.B) string {
	cmd := exec.Command(stubWorker)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	r := bufio.NewReaderSize(out, 64<<10)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		defer mu.Unlock()
		if _, err := in.Write(append(body, '\n')); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		for {
			chunk, err := r.ReadSlice('\n')
			w.Write(bytes.TrimSuffix(chunk, []byte("\n")))
			if err != bufio.ErrBufferFull {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
