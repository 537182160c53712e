package main

import (
	"crypto/tls"
	"fmt"

	"github.com/mcpgate/mcpgate/config"
)

// clientCertificates sets how the TLS front end asks for client
// certificates (tls.client_auth), which certificate-bound tokens (RFC
// 8705) are checked against.
func clientCertificates(cfg *config.Config, tc *tls.Config) error {
	switch cfg.TLS.ClientAuth {
	case config.ClientAuthOptional:
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case config.ClientAuthRequired:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil
	}
	pool, err := cfg.ClientCAs()
	if err != nil {
		return fmt.Errorf("mcpgate: tls.client_ca_file: %w", err)
	}
	tc.ClientCAs = pool
	return nil
}
