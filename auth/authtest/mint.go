package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// KeycloakClaims are claims shaped like a Keycloak access token: sub a
// UUID, the user in preferred_username, scopes in a space-separated scope
// string, the client in azp, a single audience as a string, valid for five
// minutes.
func (i *Issuer) KeycloakClaims(user, audience string, scopes ...string) map[string]any {
	now := i.Now()
	sum := sha256.Sum256([]byte(user))
	h := hex.EncodeToString(sum[:16])
	return map[string]any{
		"iss":                i.URL,
		"sub":                h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32],
		"aud":                audience,
		"exp":                now.Add(5 * time.Minute).Unix(),
		"iat":                now.Unix(),
		"jti":                randomID(),
		"typ":                "Bearer",
		"azp":                "mcp-client",
		"sid":                randomID(),
		"acr":                "1",
		"scope":              joinScopes(scopes),
		"email_verified":     false,
		"preferred_username": user,
	}
}

// OryClaims are claims shaped like an Ory Hydra JWT access token: sub the
// user, scopes in an scp array, the client in client_id, aud an array.
func (i *Issuer) OryClaims(user, audience string, scopes ...string) map[string]any {
	now := i.Now()
	return map[string]any{
		"iss":       i.URL,
		"sub":       user,
		"aud":       []string{audience},
		"exp":       now.Add(5 * time.Minute).Unix(),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"jti":       randomID(),
		"client_id": "mcp-client",
		"scp":       append([]string{}, scopes...),
		"ext":       map[string]any{},
	}
}

// SignOptions choose how Sign signs.
type SignOptions struct {
	// Alg is the JWS algorithm: RS*/PS* use the RSA key (published for
	// RS256 only, so others fail to verify), ES256 the EC key,
	// HS* need HMACKey, "none" makes an unsigned token. Default RS256.
	Alg string
	// Typ is the typ header; default "JWT". NoTyp omits it.
	Typ   string
	NoTyp bool
	// KeyID overrides the kid header; default the signing key's kid
	// (none for HMAC and "none").
	KeyID string
	// HMACKey is the secret for HS* algorithms.
	HMACKey []byte
}

// Sign serializes claims as a compact JWS.
func (i *Issuer) Sign(claims map[string]any, o SignOptions) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("authtest: %w", err)
	}
	if o.Alg == "" {
		o.Alg = "RS256"
	}
	alg, ok := jwa.LookupSignatureAlgorithm(o.Alg)
	if !ok {
		return "", fmt.Errorf("authtest: unknown algorithm %q", o.Alg)
	}
	i.mu.Lock()
	var key any
	kid := ""
	switch {
	case o.Alg == "none":
	case alg.IsSymmetric():
		key = o.HMACKey
	case o.Alg[:2] == "ES":
		key, kid = i.ecKey, i.ecKid
	default:
		key, kid = i.rsaKey, i.rsaKid
	}
	i.mu.Unlock()
	if o.KeyID != "" {
		kid = o.KeyID
	}
	hdr := jws.NewHeaders()
	if !o.NoTyp {
		typ := o.Typ
		if typ == "" {
			typ = "JWT"
		}
		hdr.Set(jws.TypeKey, typ)
	}
	if kid != "" {
		hdr.Set(jws.KeyIDKey, kid)
	}
	var opt jws.SignOption
	if o.Alg == "none" {
		opt = jws.WithInsecureNoSignature(jws.WithProtectedHeaders(hdr))
	} else {
		opt = jws.WithKey(alg, key, jws.WithProtectedHeaders(hdr))
	}
	tok, err := jws.Sign(payload, opt)
	if err != nil {
		return "", fmt.Errorf("authtest: signing: %w", err)
	}
	return string(tok), nil
}

// Keycloak mints a Keycloak-shaped RS256 token with typ JWT.
func (i *Issuer) Keycloak(user, audience string, scopes ...string) (string, error) {
	return i.Sign(i.KeycloakClaims(user, audience, scopes...), SignOptions{})
}

// Ory mints an Ory-shaped ES256 token with typ at+jwt (RFC 9068).
func (i *Issuer) Ory(user, audience string, scopes ...string) (string, error) {
	return i.Sign(i.OryClaims(user, audience, scopes...), SignOptions{Alg: "ES256", Typ: "at+jwt"})
}

func joinScopes(s []string) string { return strings.Join(s, " ") }

func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
