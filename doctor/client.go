package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// URLOptions configure CheckURL. URL is required.
type URLOptions struct {
	// URL is the gateway's MCP endpoint.
	URL string
	// HTTPClient reaches it; default http.DefaultClient.
	HTTPClient *http.Client
	// Token, when set, is checked too: its claims explained against what
	// the gateway asks for, and sent once.
	Token string
	// UserClaim is the claim the gateway reads the user id from; default
	// "preferred_username" on Keycloak, else "sub".
	UserClaim string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// DPoPKey gives the key a DPoP-bound Token (cnf.jkt) is sent with, as
	// Authorization: DPoP and a proof; nil when there is none.
	DPoPKey func() (*oauthclient.DPoPKey, error)
}

// CheckURL checks a gateway from a client's side: the endpoint answers 401
// with a challenge; metadata at both well-known paths, with resource
// matching; the authorization server's metadata and what MCP clients need
// of it; the usual Keycloak slips (docs/keycloak.md); and with a token, its
// audience, scopes, expiry and user claim.
func CheckURL(ctx context.Context, o URLOptions) *Report {
	r := &Report{}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		r.fail("url", fmt.Sprintf("%q is not an http(s) URL", o.URL), "give the gateway's MCP endpoint, e.g. https://mcp.example.com/mcp")
		return r
	}
	if u.Scheme == "http" && !auth.IsLoopbackHost(u.Host) {
		r.fail("url", "plain http to a remote host", "MCP authorization requires https for every non-loopback endpoint; serve TLS (tls.cert_file, tls.key_file) or put a TLS proxy in front")
	}

	// Reachability, TLS, and the challenge of a request without a token.
	status, challenge, state, err := probe(ctx, hc, o.URL)
	if err != nil {
		r.fail("reach", err.Error(), reachFix(err))
		return r
	}
	r.ok("reach", fmt.Sprintf("%s answers (%d)", u.Host, status))
	if state != nil {
		tlsFindings(r, state, o.Now())
	}
	var scopes []string
	scheme, bearer, isBearer := oauthclient.AuthChallenge(challenge)
	switch {
	case status == http.StatusUnauthorized && isBearer:
		rm := bearer["resource_metadata"]
		scopes = strings.Fields(bearer["scope"])
		if rm == "" {
			r.warn("challenge", "401 without resource_metadata", "clients then guess the well-known path; set server.public_url so the gateway can name it")
		} else {
			r.ok("challenge", fmt.Sprintf("401 %s, resource_metadata %s, scope %q", challengeScheme(scheme), rm, strings.Join(scopes, " ")))
		}
	case status == http.StatusUnauthorized:
		r.fail("challenge", "401 without a Bearer or DPoP challenge", "MCP clients start OAuth from WWW-Authenticate: Bearer resource_metadata=… (DPoP … under auth.dpop: required); check what answers in front of the gateway")
	case status >= 200 && status < 300:
		r.warn("challenge", fmt.Sprintf("a request without a token was answered %d", status), "the endpoint is open to anyone who reaches it; set auth.issuer unless this is a loopback-only gateway")
	default:
		r.fail("challenge", fmt.Sprintf("a request without a token was answered %d, not 401", status), "is this the MCP endpoint (…/mcp)? a proxy in front may answer instead")
	}

	// RFC 9728 metadata at both well-known paths.
	var meta *oauthclient.ResourceMetadata
	for i, mu := range oauthclient.WellKnownURLs(o.URL) {
		check := "metadata"
		if i > 0 {
			check = "metadata (root)"
		}
		if i > 0 && config.ServerNameOf(o.URL) != "" {
			// The root document is the gateway's /mcp resource; a server
			// at /mcp/<name> has only its path-inserted one.
			continue
		}
		var m oauthclient.ResourceMetadata
		if err := oauthclient.GetJSON(ctx, hc, mu, &m); err != nil {
			r.fail(check, err.Error(), "the gateway serves it when auth.issuer is set; a proxy must pass /.well-known/oauth-protected-resource… through")
			continue
		}
		if m.Resource != o.URL {
			r.fail(check, fmt.Sprintf("%s names resource %q, not %q", mu, m.Resource, o.URL),
				"server.public_url + /mcp must be the URL clients use, character for character (scheme, host, port)")
			continue
		}
		r.ok(check, fmt.Sprintf("%s: resource matches, authorization_servers %v", mu, m.AuthorizationServers))
		if meta == nil {
			meta = &m
		}
	}
	if meta == nil {
		return r
	}
	if len(scopes) == 0 {
		scopes = meta.ScopesSupported
	}
	if len(meta.AuthorizationServers) == 0 {
		r.fail("authorization server", "the metadata names no authorization_servers", "set auth.issuer (or auth.authorization_servers)")
		return r
	}

	// The authorization server.
	issuer := meta.AuthorizationServers[0]
	as, err := oauthclient.DiscoverServer(ctx, hc, issuer)
	if err != nil {
		fix := "the issuer URL must be exactly the one in its discovery document; check auth.issuer (Keycloak: KC_HOSTNAME)"
		if !errors.Is(err, oauthclient.ErrIssuerMismatch) {
			fix = "the issuer must be reachable from clients, not only from the gateway: check its public hostname and TLS"
		}
		r.fail("authorization server", err.Error(), fix)
		return r
	}
	r.ok("authorization server", fmt.Sprintf("%s: authorize %s, token %s", as.Issuer, as.AuthorizationEndpoint, as.TokenEndpoint))
	if slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		r.ok("pkce", "S256 advertised")
	} else {
		r.fail("pkce", "code_challenge_methods_supported lacks S256", "MCP clients refuse a server that does not advertise PKCE S256; enable PKCE at the authorization server")
	}
	keycloak := strings.Contains(as.Issuer, "/realms/")
	if as.RegistrationEndpoint != "" {
		r.ok("registration", "dynamic client registration at "+as.RegistrationEndpoint)
	} else {
		r.warn("registration", "no registration_endpoint", "clients then need a pre-registered client id (mcpgate login --client-id); or enable dynamic registration")
	}
	if !as.IssParameterSupported {
		r.warn("iss parameter", "authorization_response_iss_parameter_supported is not advertised", "MCP 2026-07-28 asks servers for RFC 9207 iss; newer clients may rely on it")
	}
	if len(as.ScopesSupported) > 0 {
		var missing []string
		for _, s := range meta.ScopesSupported {
			if !slices.Contains(as.ScopesSupported, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			fix := "create them at the authorization server"
			if keycloak {
				fix = "create them as client scopes of the realm, as realm default or optional scopes (docs/keycloak.md §1)"
			}
			r.fail("scopes", fmt.Sprintf("the gateway advertises %v, which the authorization server does not offer", missing), fix)
		} else {
			r.ok("scopes", fmt.Sprintf("%v offered by the authorization server", meta.ScopesSupported))
		}
	}
	if keycloak {
		// docs/keycloak.md, "Dynamic registration: the scope caveat".
		for _, s := range []struct{ scope, why string }{
			{"profile", "a dynamically registered client gets only what it asks for, and without profile its tokens carry no preferred_username"},
			{"offline_access", "without it dynamically registered clients get no refresh token"},
		} {
			if !slices.Contains(meta.ScopesSupported, s.scope) {
				r.warn("keycloak "+s.scope, s.scope+" is not advertised: "+s.why, "add it to auth.extra_scopes")
			}
		}
	}

	if o.Token != "" {
		checkToken(ctx, r, hc, o, as.Issuer, scopes, keycloak)
	}
	return r
}

