package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/worker"
)

// BenchmarkForward is the gateway's forward path, request in and answer
// out, over real HTTP to a real worker process (this test binary serving the
// echo tool): one tools/call per iteration on one session, with raw HTTP so
// that the client side allocates little next to the gateway. The sizes show
// how the cost grows with the result, which the gateway decodes and encodes
// again to rewrite its id.
func BenchmarkForward(b *testing.B) {
	g, err := gateway.New(echoLauncher(b), gateway.Options{
		LoopbackHostCheck: true,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(g)
	b.Cleanup(func() {
		hs.Close()
		_ = g.Close(context.Background())
	})
	sid := rawInitialize(b, hs.URL)
	for _, size := range []int{16, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("echo-%dB", size), func(b *testing.B) {
			body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`,
				strings.Repeat("x", size)))
			b.ReportAllocs()
			b.SetBytes(int64(2 * size)) // the text goes in and comes back
			for b.Loop() {
				code, out := rawPost(b, hs.URL, sid, body)
				if code != http.StatusOK || !bytes.Contains(out, []byte(`"id":7`)) {
					b.Fatalf("got %d %.200s, want 200 and the answer to id 7", code, out)
				}
			}
		})
	}
}

// rawInitialize opens a session with plain HTTP and returns its id.
func rawInitialize(tb testing.TB, url string) string {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocolVersion+`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	setMCPHeaders(req, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: got %d and session %q, want 200 and an id", resp.StatusCode, sid)
	}
	if code, out := rawPost(tb, url, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); code != http.StatusAccepted {
		tb.Fatalf("initialized: got %d %s, want 202", code, out)
	}
	return sid
}

func rawPost(tb testing.TB, url, sid string, body []byte) (int, []byte) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	setMCPHeaders(req, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, out
}

func setMCPHeaders(req *http.Request, sid string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
}

// echoLauncher starts this test binary as the worker, serving the echo tool.
func echoLauncher(tb testing.TB) *worker.Launcher {
	l, err := worker.NewLauncher([]string{os.Args[0]}, worker.LauncherOptions{Env: []string{"MCPBENCH_TEST_STDIO_SERVER=1"}})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// The benchmark's helpers are checked by a test too, so that a change in
// the gateway that breaks them fails `go test` rather than only -bench.
func TestForwardHelpers(t *testing.T) {
	g, err := gateway.New(echoLauncher(t), gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(g)
	defer func() {
		hs.Close()
		_ = g.Close(context.Background())
	}()
	sid := rawInitialize(t, hs.URL)
	code, out := rawPost(t, hs.URL, sid, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`))
	if code != http.StatusOK || !bytes.Contains(out, []byte(`"id":7`)) || !bytes.Contains(out, []byte(`hi`)) {
		t.Errorf("got %d %s, want 200 and the echo answer to id 7", code, out)
	}
}
