package auth_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// clientCerts makes a CA and two client certificates, A and B, and
// returns them with A's thumbprint.
func clientCerts(t *testing.T) (*authtest.ClientCA, tls.Certificate, tls.Certificate, string) {
	t.Helper()
	ca, err := authtest.NewClientCA()
	require.NoError(t, err)
	a, tpA, err := ca.Client("a")
	require.NoError(t, err)
	b, _, err := ca.Client("b")
	require.NoError(t, err)
	return ca, a, b, tpA
}

// TestCertificateBoundTokens: a token bound to certificate A (cnf.x5t#S256)
// is accepted over a TLS connection that presented A, and refused over one
// that presented B or none; a trusted proxy may name the certificate in a
// Client-Cert header, anyone else may not.
func TestCertificateBoundTokens(t *testing.T) {
	ca, certA, certB, tpA := clientCerts(t)
	e := setup(t, func(o *auth.Options) { o.MTLS.Enabled = true })
	claims := e.iss.KeycloakClaims("alice", resource, full...)
	claims["cnf"] = map[string]any{"x5t#S256": tpA}
	tok := mint(t)(e.iss.Sign(claims, authtest.SignOptions{}))

	srv := httptest.NewUnstartedServer(e.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}
	srv.StartTLS()
	defer srv.Close()
	over := func(certs ...tls.Certificate) int {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = certs
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusNoContent, over(certA), "over certificate A")
	assert.Equal(t, http.StatusUnauthorized, over(certB), "over certificate B")
	assert.Equal(t, http.StatusUnauthorized, over(), "without a certificate")

	r := request("Bearer " + tok)
	r.RemoteAddr = "10.0.0.7:4711"
	r.Header.Set("Client-Cert", ":"+base64.StdEncoding.EncodeToString(certA.Certificate[0])+":")
	_, err := e.a.Authenticate(r)
	assert.ErrorIs(t, err, auth.ErrCertMissing, "a Client-Cert header from an address nobody trusts")

	rec := httptest.NewRecorder()
	e.a.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	assert.Equal(t, true, doc["tls_client_certificate_bound_access_tokens"])
}

// TestCertificateFromTrustedProxy: behind a proxy that terminates TLS, the
// certificate comes in the proxy's Client-Cert header (RFC 9440), read only
// from the configured proxy addresses.
func TestCertificateFromTrustedProxy(t *testing.T) {
	_, certA, certB, tpA := clientCerts(t)
	e := setup(t, func(o *auth.Options) {
		o.MTLS = auth.MTLS{Enabled: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}
	})
	claims := e.iss.KeycloakClaims("alice", resource, full...)
	claims["cnf"] = map[string]any{"x5t#S256": tpA}
	tok := mint(t)(e.iss.Sign(claims, authtest.SignOptions{}))
	header := func(c tls.Certificate) string { return ":" + base64.StdEncoding.EncodeToString(c.Certificate[0]) + ":" }
	for _, tc := range []struct {
		name, remote string
		certs        []string
		want         error
	}{
		{"the proxy, certificate A", "10.0.0.7:4711", []string{header(certA)}, nil},
		{"the proxy, certificate B", "10.0.0.7:4711", []string{header(certB)}, auth.ErrCertMismatch},
		{"the proxy, no header", "10.0.0.7:4711", nil, auth.ErrCertMissing},
		{"the proxy, two headers", "10.0.0.7:4711", []string{header(certA), header(certA)}, auth.ErrCertMissing},
		{"the proxy, not a byte sequence", "10.0.0.7:4711", []string{base64.StdEncoding.EncodeToString(certA.Certificate[0])}, auth.ErrCertMissing},
		{"another address, certificate A", "10.0.1.7:4711", []string{header(certA)}, auth.ErrCertMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("Bearer " + tok)
			r.RemoteAddr = tc.remote
			for _, c := range tc.certs {
				r.Header.Add("Client-Cert", c)
			}
			_, err := e.a.Authenticate(r)
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
}

// TestCertificateHostile: a malformed Client-Cert from a trusted proxy is
// no certificate; a request over TLS with its own client certificate is
// judged by it, whatever header a trusted address adds; a token bound to
// a certificate and a DPoP key needs both.
func TestCertificateHostile(t *testing.T) {
	_, certA, certB, tpA := clientCerts(t)
	e := setup(t, func(o *auth.Options) {
		o.MTLS = auth.MTLS{Enabled: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}
	})
	claims := e.iss.KeycloakClaims("alice", resource, full...)
	claims["cnf"] = map[string]any{"x5t#S256": tpA}
	tok := mint(t)(e.iss.Sign(claims, authtest.SignOptions{}))
	der := base64.StdEncoding.EncodeToString(certA.Certificate[0])
	for name, v := range map[string]string{
		"empty byte sequence": "::",
		"not base64":          ":!!" + der[2:] + ":",
		"URL-safe base64":     ":" + strings.NewReplacer("+", "-", "/", "_").Replace(der) + ":",
		"one colon":           ":" + der,
		"a list of two":       ":" + der + ":, :" + der + ":",
		"a token":             "abc",
	} {
		r := request("Bearer " + tok)
		r.RemoteAddr = "10.0.0.7:4711"
		r.Header.Set("Client-Cert", v)
		_, err := e.a.Authenticate(r)
		assert.ErrorIs(t, err, auth.ErrCertMissing, name)
	}

	leafB, err := x509.ParseCertificate(certB.Certificate[0])
	require.NoError(t, err)
	r := request("Bearer " + tok)
	r.RemoteAddr = "10.0.0.7:4711"
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leafB}}
	r.Header.Set("Client-Cert", ":"+der+":")
	_, err = e.a.Authenticate(r)
	assert.ErrorIs(t, err, auth.ErrCertMismatch, "TLS with certificate B, a header with A")

	key := authtest.MustDPoPKey(t, "ES256")
	both := e.iss.KeycloakClaims("alice", resource, full...)
	both["cnf"] = map[string]any{"x5t#S256": tpA, "jkt": key.Thumbprint()}
	btok := mint(t)(e.iss.Sign(both, authtest.SignOptions{}))
	r = request("DPoP " + btok)
	r.Header.Set("DPoP", key.Proof("POST", resource, btok, "", e.clock.Now()))
	_, err = e.a.Authenticate(r)
	assert.ErrorIs(t, err, auth.ErrCertMissing, "the key proved, no certificate")
	r = request("Bearer " + btok)
	r.RemoteAddr = "10.0.0.7:4711"
	r.Header.Set("Client-Cert", ":"+der+":")
	_, err = e.a.Authenticate(r)
	assert.ErrorIs(t, err, auth.ErrDPoPAsBearer, "the certificate, no proof")
	r.Header.Set("Authorization", "DPoP "+btok)
	r.Header.Set("DPoP", key.Proof("POST", resource, btok, "", e.clock.Now()))
	p, err := e.a.Authenticate(r)
	require.NoError(t, err, "both")
	assert.Equal(t, tpA, p.CertThumbprint)
	assert.Equal(t, key.Thumbprint(), p.KeyThumbprint)
}
