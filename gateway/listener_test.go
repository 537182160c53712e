package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// Hostile tests of the connection cap: it must not be
// fillable without a token, and its refusal must be readable over TLS.

// tokenMiddleware is a stand-in for the authenticator: a request passes
// only with "Authorization: Bearer good".
func tokenMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitedGateway serves a gateway behind tokenMiddleware on a
// LimitListener with lo, the server's own timeouts long.
func limitedGateway(t *testing.T, opts Options, lo ListenerOptions) (*Gateway, *httptest.Server) {
	t.Helper()
	opts.Middleware = tokenMiddleware
	return newTestGatewayOn(t, opts, func(l net.Listener) net.Listener { return LimitListener(l, lo) },
		func(s *http.Server) {
			s.ConnContext = ConnContext
			s.IdleTimeout, s.ReadHeaderTimeout = time.Hour, time.Hour
		})
}

// exchange writes one request on c and reads its answer.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, req string) *http.Response {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	_, err := io.WriteString(c, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

const (
	unauthGET = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
	authGET   = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer good\r\nAccept: text/event-stream\r\n\r\n"
)

func TestUnauthenticatedConnectionsPerAddress(t *testing.T) {
	_, srv := limitedGateway(t, Options{}, ListenerOptions{MaxConnections: 100, MaxUnauthenticatedPerAddress: 2})
	addr := srv.Listener.Addr().String()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	a, abr := dial()
	assert.Equal(t, http.StatusUnauthorized, exchange(t, a, abr, unauthGET).StatusCode)
	b, bbr := dial()
	assert.Equal(t, http.StatusUnauthorized, exchange(t, b, bbr, unauthGET).StatusCode)

	// A third connection from this address without a token is refused.
	c, cbr := dial()
	resp := exchange(t, c, cbr, authGET)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a third unauthenticated connection from one address")

	// Once a has carried a token, it no longer counts: a new one is served.
	assert.Equal(t, http.StatusBadRequest, exchange(t, a, abr, authGET).StatusCode, "past the token: no session id")
	d, dbr := dial()
	assert.Equal(t, http.StatusBadRequest, exchange(t, d, dbr, authGET).StatusCode, "a connection after one authenticated")
}

func TestUnauthenticatedIdleTimeout(t *testing.T) {
	_, srv := limitedGateway(t, Options{KeepAliveInterval: 300 * time.Millisecond},
		ListenerOptions{UnauthenticatedIdleTimeout: 100 * time.Millisecond})
	addr := srv.Listener.Addr().String()

	// A connection that never carried a token is closed once idle for
	// the short timeout, although the server keeps others for an hour.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	assert.Equal(t, http.StatusUnauthorized, exchange(t, c, br, unauthGET).StatusCode)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle unauthenticated connection is closed by the gateway")

	// An authenticated stream outlives the short timeout: its keep-alive
	// comment, sent after it, arrives.
	sid := rawSessionWith(t, srv.URL, "Authorization", "Bearer good")
	s, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(s, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer good\r\nAccept: text/event-stream\r\nMCP-Session-Id: "+sid+"\r\n\r\n")
	require.NoError(t, err)
	sbr := bufio.NewReader(s)
	resp, err := http.ReadResponse(sbr, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := bufio.NewReader(resp.Body)
	for _, want := range []string{": ok", ": keep-alive"} {
		line, err := body.ReadString('\n')
		for err == nil && strings.TrimSpace(line) == "" {
			line, err = body.ReadString('\n')
		}
		require.NoError(t, err, "waiting for %q", want)
		assert.Equal(t, want, strings.TrimSpace(line))
	}
}

func TestOverCapTLSClosedCleanly(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Listener = LimitListener(inner, ListenerOptions{MaxConnections: 1, TLS: true})
	srv.StartTLS()
	defer srv.Close()

	cfg := &tls.Config{InsecureSkipVerify: true} // the test server's own certificate
	first, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
	require.NoError(t, err, "the first connection takes the only slot")
	defer first.Close()

	second, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
	if err == nil {
		second.Close()
		t.Fatal("a connection over the cap completed its handshake")
	}
	assert.NotContains(t, err.Error(), "first record does not look like a TLS handshake", "plain text written on a TLS port")
	assert.NotContains(t, err.Error(), "reset by peer", "closed without a clean FIN")
}

// TestOneTokenCannotHoldEveryConnection: behind the real authenticator,
// one principal's keep-alive connections stop at its share of
// max_connections, the next one answered 429 and closed; another user
// still connects, and the first gets a connection again once it lets one
// go.
func TestOneTokenCannotHoldEveryConnection(t *testing.T) {
	iss := authtest.New(t)
	a, err := auth.New(context.Background(), auth.Options{Issuer: iss.URL, Resource: accessResource,
		UserClaim: "preferred_username", RequiredScopes: readScopes, WriteScope: "mcp:write",
		HTTPClient: iss.Client(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	<-a.Ready()
	const total, share = 8, 4
	_, srv := newTestGatewayOn(t, Options{Middleware: a.Middleware},
		func(l net.Listener) net.Listener {
			return LimitListener(l, ListenerOptions{MaxConnections: total, MaxConnectionsPerPrincipal: share})
		},
		func(s *http.Server) {
			s.ConnContext = ConnContext
			s.IdleTimeout, s.ReadHeaderTimeout = time.Hour, time.Hour
		})
	token := func(user string) string {
		tok, err := iss.Keycloak(user, accessResource, readScopes...)
		require.NoError(t, err)
		return tok
	}
	mallory, bob := token("mallory"), token("bob")
	get := func(tok string) string {
		return "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + tok + "\r\nAccept: text/event-stream\r\n\r\n"
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	var held []net.Conn
	for range share {
		c, br := dial()
		require.Equal(t, http.StatusBadRequest, exchange(t, c, br, get(mallory)).StatusCode, "past the token: no session id")
		held = append(held, c)
	}
	for range total {
		c, br := dial()
		resp := exchange(t, c, br, get(mallory))
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a connection over the token's share")
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
		_, err := br.ReadByte()
		require.ErrorIs(t, err, io.EOF, "the refused connection is closed")
	}
	c, br := dial()
	assert.Equal(t, http.StatusBadRequest, exchange(t, c, br, get(bob)).StatusCode, "another user still connects")

	held[0].Close()
	require.Eventually(t, func() bool {
		c, br := dial()
		defer c.Close()
		return exchange(t, c, br, get(mallory)).StatusCode == http.StatusBadRequest
	}, 10*time.Second, 10*time.Millisecond, "a connection let go frees its place in the share")
}
