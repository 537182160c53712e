package doctor

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/credential"
)

// credentialList is one server's credentials as the doctor reports them:
// the check's prefix and the key that sets them.
type credentialList struct {
	prefix, key string
	o           credential.Options
}

// credentialLists are worker.credentials and each servers entry's own.
func credentialLists(cfg *config.Config) []credentialList {
	out := []credentialList{{"", "worker.credentials", cfg.CredentialOptions()}}
	for i, sc := range cfg.ServerConfigs() {
		if sc.Entry() != nil {
			out = append(out, credentialList{"server " + sc.ServerName() + " ", fmt.Sprintf("servers[%d].credentials", i), sc.CredentialOptions()})
		}
	}
	return out
}

// checkCredentials checks what worker.credentials and each server's
// credentials need without a user's token: each per-user secret
// directory and static file (owner, mode), and for a token exchange the
// issuer's token endpoint (discovered, the grant advertised) and the
// gateway's client authenticating there, once for every server.
func checkCredentials(ctx context.Context, r *Report, cfg *config.Config) {
	exchanges := false
	for _, l := range credentialLists(cfg) {
		exchanges = exchanges || l.o.Exchanges()
		for i, c := range l.o.Credentials {
			check := l.prefix + "credential " + c.Name()
			switch c.From {
			case credential.FromFile:
				if err := credential.CheckDir(c.Dir); err != nil {
					r.fail(check, err.Error(), fmt.Sprintf("%s[%d].dir must be a directory owned by the gateway's account, mode 0700, holding <user id>/%s files of mode 0600", l.key, i, c.Name()))
				} else {
					r.ok(check, "per-user secrets under "+c.Dir)
				}
			case credential.FromStatic:
				if err := credential.CheckStatic(c.Path); err != nil {
					r.fail(check, err.Error(), fmt.Sprintf("%s[%d].path must be a regular file owned by the gateway's account, mode 0600", l.key, i))
				} else {
					r.ok(check, "static secret "+c.Path+" (the same for every user)")
				}
			}
		}
	}
	if !exchanges || !cfg.Authenticated() {
		return
	}
	hc, err := issuerHTTPClient(cfg)
	if err != nil {
		r.fail("token exchange", err.Error(), "auth.issuer_ca_file must be readable")
		return
	}
	ep, err := credential.Discover(ctx, hc, cfg.Auth.Issuer)
	if err != nil {
		r.fail("token exchange", err.Error(), "the issuer's discovery document must name its token_endpoint")
		return
	}
	if ep.Exchange {
		r.ok("token exchange", "the token endpoint "+ep.TokenURL+" advertises the token exchange grant")
	} else {
		r.warn("token exchange", "the discovery document does not list "+credential.GrantTokenExchange+" in grant_types_supported",
			"enable standard token exchange on the gateway's client (Keycloak 26.2+: the client's Standard Token Exchange switch); docs/credentials.md")
	}
	secret, err := cfg.IntrospectionSecret()
	if err != nil {
		r.fail("exchange client", err.Error(), "auth.introspection_client_secret_file must hold the client's secret")
		return
	}
	if err := credential.ProbeClient(ctx, hc, ep.TokenURL, cfg.Auth.IntrospectionClientID, secret); err != nil {
		r.fail("exchange client", err.Error(), "auth.introspection_client_id must be a confidential client of the realm and its secret file must hold its current secret")
		return
	}
	r.ok("exchange client", cfg.Auth.IntrospectionClientID+" authenticates at the token endpoint")
}
