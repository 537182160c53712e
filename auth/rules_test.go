package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/auth"
)

// One table per rule; config, the gateway and New only call these.

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "localhost:8000": true, "127.0.0.1": true,
		"127.0.0.1:8000": true, "127.1.2.3": true, "[::1]:8000": true, "[::1]": true, "::1": true,
		// Names a resolver answers for, not the kernel (RFC 6761 §6.3 is a
		// request to resolvers, not a guarantee).
		"localhost.": false, "LOCALHOST.:80": false, "app.localhost": false,
		"evil.example.com": false, "10.0.0.1:8000": false, "0.0.0.0": false, "[::]:8000": false,
		"localhost.evil.com": false, "127.0.0.1.nip.io": false, "": false, ":8000": false,
	} {
		if got := auth.IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q): got %v, want %v", host, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		want    string // "" accepted, else a part of the error
		isHTTPS bool   // the error is ErrNotHTTPS
	}{
		{"https://kc.example/realms/mcp", "", false},
		{"https://kc.example:8443", "", false},
		{"http://127.0.0.1:8080/realms/dev", "", false},
		{"http://LOCALHOST:8080", "", false},
		{"http://[::1]:8080", "", false},
		{"http://kc.example/realms/mcp", "must use https", true},
		{"http://app.localhost:8080", "must use https", true},
		{"http://0.0.0.0:8080", "must use https", true},
		{"kc.example", "is not an absolute http(s) URL", false},
		{"/realms/mcp", "is not an absolute http(s) URL", false},
		{"ftp://kc.example", "is not an absolute http(s) URL", false},
		{"https://", "is not an absolute http(s) URL", false},
		{"https://kc.example/?tenant=a", "must not carry", false},
		{"https://kc.example/?", "must not carry", false},
		{"https://kc.example/#f", "must not carry", false},
		{"https://u:hunter2@kc.example", "must not carry", false},
	} {
		err := auth.CheckURL(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q): got %v, want nil", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%q): got %v, want an error containing %q", tc.url, err, tc.want)
		case err != nil && errors.Is(err, auth.ErrNotHTTPS) != tc.isHTTPS:
			t.Errorf("CheckURL(%q): got errors.Is(ErrNotHTTPS) %v, want %v", tc.url, !tc.isHTTPS, tc.isHTTPS)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("CheckURL(%q): got %v, which shows the password", tc.url, err)
		}
	}
}

func TestCheckResource(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://mcp.example.test/mcp", ""},
		{"http://localhost:8000/mcp", ""},
		{"https://MCP.example.test/mcp", "canonical"},
		{"HTTPS://mcp.example.test/mcp", "canonical"},
		{"https://mcp.example.test/mcp?a=b", "must not carry"},
		{"https://mcp.example.test/mcp#x", "must not carry"},
		{"http://mcp.example.test/mcp", "must use https"},
	} {
		err := auth.CheckResource(tc.url)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckResource(%q): got %v, want %q", tc.url, err, tc.want)
		}
	}
}

func TestCheckScope(t *testing.T) {
	for scope, ok := range map[string]bool{
		"mcp:use": true, "openid": true, "a!#$%&'()*+,-./:;<=>?@[]^_`{|}~": true, "https://api.example/read": true,
		"": false, "mcp use": false, "a\tb": false, `a"b`: false, `a\b`: false, "a\x01b": false,
		"a\x7fb": false, "mcp:écrire": false,
	} {
		if err := auth.CheckScope(scope); (err == nil) != ok {
			t.Errorf("CheckScope(%q): got %v, want ok %v", scope, err, ok)
		}
	}
}

func TestCheckHMACSecret(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 31: false, 32: true, 64: true} {
		err := auth.CheckHMACSecret([]byte(strings.Repeat("s", n)))
		if (err == nil) != ok {
			t.Errorf("CheckHMACSecret(%d bytes): got %v, want ok %v", n, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "sss") {
			t.Errorf("CheckHMACSecret: got %v, which shows the secret", err)
		}
	}
}

func TestCheckAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		alg         string
		secret      bool
		want        string // "" accepted, else a part of the error
		needsSecret bool
	}{
		{"RS256", false, "", false},
		{"EdDSA", false, "", false},
		{"HS256", true, "", false},
		{"HS512", false, "needs a shared hmac secret", true},
		{"none", true, "is never accepted", false},
		{"NONE", false, "is never accepted", false},
		{"rs256", false, "is not a JWS algorithm", false},
		{"ES256K", false, "is not a JWS algorithm", false},
		{"Ed448", false, "is not a JWS algorithm", false},
		{"", false, "is not a JWS algorithm", false},
	} {
		err := auth.CheckAlgorithm(tc.alg, tc.secret)
		switch {
		case (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckAlgorithm(%q, %v): got %v, want %q", tc.alg, tc.secret, err, tc.want)
		case err != nil && errors.Is(err, auth.ErrNeedsHMACSecret) != tc.needsSecret:
			t.Errorf("CheckAlgorithm(%q): got errors.Is(ErrNeedsHMACSecret) %v, want %v", tc.alg, !tc.needsSecret, tc.needsSecret)
		}
	}
	for _, a := range append(auth.DefaultAlgorithms(), auth.HMACAlgorithms()...) {
		if err := auth.CheckAlgorithm(a, true); err != nil {
			t.Errorf("CheckAlgorithm(%q) of a listed algorithm: got %v, want nil", a, err)
		}
	}
}
