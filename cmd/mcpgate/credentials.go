package main

import (
	"fmt"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/metrics"
)

// workerCredentials maps the credentials of the server cfg serves
// (worker.credentials for the one at /mcp, servers[].credentials for an
// entry's) to the broker that obtains each user's own credentials for
// it, nil when none is configured. A token exchange goes through the gateway's confidential
// client (auth.introspection_client_id and its secret file), over the
// client that reaches auth.issuer, counted in m.
func workerCredentials(cfg *config.Config, m *metrics.Metrics) (*credential.Broker, error) {
	o := cfg.CredentialOptions()
	if len(o.Credentials) == 0 {
		return nil, nil
	}
	var ex *credential.Exchanger
	if o.Exchanges() {
		secret, err := cfg.IntrospectionSecret()
		if err != nil {
			return nil, err
		}
		hc, err := issuerClient(cfg)
		if err != nil {
			return nil, err
		}
		if ex, err = credential.NewExchanger(credential.ExchangeOptions{Issuer: cfg.Auth.Issuer, ClientID: cfg.Auth.IntrospectionClientID,
			ClientSecret: secret, HTTPClient: hc, Observe: m.CredentialExchange}); err != nil {
			return nil, fmt.Errorf("mcpgate: worker.credentials: %w", err)
		}
	}
	name := cfg.ServerName() // the name errors give the server
	if name == "" {
		name = cfg.Server.Name
	}
	b, err := credential.New(name, o, ex)
	if err != nil {
		return nil, fmt.Errorf("mcpgate: worker.credentials: %w", err)
	}
	return b, nil
}
