package certs

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestWriteSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	certPath, keyPath, err := WriteSelfSigned(dir, nil, now)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "cert.pem"), certPath)
	assert.Equal(t, filepath.Join(dir, "key.pem"), keyPath)

	for path, mode := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: got mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), mode)
		}
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	require.NoError(t, err)
	cert := pair.Leaf
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok, "got %T, want an ECDSA key", cert.PublicKey)
	assert.Equal(t, elliptic.P256(), pub.Curve)
	assert.Equal(t, []string{"localhost"}, cert.DNSNames)
	require.Len(t, cert.IPAddresses, 2)
	assert.True(t, cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))
	assert.True(t, cert.IPAddresses[1].Equal(net.ParseIP("::1")))
	assert.True(t, cert.NotBefore.Before(now) && cert.NotAfter.After(now.Add(300*24*time.Hour)))
	// It verifies as its own root for each default host.
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	for _, h := range DefaultHosts {
		_, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: now})
		assert.NoError(t, err, h)
	}

	// Custom hosts, and writing again replaces the pair.
	_, _, err = WriteSelfSigned(dir, []string{"mcp.internal", "10.0.0.7"}, now)
	require.NoError(t, err)
	pair2, err := tls.LoadX509KeyPair(certPath, keyPath)
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp.internal"}, pair2.Leaf.DNSNames)
	assert.NotEqual(t, cert.SerialNumber, pair2.Leaf.SerialNumber)
}

// newReloader writes a development pair into a temporary directory and
// loads it.
func newReloader(t *testing.T) (r *Reloader, dir, certFile, keyFile string) {
	t.Helper()
	dir = t.TempDir()
	certFile, keyFile, err := WriteSelfSigned(dir, nil, time.Now())
	require.NoError(t, err)
	r, err = NewReloader(certFile, keyFile, quiet)
	require.NoError(t, err)
	return r, dir, certFile, keyFile
}

// tlsServer serves handler with ServerTLSConfig(r) on a loopback port.
func tlsServer(t *testing.T, r *Reloader, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: handler, TLSConfig: ServerTLSConfig(r), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeTLS(ln, "", "")
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// pool trusts every certificate file given.
func pool(t *testing.T, files ...string) *x509.CertPool {
	p := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, p.AppendCertsFromPEM(b))
	}
	return p
}

func serial(t *testing.T, certFile string) string {
	b, err := os.ReadFile(certFile)
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c.SerialNumber.String()
}

// get fetches url and returns the serial of the server certificate and
// whether the connection was reused.
func get(t *testing.T, c *http.Client, url string) (string, bool) {
	t.Helper()
	var reused bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp.TLS.PeerCertificates[0].SerialNumber.String(), reused
}

func TestReloadKeepsOpenConnections(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := WriteSelfSigned(dir, nil, time.Now())
	require.NoError(t, err)
	first := serial(t, certFile)
	// Keep a copy of the first certificate to trust it after the swap.
	firstCopy := filepath.Join(t.TempDir(), "first.pem")
	b, _ := os.ReadFile(certFile)
	require.NoError(t, os.WriteFile(firstCopy, b, 0o644))

	r, err := NewReloader(certFile, keyFile, quiet)
	require.NoError(t, err)
	addr := tlsServer(t, r, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	url := "https://" + addr + "/"

	dir2 := t.TempDir()
	second2, _, err := WriteSelfSigned(dir2, nil, time.Now())
	require.NoError(t, err)
	roots := pool(t, firstCopy, second2)
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer old.CloseIdleConnections()

	got, _ := get(t, old, url)
	require.Equal(t, first, got)

	// Renew: move the second pair into place and reload.
	for _, n := range []string{CertFileName, KeyFileName} {
		b, err := os.ReadFile(filepath.Join(dir2, n))
		require.NoError(t, err)
		require.NoError(t, writeAtomic(filepath.Join(dir, n), b, 0o600))
	}
	require.NoError(t, r.Reload())
	second := serial(t, certFile)
	require.NotEqual(t, first, second)

	// The open connection survives and keeps its certificate.
	got, reused := get(t, old, url)
	assert.True(t, reused, "the open connection was dropped")
	assert.Equal(t, first, got)

	// A new connection gets the new certificate.
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer fresh.CloseIdleConnections()
	got, _ = get(t, fresh, url)
	assert.Equal(t, second, got)
}

func TestFailedReloadKeepsCertificate(t *testing.T) {
	r, dir, certFile, _ := newReloader(t)
	before, _ := r.GetCertificate(nil)

	require.NoError(t, os.WriteFile(certFile, []byte("not a certificate"), 0o644))
	require.Error(t, r.Reload())
	after, _ := r.GetCertificate(nil)
	assert.Same(t, before, after)

	// A mismatched key is refused too.
	_, otherKey, err := WriteSelfSigned(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	_, _, err = WriteSelfSigned(dir, nil, time.Now())
	require.NoError(t, err)
	r2, err := NewReloader(certFile, otherKey, quiet)
	assert.Error(t, err)
	assert.Nil(t, r2)
}

// watch runs Watch with a hook on every reload and returns once Watch
// listens for SIGHUP.
func watch(t *testing.T, r *Reloader, interval time.Duration) <-chan error {
	t.Helper()
	reloads := make(chan error, 16)
	listening := make(chan struct{})
	r.reloaded = func(err error) { reloads <- err }
	r.watching = func() { close(listening) }
	r.PollInterval = interval
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Watch(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	<-listening
	return reloads
}

// awaitReload waits for a successful reload. A poll may catch a renewal
// half done (new key, old certificate); that attempt fails and is retried.
func awaitReload(t *testing.T, reloads <-chan error) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case err := <-reloads:
			if err == nil {
				return
			}
		case <-timeout:
			t.Fatal("no successful reload happened")
		}
	}
}

