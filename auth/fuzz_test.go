package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/auth"
)

// FuzzVerifyToken feeds arbitrary bearer credentials to the verifier: it
// must never panic, and every refusal must be one of the known kinds.
func FuzzVerifyToken(f *testing.F) {
	enc := base64.RawURLEncoding.EncodeToString
	hdr := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	for _, seed := range []string{
		"", "a.b.c", "probe-invalid", hdr + "." + enc([]byte(`{"aud":7}`)) + ".sig",
		hdr + "." + enc([]byte(`{"exp":1e400}`)) + "." + enc([]byte("x")),
		enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{}`)) + ".",
		enc([]byte(`{"alg":"HS256","crit":["x"]}`)) + ".e30.AAAA",
	} {
		f.Add(seed)
	}
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: "https://kc.example/realms/mcp", Resource: resource,
		HMACSecret: []byte("0123456789abcdef0123456789abcdef"), Algorithms: []string{"HS256"},
		Logger: discard,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		p, err := a.VerifyToken(context.Background(), token)
		if err == nil {
			t.Fatalf("accepted %q as %+v", token, p)
		}
		known := false
		for _, kind := range []error{auth.ErrInvalidToken, auth.ErrInsufficientScope} {
			known = known || errors.Is(err, kind)
		}
		if !known {
			t.Fatalf("got %v, want an invalid_token or insufficient_scope kind", err)
		}
	})
}

// FuzzSignedClaims feeds arbitrary claims, correctly signed, to the
// verifier: a token it accepts must have been read by exact member names,
// the subject and scopes being exactly what a plain map decode of the
// payload finds under "sub" and "scope" (or "scp").
func FuzzSignedClaims(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	const iss = "https://kc.example/realms/mcp"
	for _, seed := range []string{
		`{"iss":"` + iss + `","aud":"` + resource + `","sub":"kim","exp":4102444800,"scope":"mcp:use"}`,
		`{"iss":"` + iss + `","aud":"` + resource + `","sub":"kim","exp":4102444800,"scope":"mcp:use","ſcope":"mcp:write"}`,
		`{"iss":"` + iss + `","aud":["` + resource + `"],"sub":"kim","exp":4102444800,"scp":["mcp:use"],"SUB":"root"}`,
		`{"iss":"` + iss + `","aud":"` + resource + `","sub":"kim","sub":"root","exp":4102444800}`,
	} {
		f.Add(seed)
	}
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: iss, Resource: resource, HMACSecret: secret, Algorithms: []string{"HS256"}, Logger: discard,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		p, err := a.VerifyToken(context.Background(), signRaw(secret, `{"alg":"HS256","typ":"JWT"}`, payload))
		if err != nil {
			if !errors.Is(err, auth.ErrInvalidToken) && !errors.Is(err, auth.ErrInsufficientScope) {
				t.Fatalf("got %v, want an invalid_token or insufficient_scope kind", err)
			}
			return
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &all); err != nil {
			t.Fatalf("accepted a payload encoding/json cannot read: %v", err)
		}
		var sub string
		_ = json.Unmarshal(all["sub"], &sub)
		if p.Subject != sub {
			t.Fatalf("subject %q, but the payload's exact sub is %q", p.Subject, sub)
		}
		want := all["scope"]
		if want == nil || string(want) == "null" {
			want = all["scp"]
		}
		var s string
		var list []string
		if json.Unmarshal(want, &s) == nil {
			list = strings.Fields(s)
		} else {
			_ = json.Unmarshal(want, &list)
		}
		if !slices.Equal(p.Scopes, list) {
			t.Fatalf("scopes %q, but the payload's exact scope claims say %q", p.Scopes, list)
		}
	})
}
