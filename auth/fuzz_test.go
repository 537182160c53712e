package auth_test

import (
	"context"
	"encoding/base64"
	"errors"
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
