package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/auth"
)

func TestNewRefuses(t *testing.T) {
	ok := auth.Options{Issuer: "https://kc.example/realms/mcp", Resource: resource}
	for _, tc := range []struct {
		name string
		mod  func(*auth.Options)
		want []string // every one must appear in the error
	}{
		{"no resource", func(o *auth.Options) { o.Resource = "" }, []string{"resource is required"}},
		{"no issuer", func(o *auth.Options) { o.Issuer = "" }, []string{"issuer is required"}},
		// One case per rule, to show New applies it; the rules' own tables
		// are in rules_test.go.
		{"plain http issuer off loopback", func(o *auth.Options) { o.Issuer = "http://kc.example/realms/mcp" }, []string{"issuer:", "must use https"}},
		{"upper-case host", func(o *auth.Options) { o.Resource = "https://MCP.example.test/mcp" }, []string{"resource:", "canonical"}},
		{"authorization server with a fragment", func(o *auth.Options) { o.AuthorizationServers = []string{"https://as.example#x"} }, []string{"authorization server:", "must not carry"}},
		{"alg none", func(o *auth.Options) { o.Algorithms = []string{"none"} }, []string{`algorithm "none"`}},
		{"HMAC without a secret", func(o *auth.Options) { o.Algorithms = []string{"RS256", "HS256"} }, []string{`"HS256" needs a shared hmac secret`}},
		{"short secret", func(o *auth.Options) { o.HMACSecret = []byte("short") }, []string{"at least 32"}},
		{"scope with a space", func(o *auth.Options) { o.ExtraScopes = []string{"a b"} }, []string{`scope: "a b" is not a scope`}},
		// Rules auth shares with config: a configuration that config
		// refuses, auth refuses too when given it directly.
		{"issuer with a query", func(o *auth.Options) { o.Issuer = "https://kc.example/realms/mcp?tenant=a" }, []string{"issuer:", "must not carry"}},
		{"scope with a control character", func(o *auth.Options) { o.RequiredScopes = []string{"mcp\x01use"} }, []string{"is not a scope"}},
		{"scope outside ASCII", func(o *auth.Options) { o.WriteScope = "mcp:écrire" }, []string{"write scope:", "is not a scope"}},
		{"algorithm outside the allow-list", func(o *auth.Options) { o.Algorithms = []string{"ES256K"} }, []string{`"ES256K" is not`}},
		{"unknown DPoP mode", func(o *auth.Options) { o.DPoP.Mode = "on" }, []string{`dpop mode "on" is not off, allowed or required`}},
		{"short DPoP nonce secret", func(o *auth.Options) { o.DPoP.Nonce, o.DPoP.NonceSecret = true, []byte("short") }, []string{"dpop nonce secret", "at least 32"}},
		{"DPoP public URL over http", func(o *auth.Options) { o.DPoP.PublicURL = "http://mcp.example.test" }, []string{"dpop public url:"}},
		{"every problem at once", func(o *auth.Options) { o.Resource, o.Algorithms = "", []string{"none"} },
			[]string{"resource is required", `algorithm "none"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.mod(&o)
			a, err := auth.New(context.Background(), o)
			if err == nil {
				a.Close()
				t.Fatal("got no error, want one")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNewAcceptsLoopbackHTTP(t *testing.T) {
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: "http://127.0.0.1:1/realms/dev", Resource: "http://localhost:8000/mcp",
		HMACSecret: []byte("0123456789abcdef0123456789abcdef"), Algorithms: []string{"HS256"},
	})
	if err != nil {
		t.Fatalf("got %v, want loopback http accepted", err)
	}
	a.Close()
}
