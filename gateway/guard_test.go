package gateway

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMiddlewareRunsAfterGuard pins the order of the chain: a forbidden
// Origin is refused before the middleware (authentication) sees the
// request, and an allowed one reaches it.
func TestMiddlewareRunsAfterGuard(t *testing.T) {
	var reached int
	deny := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached++
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="x"`)
			w.WriteHeader(http.StatusUnauthorized)
		})
	}
	_, srv := newTestGateway(t, Options{Middleware: deny})
	cases := []struct {
		name        string
		origin      string
		wantStatus  int
		wantReached int
	}{
		{"forbidden origin gets 403 before the middleware", "http://evil.example.com", http.StatusForbidden, 0},
		{"no origin reaches the middleware", "", http.StatusUnauthorized, 1},
		{"loopback origin reaches the middleware", "http://localhost:3000", http.StatusUnauthorized, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, _ := rawDo(t, http.MethodPost, srv.URL+"/mcp", initBody, "Origin", c.origin)
			if resp.StatusCode != c.wantStatus || reached != c.wantReached {
				t.Errorf("got status %d, middleware calls %d; want %d, %d", resp.StatusCode, reached, c.wantStatus, c.wantReached)
			}
		})
	}
}

// TestCORS checks that an allowed browser origin can read the session id
// and the challenge, and that its preflight is answered without credentials.
func TestCORS(t *testing.T) {
	_, srv := newTestGateway(t, Options{AllowedOrigins: []string{"https://app.example.com"}})
	url := srv.URL + "/mcp"

	resp, _ := rawDo(t, http.MethodOptions, url, "", "Origin", "https://app.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight: got %d, want 204", resp.StatusCode)
	}
	for name, want := range map[string]string{
		"Access-Control-Allow-Origin":  "https://app.example.com",
		"Access-Control-Allow-Methods": corsAllowMethods,
		"Access-Control-Allow-Headers": corsAllowHeaders,
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("preflight %s: got %q, want %q", name, got, want)
		}
	}

	// A 2026-07-28 browser client mirrors x-mcp-header arguments in
	// Mcp-Param-* headers, which CORS cannot allow by prefix.
	resp, _ = rawDo(t, http.MethodOptions, url, "", "Origin", "https://app.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "mcp-method, mcp-name, mcp-param-region, x-other, mcp-param-bad(")
	if got, want := resp.Header.Get("Access-Control-Allow-Headers"), corsAllowHeaders+", mcp-param-region"; got != want {
		t.Errorf("preflight with Mcp-Param-*: got %q, want %q", got, want)
	}

	resp, _ = rawDo(t, http.MethodPost, url, initBody, "Origin", "https://app.example.com")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize from an allowed origin: got %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, "MCP-Session-Id") {
		t.Errorf("Access-Control-Expose-Headers: got %q, want it to name MCP-Session-Id", got)
	}

	resp, _ = rawDo(t, http.MethodOptions, url, "", "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from a forbidden origin: got %d with ACAO %q, want 403 without", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	resp, _ = rawDo(t, http.MethodOptions, url, "")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("OPTIONS without CORS: got %d, want 405", resp.StatusCode)
	}
}

// TestLimitListener holds the only slot with one connection and checks that
// the next is answered 503 and closed, and that closing the first frees it.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Listener = LimitListener(inner, ListenerOptions{MaxConnections: 1})
	srv.Start()
	defer srv.Close()

	first, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// One full request and answer: the server has accepted first.
	if _, err := first.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(first), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first connection: got %v, %v; want 200", resp, err)
	}

	second, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second connection: got %v, %v; want 503 with Retry-After", resp, err)
	}
	second.Close()

	first.Close()
	// The slot frees when the server notices the close; a new connection
	// is then served. Retry until it is (bounded by the test's deadline).
	for {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			return
		}
	}
}

// TestAllowedHosts checks that a loopback listener behind a same-machine
// reverse proxy accepts the public name the proxy forwards, and only it.
func TestAllowedHosts(t *testing.T) {
	_, srv := newTestGateway(t, Options{LoopbackHostCheck: true, AllowedHosts: []string{"mcp.example.com"}})
	for _, c := range []struct {
		host string
		want int
	}{
		{"mcp.example.com", http.StatusOK},
		{"MCP.example.com:443", http.StatusOK},
		{"evil.example.com", http.StatusForbidden},
		{"mcp.example.com.evil.net", http.StatusForbidden},
		// One loopback rule (auth.IsLoopbackHost): only "localhost" and
		// loopback IP literals, as config's listen check always had it.
		{"localhost:8000", http.StatusOK},
		{"[::1]:8000", http.StatusOK},
		{"app.localhost:8000", http.StatusForbidden},
		{"localhost.:8000", http.StatusForbidden},
	} {
		t.Run(c.host, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(initBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("Host %s: got %d, want %d", c.host, resp.StatusCode, c.want)
			}
		})
	}
}
