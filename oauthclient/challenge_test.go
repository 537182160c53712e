package oauthclient_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpgate/mcpgate/oauthclient"
)

func TestParseChallengesHostile(t *testing.T) {
	tests := []struct {
		name  string
		field string
		want  []oauthclient.Challenge
	}{
		{"plain bearer", `Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="a b"`,
			[]oauthclient.Challenge{{Scheme: "bearer", Params: map[string]string{"resource_metadata": "https://mcp.example/.well-known/oauth-protected-resource/mcp", "scope": "a b"}}}},
		{"scheme and names in any case", `BEARER Error="invalid_token", SCOPE=mcp`,
			[]oauthclient.Challenge{{Scheme: "bearer", Params: map[string]string{"error": "invalid_token", "scope": "mcp"}}}},
		{"quoted comma and a quoted scheme-looking text", `Bearer error_description="a, Basic realm=x", scope="s"`,
			[]oauthclient.Challenge{{Scheme: "bearer", Params: map[string]string{"error_description": "a, Basic realm=x", "scope": "s"}}}},
		{"escaped quote and escaped backslash before the closing quote", `Bearer realm="a\"b\\", scope="s"`,
			[]oauthclient.Challenge{{Scheme: "bearer", Params: map[string]string{"realm": `a"b\`, "scope": "s"}}}},
		{"several challenges, Bearer second", `Basic realm="x", Bearer scope="s", error="insufficient_scope"`,
			[]oauthclient.Challenge{
				{Scheme: "basic", Params: map[string]string{"realm": "x"}},
				{Scheme: "bearer", Params: map[string]string{"scope": "s", "error": "insufficient_scope"}},
			}},
		{"token68 before a Bearer challenge", `Negotiate YIIB+w==, Bearer scope="s"`,
			[]oauthclient.Challenge{
				{Scheme: "negotiate", Params: map[string]string{}, Token68: "YIIB+w=="},
				{Scheme: "bearer", Params: map[string]string{"scope": "s"}},
			}},
		{"empty quoted value", `Bearer error_description="", scope="s"`,
			[]oauthclient.Challenge{{Scheme: "bearer", Params: map[string]string{"error_description": "", "scope": "s"}}}},
		{"bare scheme then another", `DPoP, Bearer`,
			[]oauthclient.Challenge{{Scheme: "dpop", Params: map[string]string{}}, {Scheme: "bearer", Params: map[string]string{}}}},
		{"a param named twice drops its challenge", `Bearer scope="a", scope="admin"`, nil},
		{"unterminated quote keeps what came before", `Basic realm="x", Bearer scope="s`,
			[]oauthclient.Challenge{{Scheme: "basic", Params: map[string]string{"realm": "x"}}}},
		{"quote where the scheme goes", `"Bearer" scope="s"`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, oauthclient.ParseChallenges(tt.field))
		})
	}
}

// TestChallengeParamReadsTheBearerChallenge: a param of another scheme's
// challenge, or text inside a quoted value, is not the Bearer challenge's;
// without a Bearer challenge, the DPoP one is read.
func TestChallengeParamReadsTheBearerChallenge(t *testing.T) {
	for _, tc := range []struct {
		field, name, want string
	}{
		{`Basic error="insufficient_scope", Bearer error="invalid_token"`, "error", "invalid_token"},
		{`Bearer error="invalid_token", error_description="insufficient_scope"`, "error", "invalid_token"},
		{`Bearer error_description="x, error=insufficient_scope"`, "error", ""},
		{`DPoP scope="admin", Bearer scope="read"`, "scope", "read"},
		{`Basic realm="a", scope="admin"`, "scope", ""},
		{`bearer SCOPE="read"`, "Scope", "read"},
		// Only DPoP (a server that requires DPoP-bound tokens): its
		// challenge is read.
		{`DPoP error="insufficient_scope", scope="read write", algs="ES256"`, "scope", "read write"},
		{`Basic realm="a", DPoP error="insufficient_scope"`, "error", "insufficient_scope"},
		{`Basic scope="admin"`, "scope", ""},
	} {
		assert.Equal(t, tc.want, oauthclient.ChallengeParam(tc.field, tc.name), tc.field)
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://x/y", scope="a b"`,
		`Basic realm="x", Bearer scope="s", error="insufficient_scope"`,
		`Negotiate YIIB+w==, Bearer scope="s"`,
		`Bearer realm="a\"b\\", scope="s"`,
		`Bearer error_description="a, Basic realm=x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		for _, c := range oauthclient.ParseChallenges(field) {
			if c.Scheme == "" || c.Scheme != strings.ToLower(c.Scheme) {
				t.Fatalf("scheme %q", c.Scheme)
			}
			for k := range c.Params {
				if k == "" || k != strings.ToLower(k) {
					t.Fatalf("param name %q", k)
				}
			}
			if c.Token68 != "" && len(c.Params) > 0 {
				t.Fatalf("both a token68 and params: %+v", c)
			}
		}
	})
}