func TestWatchReloadsOnChange(t *testing.T) {
	r, dir, certFile, _ := newReloader(t)
	reloads := watch(t, r, 10*time.Millisecond)

	_, _, err := WriteSelfSigned(dir, nil, time.Now())
	require.NoError(t, err)
	awaitReload(t, reloads)
	c, _ := r.GetCertificate(nil)
	assert.Equal(t, serial(t, certFile), c.Leaf.SerialNumber.String())
}

func TestWatchReloadsOnSIGHUP(t *testing.T) {
	r, dir, certFile, _ := newReloader(t)
	reloads := watch(t, r, time.Hour) // no poll within the test: only the signal

	_, _, err := WriteSelfSigned(dir, nil, time.Now())
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	awaitReload(t, reloads)
	c, _ := r.GetCertificate(nil)
	assert.Equal(t, serial(t, certFile), c.Leaf.SerialNumber.String())
}

func TestPlainHTTPRefused(t *testing.T) {
	r, _, _, _ := newReloader(t)
	var ran atomic.Bool
	addr := tlsServer(t, r, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) }))

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(status, "HTTP/1.0 400"), "got status line %q, want 400", status)
	assert.False(t, ran.Load(), "the handler ran for a plain-HTTP request")
}

func TestMinVersion(t *testing.T) {
	r, _, certFile, _ := newReloader(t)
	require.Equal(t, uint16(tls.VersionTLS12), ServerTLSConfig(r).MinVersion)
	addr := tlsServer(t, r, http.NotFoundHandler())
	roots := pool(t, certFile)
	for _, tc := range []struct {
		name    string
		max     uint16
		wantErr bool
	}{
		{"TLS 1.1 refused", tls.VersionTLS11, true},
		{"TLS 1.2 accepted", tls.VersionTLS12, false},
		{"TLS 1.3 accepted", tls.VersionTLS13, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
				&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tc.max})
			if c != nil {
				c.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("got error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestClientTrusting(t *testing.T) {
	r, _, certFile, keyFile := newReloader(t)
	addr := tlsServer(t, r, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	c, err := ClientTrusting(certFile)
	require.NoError(t, err)
	resp, err := c.Get("https://" + addr + "/")
	require.NoError(t, err)
	resp.Body.Close()
	_, err = ClientTrusting(keyFile)
	assert.Error(t, err, "a key file holds no certificate")
}

// TestNotAfter: the served certificate's expiry, for the metrics.
func TestNotAfter(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	certPath, keyPath, err := WriteSelfSigned(t.TempDir(), nil, now)
	require.NoError(t, err)
	r, err := NewReloader(certPath, keyPath, nil)
	require.NoError(t, err)
	data, err := os.ReadFile(certPath)
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, leaf.NotAfter, r.NotAfter())
	assert.True(t, r.NotAfter().After(now))
}
