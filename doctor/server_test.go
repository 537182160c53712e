package doctor

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/config"
)

type serverFixture struct {
	cfg   *config.Config
	iss   *authtest.Issuer
	opts  ServerOptions
	dir   string
	certs string
}

func newServerFixture(t *testing.T) *serverFixture {
	dir := t.TempDir()
	iss := authtest.New(t)
	ca := filepath.Join(dir, "issuer-ca.pem")
	require.NoError(t, os.WriteFile(ca, iss.CertPEM(), 0o644))
	certFile, keyFile, err := certs.WriteSelfSigned(filepath.Join(dir, "certs"), certs.DefaultHosts, time.Now())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)

	cfg := config.Default()
	cfg.Server.Listen = addr
	cfg.Server.PublicURL = "https://localhost:" + port
	cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
	cfg.Auth.Issuer, cfg.Auth.IssuerCAFile = iss.URL, ca
	cfg.Auth.RequiredScopes = []string{"mcp:use"}
	cfg.Database.Path = filepath.Join(dir, "data.db")

	pem, err := os.ReadFile(certFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return &serverFixture{cfg: cfg, iss: iss, opts: ServerOptions{Roots: roots}, dir: dir, certs: filepath.Join(dir, "certs")}
}

func (f *serverFixture) check(t *testing.T) *Report {
	r := CheckServer(context.Background(), f.cfg, f.opts)
	var b strings.Builder
	r.Print(&b)
	t.Logf("doctor:\n%s", b.String())
	return r
}

func TestDoctorServerHealthy(t *testing.T) {
	f := newServerFixture(t)
	r := f.check(t)
	assert.False(t, r.Failed())
	for _, c := range []string{"config", "listen", "tls expiry", "tls names", "tls chain", "audience", "issuer discovery", "jwks", "algorithms", "clock"} {
		got, ok := r.Find(c)
		if assert.True(t, ok, c) {
			assert.Equal(t, OK, got.Status, "%s: %s", c, got.Detail)
		}
	}
}

func TestDoctorServerNamesEachBrokenSetting(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		status      Status
		break_      func(t *testing.T, f *serverFixture)
		fix         string
	}{
		{"invalid config", "config", Fail, func(t *testing.T, f *serverFixture) { f.cfg.Server.PublicURL = "" }, "docs/configuration.md"},
		// The running gateway holds its port while doctor checks its
		// configuration: in use is a warning, not a failure.
		{"port in use", "listen", Warn, func(t *testing.T, f *serverFixture) {
			ln, err := net.Listen("tcp", f.cfg.Server.Listen)
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
		}, "server.listen"},
		{"not this machine's address", "listen", Fail, func(t *testing.T, f *serverFixture) {
			f.cfg.Server.Listen = "192.0.2.1:8443" // TEST-NET-1
		}, "server.listen"},
		{"unreadable key", "tls certificate", Fail, func(t *testing.T, f *serverFixture) {
			require.NoError(t, os.WriteFile(f.cfg.TLS.KeyFile, []byte("not a key"), 0o600))
		}, "tls.key_file"},
		{"worker does not start", "worker", Fail, func(t *testing.T, f *serverFixture) {
			f.opts.Worker = func(context.Context, bool) (string, error) { return "", errors.New("exit status 1") }
		}, "mcpgate worker"},
		{"expired certificate", "tls expiry", Fail, func(t *testing.T, f *serverFixture) {
			c, k, err := certs.WriteSelfSigned(filepath.Join(f.dir, "old"), certs.DefaultHosts, time.Now().AddDate(-2, 0, 0))
			require.NoError(t, err)
			f.cfg.TLS.CertFile, f.cfg.TLS.KeyFile = c, k
		}, "renew"},
		{"certificate for another host", "tls names", Fail, func(t *testing.T, f *serverFixture) {
			f.cfg.Server.PublicURL = "https://mcp.example.com"
		}, "mcpgate certs --host"},
		{"self-signed", "tls chain", Warn, func(t *testing.T, f *serverFixture) { f.opts.Roots = x509.NewCertPool() }, "--ca-file"},
		{"issuer down", "issuer discovery", Fail, func(t *testing.T, f *serverFixture) { f.iss.Stop() }, "auth.issuer"},
		{"algorithms disjoint", "algorithms", Fail, func(t *testing.T, f *serverFixture) { f.cfg.Auth.Algorithms = []string{"ES384"} }, "auth.algorithms"},
		{"clock off", "clock", Fail, func(t *testing.T, f *serverFixture) {
			f.opts.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
		}, "NTP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newServerFixture(t)
			tc.break_(t, f)
			r := f.check(t)
			got, ok := r.Find(tc.check)
			require.True(t, ok, "no %q finding", tc.check)
			assert.Equal(t, tc.status, got.Status, got.Detail)
			assert.Contains(t, got.Fix, tc.fix)
		})
	}
}
