package config

import "strings"

// Web configures the pages a person opens in a browser: the connect page
// at / and a browser's GET /mcp, and the operator view at /admin
// (docs/gateway.md, "The connect page and the operator view").
type Web struct {
	// Enabled serves the connect page (and, with Admin, the operator
	// view). Default true; false keeps / at 404 and /mcp's answers to a
	// browser as they are to any client.
	Enabled bool `mapstructure:"enabled"`
	// PublicTools lists each scope's tool names on the connect page, not
	// only its toolsets. Default false: the page says no more than the
	// RFC 9728 metadata already does.
	PublicTools bool `mapstructure:"public_tools"`
	// Admin turns the operator view on and says who may open it:
	// "scope:NAME" (the login's token was granted that scope),
	// "role:NAME" (the ID token's realm_access.roles, roles or the
	// client's resource_access roles hold it) or "group:NAME" (its groups
	// claim does). Empty: no operator view.
	Admin string `mapstructure:"admin"`
	// ClientID is the OpenID Connect client the operator view logs in
	// with, at auth.issuer; its redirect URI is server.public_url +
	// "/admin/callback".
	ClientID string `mapstructure:"client_id"`
	// ClientSecretFile holds that client's secret, for a confidential
	// client; empty for a public one (PKCE only).
	ClientSecretFile string `mapstructure:"client_secret_file"`
	// CookieKeyFile holds the key (32 bytes or more) that signs the
	// operator view's cookies. Every replica reads the same file, so any
	// of them accepts a login made at another.
	CookieKeyFile string `mapstructure:"cookie_key_file"`
}

// adminPrefixes are the forms of web.admin.
var adminPrefixes = []string{"scope:", "role:", "group:"}

func (c *Config) validateWeb(v *validator) {
	w := c.Web
	if w.Admin == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"web.client_id", w.ClientID != ""}, {"web.client_secret_file", w.ClientSecretFile != ""}, {"web.cookie_key_file", w.CookieKeyFile != ""}} {
			if k.set {
				v.add(k.key, "is set but web.admin is not; set web.admin to the scope, role or group that may open the operator view, or remove it")
			}
		}
		return
	}
	kind, name, ok := strings.Cut(w.Admin, ":")
	if !ok || name == "" || strings.TrimSpace(name) != name || !validAdminKind(kind+":") {
		v.add("web.admin", "%q is not scope:NAME, role:NAME or group:NAME", w.Admin)
	}
	if !w.Enabled {
		v.add("web.admin", "is set but web.enabled is false; the operator view is part of the web pages")
	}
	if !c.Authenticated() {
		v.add("web.admin", "needs auth.issuer: operators log in at the issuer")
	}
	if w.ClientID == "" {
		v.add("web.client_id", "is required with web.admin: the OpenID Connect client the operator view logs in with")
	}
	if w.CookieKeyFile == "" {
		v.add("web.cookie_key_file", "is required with web.admin: a file of 32 bytes or more, the same on every replica")
	} else if _, err := c.CookieKey(); err != nil {
		v.add("web.cookie_key_file", "%v", err)
	}
	if w.ClientSecretFile != "" {
		if _, err := c.WebClientSecret(); err != nil {
			v.add("web.client_secret_file", "%v", err)
		}
	}
}

func validAdminKind(prefix string) bool {
	for _, p := range adminPrefixes {
		if p == prefix {
			return true
		}
	}
	return false
}

// CookieKey reads web.cookie_key_file: 32 bytes or more; its errors never
// hold the content.
func (c *Config) CookieKey() ([]byte, error) {
	return secretFile("web.cookie_key_file", c.Web.CookieKeyFile, readSecret)
}

// WebClientSecret reads web.client_secret_file.
func (c *Config) WebClientSecret() ([]byte, error) {
	return secretFile("web.client_secret_file", c.Web.ClientSecretFile, readClientSecret)
}
