package config

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

func (c *Config) validateClientCerts(v *validator) {
	t := c.TLS
	switch t.ClientAuth {
	case "", ClientAuthOff:
		if t.ClientCAFile != "" {
			v.add("tls.client_ca_file", "is set but tls.client_auth is off; set tls.client_auth to optional or required, or remove the file")
		}
	case ClientAuthOptional, ClientAuthRequired:
		if !c.TLSEnabled() {
			v.add("tls.client_auth", "%s needs the gateway to serve TLS itself: set tls.cert_file and tls.key_file (behind a proxy that terminates TLS, use tls.client_cert_proxies instead)", t.ClientAuth)
		}
		if t.ClientCAFile == "" {
			v.add("tls.client_ca_file", "is required with tls.client_auth %s: the CA certificates client certificates must chain to", t.ClientAuth)
		} else if _, err := c.ClientCAs(); err != nil {
			v.add("tls.client_ca_file", "%v", err)
		}
	default:
		v.add("tls.client_auth", "%q is not a mode; use off, optional or required", t.ClientAuth)
	}
	if _, err := c.ClientCertProxies(); err != nil {
		v.add("tls.client_cert_proxies", "%v", err)
	}
}

// ClientCAs reads tls.client_ca_file: the pool client certificates must
// chain to.
func (c *Config) ClientCAs() (*x509.CertPool, error) {
	b, err := os.ReadFile(c.TLS.ClientCAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", c.TLS.ClientCAFile)
	}
	return pool, nil
}

// ClientCertProxies parses tls.client_cert_proxies: each an IP address
// (one host) or a CIDR prefix.
func (c *Config) ClientCertProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.TLS.ClientCertProxies {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// CertificateBound reports whether certificate-bound tokens are accepted:
// the gateway asks for client certificates, or trusts a proxy to pass
// them on.
func (c *Config) CertificateBound() bool {
	return (c.TLS.ClientAuth != "" && c.TLS.ClientAuth != ClientAuthOff) || len(c.TLS.ClientCertProxies) > 0
}