// checkToken explains a token's claims (without verifying the signature:
// the gateway does that when the token is sent, last).
func checkToken(ctx context.Context, r *Report, hc *http.Client, o URLOptions, issuer string, want []string, keycloak bool) {
	claims, err := jwtClaims(o.Token)
	proved := true // an unbound token, or a DPoP-bound one with its key
	if err == nil {
		hc, proved = dpopFor(r, hc, o, claims)
	}
	if err != nil {
		r.warn("token", "not a JWT ("+err.Error()+")", "the gateway refuses an opaque token unless auth.introspection is opaque or all (docs/configuration.md)")
	} else {
		if iss, _ := claims["iss"].(string); iss != issuer {
			r.fail("token iss", fmt.Sprintf("%q, not the authorization server %q", iss, issuer), "auth.issuer, the metadata and the token must agree exactly (Keycloak: KC_HOSTNAME)")
		} else {
			r.ok("token iss", iss)
		}
		if auds := audiences(claims["aud"]); slices.Contains(auds, o.URL) {
			r.ok("token aud", fmt.Sprintf("%v names this resource", auds))
		} else {
			fix := "the authorization server must put the resource URI in aud (RFC 8707)"
			if keycloak {
				fix = "add an audience mapper with the resource URI to the mcp:use client scope (docs/keycloak.md)"
			}
			r.fail("token aud", fmt.Sprintf("%v does not name %s", auds, o.URL), fix)
		}
		if exp, ok := claims["exp"].(float64); !ok {
			r.fail("token exp", "no exp", "mcpgate requires exp")
		} else if t := time.Unix(int64(exp), 0); !t.After(o.Now()) {
			r.fail("token exp", "expired at "+t.UTC().Format(time.RFC3339), "get a new token (mcpgate token refreshes a cached login)")
		} else {
			r.ok("token exp", "valid for "+t.Sub(o.Now()).Round(time.Second).String())
		}
		have := tokenScopes(claims)
		var missing []string
		for _, s := range want {
			if !slices.Contains(have, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			r.warn("token scopes", fmt.Sprintf("has %v, lacks %v", have, missing), "a missing required scope is 403 insufficient_scope, a missing write scope a read-only session; ask for them at login (--scope)")
		} else {
			r.ok("token scopes", fmt.Sprintf("%v", have))
		}
		claim := o.UserClaim
		if claim == "" {
			claim = "sub"
			if keycloak {
				claim = "preferred_username"
			}
		}
		if user, _ := claims[claim].(string); user == "" {
			fix := "the gateway refuses a token without a user id (auth.user_claim)"
			if claim == "preferred_username" {
				fix += "; Keycloak emits it with the profile scope"
			}
			r.fail("token user", "no "+claim+" claim", fix)
		} else {
			r.ok("token user", claim+" = "+user)
		}
	}
	if !proved {
		return
	}
	status, ch, _, err := send(ctx, hc, o.URL, o.Token)
	switch {
	case err != nil:
		r.fail("token accepted", err.Error(), "")
	case status == http.StatusUnauthorized:
		r.fail("token accepted", "401: "+oauthclient.ChallengeParam(ch, "error_description"), "see the token findings above; the gateway's log says which check failed")
	case status == http.StatusForbidden:
		r.fail("token accepted", "403 "+oauthclient.ChallengeParam(ch, "error")+" (scope "+oauthclient.ChallengeParam(ch, "scope")+")", "the token lacks a required scope")
	default:
		r.ok("token accepted", fmt.Sprintf("past authentication (a bare ping was answered %d)", status))
	}
}

func jwtClaims(tok string) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("not three dot-separated parts")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("payload is not base64url")
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, errors.New("payload is not JSON")
	}
	return c, nil
}

