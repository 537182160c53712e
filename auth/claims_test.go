package auth_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
)

// signRaw signs header and payload, exactly as given, with HS256 and
// secret: a token an issuer could mint with members a user influenced.
func signRaw(secret []byte, header, payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	input := enc([]byte(header)) + "." + enc([]byte(payload))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + enc(mac.Sum(nil))
}

// TestClaimNamesAreExact: a claim is read by its exact name. A member
// whose name only folds to a claim's (ſ for s, a Kelvin sign for k, another
// case) is an unknown claim, never the claim; a payload or header that
// names a member twice, at any depth or through an escape, is refused,
// whichever copy a reader would take.
func TestClaimNamesAreExact(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := setup(t, func(o *auth.Options) { o.HMACSecret = secret })
	base, err := json.Marshal(e.iss.KeycloakClaims("kim", resource, "mcp:use"))
	if err != nil {
		t.Fatal(err)
	}
	// with appends raw members after the claims (kim, mcp:use).
	with := func(members string) string { return string(base[:len(base)-1]) + "," + members + "}" }
	const hdr = `{"alg":"HS256","typ":"JWT"}`
	for _, tc := range []struct {
		name, header, payload string
		want                  error // nil: accepted as kim, read-only
	}{
		{"long s scope after scope", hdr, with(`"ſcope":"mcp:use mcp:write"`), nil},
		{"upper-case scope after scope", hdr, with(`"SCOPE":"mcp:use mcp:write"`), nil},
		{"long s user claim", hdr, with(`"preferred_uſername":"root"`), nil},
		// A near miss: HMAC picks no key by kid, so this shows only that the
		// stray member is harmless.
		{"Kelvin-sign kid in the header", `{"alg":"HS256","typ":"JWT","\u212aid":"other"}`, with(`"x":1`), nil},
		{"folded typ in the header", `{"alg":"HS256","typ":"JWT","TYP":"nonsense"}`, with(`"x":1`), nil},
		{"duplicate scope", hdr, with(`"scope":"mcp:use mcp:write"`), auth.ErrClaims},
		{"duplicate user claim", hdr, with(`"preferred_username":"root"`), auth.ErrClaims},
		{"duplicate through an escape", hdr, with(`"sc\u006fpe":"mcp:use mcp:write"`), auth.ErrClaims},
		{"duplicate in a nested object", hdr, with(`"realm_access":{"roles":["a"],"roles":["admin"]}`), auth.ErrClaims},
		{"duplicate in an object in an array", hdr, with(`"x":[{"a":1,"a":2}]`), auth.ErrClaims},
		{"duplicate alg in the header", `{"alg":"none","typ":"JWT","alg":"HS256"}`, with(`"x":1`), auth.ErrMalformed},
		{"duplicate typ in the header", `{"alg":"HS256","typ":"at+jwt","typ":"JWT"}`, with(`"x":1`), auth.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.a.VerifyToken(t.Context(), signRaw(secret, tc.header, tc.payload))
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !errors.Is(err, auth.ErrInvalidToken) {
					t.Fatalf("got %v, want %v (invalid_token)", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want the token accepted as kim", err)
			}
			if p.UserID != "kim" || !p.ReadOnly || !slices.Equal(p.Scopes, []string{"mcp:use"}) {
				t.Fatalf("got user %q read-only %v scopes %v, want kim, read-only, [mcp:use]", p.UserID, p.ReadOnly, p.Scopes)
			}
		})
	}
}

// TestDuplicateNamesBeyondTheClaims: a repeated name is refused wherever it
// is, and a token without one is read as before (escapes in names and
// values, numbers beyond float64 in claims nobody reads).
func TestDuplicateNamesBeyondTheClaims(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := setup(t, func(o *auth.Options) { o.HMACSecret = secret })
	base, _ := json.Marshal(e.iss.KeycloakClaims("kim", resource, "mcp:use"))
	payload := strings.Replace(string(base), `"scope"`, `"sc\u006fpe"`, 1)
	payload = payload[:len(payload)-1] + `,"big":1e400,"a":{"b":[1,{"c":null}],"d":{}},"e":[]}`
	p, err := e.a.VerifyToken(t.Context(), signRaw(secret, `{"alg":"HS256","typ":"JWT"}`, payload))
	if err != nil || p.UserID != "kim" || !slices.Equal(p.Scopes, []string{"mcp:use"}) {
		t.Fatalf("got %+v, %v; want kim with mcp:use", p, err)
	}
}

// TestHostileHeaderCheap: the JOSE header is read before any signature is
// checked, so anyone can send one, up to max_token_bytes. However it is
// built (thousands of members, deep nesting, thousands of small objects),
// reading it must cost about what reading an ordinary header costs, not
// work in proportion to its every member: the gateway must not do for
// free, for a request without a token it issued, many times the work of
// a real one.
func TestHostileHeaderCheap(t *testing.T) {
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: "https://kc.example/realms/mcp", Resource: resource,
		HMACSecret: []byte("0123456789abcdef0123456789abcdef"), Algorithms: []string{"HS256"},
		Logger: discard,
	})
	require.NoError(t, err)
	const size = 11 << 10 // a token of auth.DefaultMaxTokenBytes at most
	wide := `{"alg":"HS256"`
	for i := 0; len(wide) < size; i++ {
		wide += `,"` + strconv.Itoa(i) + `":0`
	}
	objects := `{"alg":"HS256","x":[{}` + strings.Repeat(`,{}`, size/3) + `]}`
	nested := `{"alg":"HS256","x":` + strings.Repeat(`{"a":`, size/6) + `1` + strings.Repeat(`}`, size/6) + `}`
	enc := base64.RawURLEncoding.EncodeToString
	plain := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + ".e30.AAAA"
	ordinary := testing.AllocsPerRun(20, func() { _, _ = a.VerifyToken(context.Background(), plain) })
	for name, hdr := range map[string]string{"wide": wide + "}", "objects": objects, "nested": nested} {
		token := enc([]byte(hdr)) + ".e30.AAAA"
		require.LessOrEqual(t, len(token), auth.DefaultMaxTokenBytes, name)
		_, err := a.VerifyToken(context.Background(), token)
		require.ErrorIs(t, err, auth.ErrInvalidToken, name)
		allocs := testing.AllocsPerRun(20, func() { _, _ = a.VerifyToken(context.Background(), token) })
		assert.LessOrEqual(t, allocs, 10*ordinary, "%s: allocations reading a %d-byte header (an ordinary one: %.0f)", name, len(hdr), ordinary)
	}
}
