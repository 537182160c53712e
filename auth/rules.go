package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// The checks below are the one home of rules that the configuration, the
// gateway and this package all apply: config reports them per key, New
// applies them to Options, the gateway uses IsLoopbackHost for Host and
// Origin. Their errors say what is wrong with the value and start with it
// quoted; the caller adds which value it was.

// IsLoopbackHost reports whether host, with or without a port and brackets,
// names the loopback interface: "localhost" in any case, or an IP literal in
// 127.0.0.0/8 or ::1. Nothing else: not "localhost." nor *.localhost, which
// reach a resolver (RFC 6761 §6.3 asks resolvers to keep them local but does
// not make them so), and not 0.0.0.0, which is every interface.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNotHTTPS is wrapped by CheckURL's error for an http URL on a host that
// is not loopback; a caller that accepts plain http (the public URL of an
// unauthenticated gateway) can let it pass.
var ErrNotHTTPS = errors.New("must use https (http is accepted only on a loopback host, for local tests)")

// CheckURL checks an issuer, authorization server or public URL: absolute
// http or https with a host, no user info, query or fragment (OpenID Connect
// Discovery 1.0 §3: the issuer has no query or fragment), and https unless
// the host is loopback (a local issuer during development; errors.Is
// ErrNotHTTPS).
func CheckURL(raw string) error { return checkURL(raw, false) }

// checkURL is CheckURL, with a query allowed when query is set: a URL we
// fetch from but that names no one (the discovery document's jwks_uri).
func checkURL(raw string, query bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an absolute http(s) URL such as https://host.example.com", raw)
	}
	if u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q must not carry user info, a query or a fragment", u.Redacted())
	}
	if !query && (u.RawQuery != "" || u.ForceQuery) {
		return fmt.Errorf("%q must not carry user info, a query or a fragment", u.Redacted())
	}
	if u.Scheme == "http" && !IsLoopbackHost(u.Host) {
		return fmt.Errorf("%q %w", raw, ErrNotHTTPS)
	}
	return nil
}

// checkResource checks a canonical resource URI (the /mcp endpoint): a
// CheckURL URL in canonical form, because clients compare the metadata's
// resource with the URL they used character for character (RFC 9728 §3.3):
// lower-case scheme and host.
func checkResource(raw string) error {
	if err := CheckURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if strings.ToLower(u.Host) != u.Host || !strings.HasPrefix(raw, u.Scheme+"://"+u.Host) {
		return fmt.Errorf("%q must be canonical: lower-case scheme and host", raw)
	}
	return nil
}

// checkScope checks one scope token against RFC 6749 §3.3:
// scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
func checkScope(s string) error {
	ok := s != ""
	for i := 0; i < len(s) && ok; i++ {
		b := s[i]
		ok = b == 0x21 || (b >= 0x23 && b <= 0x5B) || (b >= 0x5D && b <= 0x7E)
	}
	if !ok {
		return fmt.Errorf("%q is not a scope (RFC 6749 §3.3: printable ASCII, no space, quote or backslash)", s)
	}
	return nil
}

// MinHMACSecret is the shortest accepted shared secret: HS256's output size
// (RFC 7518 §3.2: a key of the same size as the hash output or larger).
const MinHMACSecret = 32

// checkHMACSecret checks a shared secret's length; the error gives the
// length, never the secret.
func checkHMACSecret(secret []byte) error {
	if len(secret) < MinHMACSecret {
		return fmt.Errorf("holds %d bytes; an HMAC secret needs at least %d (RFC 7518 §3.2; e.g. openssl rand -base64 48 > FILE)", len(secret), MinHMACSecret)
	}
	return nil
}

// DefaultAlgorithms is the JWS allow-list when none is given and there is no
// shared secret: every asymmetric algorithm of RFC 7518 and RFC 8037.
func DefaultAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// HMACAlgorithms are the JWS algorithms verified with a shared secret; the
// default list gains them when there is one.
func HMACAlgorithms() []string { return []string{"HS256", "HS384", "HS512"} }

// errNeedsHMACSecret is wrapped by checkAlgorithm's error for an HS*
// algorithm without a shared secret.
var errNeedsHMACSecret = errors.New("needs a shared hmac secret; without one HMAC is never accepted")

// checkAlgorithm checks one entry of an algorithm allow-list: a name from
// DefaultAlgorithms or HMACAlgorithms, spelled exactly, never "none" (an
// unsigned token proves nothing, RFC 8725 §3.1), and an HMAC one only with
// a shared secret (errors.Is errNeedsHMACSecret), so a public key can never
// serve as an HMAC secret (RFC 8725 §2.1).
func checkAlgorithm(alg string, haveHMACSecret bool) error {
	switch {
	case strings.EqualFold(alg, "none"):
		return fmt.Errorf(`%q is never accepted: an unsigned token proves nothing`, alg)
	case slices.Contains(HMACAlgorithms(), alg):
		if !haveHMACSecret {
			return fmt.Errorf("%q %w", alg, errNeedsHMACSecret)
		}
		return nil
	case !slices.Contains(DefaultAlgorithms(), alg):
		return fmt.Errorf("%q is not a JWS algorithm this server allows; use names from %s (case matters)",
			alg, strings.Join(append(DefaultAlgorithms(), HMACAlgorithms()...), ", "))
	}
	return nil
}
