package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// MTLS configures certificate-bound tokens (RFC 8705 §3): a token whose
// cnf.x5t#S256 names a client certificate is accepted only on a request
// that came with that certificate.
type MTLS struct {
	// Enabled accepts certificate-bound tokens; without it they are
	// refused (ErrCertBound), as a resource that checks no certificates
	// must. The TLS front end asks for client certificates
	// (tls.client_auth); the metadata says
	// tls_client_certificate_bound_access_tokens.
	Enabled bool
	// TrustedProxies are the addresses of proxies that terminate TLS and
	// pass the client's certificate on in a Client-Cert header (RFC
	// 9440). The header is read only from them; from any other address it
	// is ignored. Empty: from nobody.
	TrustedProxies []netip.Prefix
}

// The certificate binding's checks.
var (
	ErrCertMissing  = check(ErrInvalidToken, "token is bound to a client certificate (cnf.x5t#S256, RFC 8705) and the request came without one")
	ErrCertMismatch = check(ErrInvalidToken, "token is bound to another client certificate than the request's (cnf.x5t#S256)")
	ErrBadCertConf  = check(ErrInvalidToken, "token cnf.x5t#S256 is not a SHA-256 certificate thumbprint (43 base64url characters)")
)

// bindCert checks a certificate-bound token's binding against r.
func (a *Authenticator) bindCert(r *http.Request, x5t string) error {
	if x5t == "" {
		return nil
	}
	got := a.clientCertThumbprint(r)
	switch {
	case got == "":
		return ErrCertMissing
	case got != x5t:
		return ErrCertMismatch
	}
	return nil
}

// clientCertThumbprint is the base64url SHA-256 of r's client certificate
// (RFC 8705 §3.1), "" without one: the certificate of r's own TLS
// connection, or, on a request from a trusted proxy, the one its single
// Client-Cert header carries (RFC 9440 §2: a byte sequence, the DER
// certificate in base64 between colons).
func (a *Authenticator) clientCertThumbprint(r *http.Request) string {
	var der []byte
	switch {
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		der = r.TLS.PeerCertificates[0].Raw
	case a.fromTrustedProxy(r.RemoteAddr):
		vals := r.Header.Values("Client-Cert")
		if len(vals) != 1 {
			return ""
		}
		v := strings.TrimSpace(vals[0])
		if len(v) < 3 || v[0] != ':' || v[len(v)-1] != ':' {
			return ""
		}
		var err error
		if der, err = base64.StdEncoding.DecodeString(v[1 : len(v)-1]); err != nil || len(der) == 0 {
			return ""
		}
	default:
		return ""
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (a *Authenticator) fromTrustedProxy(remote string) bool {
	if len(a.opts.MTLS.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range a.opts.MTLS.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