func audiences(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// tokenScopes reads scope (space-separated, Keycloak) or scp (Ory).
func tokenScopes(c map[string]any) []string {
	if s, ok := c["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch v := c["scp"].(type) {
	case string:
		return strings.Fields(v)
	case []any:
		return audiences(v)
	}
	return nil
}

func probe(ctx context.Context, hc *http.Client, u string) (int, string, *tls.ConnectionState, error) {
	return send(ctx, hc, u, "")
}

func send(ctx context.Context, hc *http.Client, u, token string) (int, string, *tls.ConnectionState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	resp.Body.Close()
	return resp.StatusCode, strings.Join(resp.Header.Values("WWW-Authenticate"), ", "), resp.TLS, nil
}

// reachFix says what to do about a failed connection.
func reachFix(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return "the certificate is not from a CA this machine trusts: use a CA's certificate, or pass --ca-file with the self-signed one"
	case errors.As(err, &host):
		return "the certificate does not name this host: issue it for the public hostname (mcpgate certs --host NAME)"
	case errors.As(err, &invalid):
		return "the certificate is expired or not yet valid: renew it (the gateway reloads it when the files change)"
	}
	return "is the gateway running, and is the port open from here? (server.listen)"
}

// tlsFindings reports the negotiated TLS and the certificate's expiry.
func tlsFindings(r *Report, st *tls.ConnectionState, now time.Time) {
	if len(st.PeerCertificates) == 0 {
		return
	}
	leaf := st.PeerCertificates[0]
	days := int(leaf.NotAfter.Sub(now).Hours() / 24)
	detail := fmt.Sprintf("%s, certificate for %v expires in %d days", tls.VersionName(st.Version), leaf.DNSNames, days)
	switch {
	case days < 7:
		r.fail("tls", detail, "renew the certificate now")
	case days < 21:
		r.warn("tls", detail, "renew the certificate soon")
	default:
		r.ok("tls", detail)
	}
}

// challengeScheme spells a challenge's scheme as servers send it.
func challengeScheme(s string) string {
	if s == "dpop" {
		return "DPoP (only: the gateway requires DPoP-bound tokens)"
	}
	return "Bearer"
}
