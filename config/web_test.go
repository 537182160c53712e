package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateWeb(t *testing.T) {
	f := newFixture(t)
	authed := func(w Web) *Config {
		c := Default()
		c.Server.PublicURL = "https://mcp.example.com"
		c.Auth.Issuer = "https://kc.example.com/realms/mcp"
		c.Web = w
		return c
	}
	tests := []struct {
		name string
		cfg  *Config
		want []string // substrings, one per problem; none: valid
	}{
		{"defaults", Default(), nil},
		{"admin complete", authed(Web{Enabled: true, Admin: "role:mcp-admin", ClientID: "mcpgate-admin", CookieKeyFile: f.secret}), nil},
		{"admin with a confidential client", authed(Web{Enabled: true, Admin: "group:/ops", ClientID: "c", ClientSecretFile: f.plain, CookieKeyFile: f.secret}), nil},
		{"admin without a prefix", authed(Web{Enabled: true, Admin: "mcp-admin", ClientID: "c", CookieKeyFile: f.secret}),
			[]string{`web.admin: "mcp-admin" is not scope:NAME`}},
		{"admin with an empty name", authed(Web{Enabled: true, Admin: "scope:", ClientID: "c", CookieKeyFile: f.secret}),
			[]string{`web.admin: "scope:" is not`}},
		{"admin without the rest", authed(Web{Enabled: true, Admin: "scope:ops"}),
			[]string{"web.client_id: is required", "web.cookie_key_file: is required"}},
		{"a short cookie key", authed(Web{Enabled: true, Admin: "scope:ops", ClientID: "c", CookieKeyFile: f.plain}),
			[]string{"web.cookie_key_file: config: web.cookie_key_file: " + f.plain + " holds 4 bytes"}},
		{"admin without auth", func() *Config {
			c := Default()
			c.Web = Web{Enabled: true, Admin: "scope:ops", ClientID: "c", CookieKeyFile: f.secret}
			return c
		}(), []string{"web.admin: needs auth.issuer"}},
		{"admin with the pages off", authed(Web{Admin: "scope:ops", ClientID: "c", CookieKeyFile: f.secret}),
			[]string{"web.admin: is set but web.enabled is false"}},
		{"client without admin", authed(Web{Enabled: true, ClientID: "c"}),
			[]string{"web.client_id: is set but web.admin is not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				assert.NoError(t, err)
				return
			}
			lines := strings.Split(err.Error(), "\n")
			assert.Len(t, lines, len(tt.want), "%v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), strings.Repeat("s", 48), "a key file's content is never echoed")
		})
	}
}
