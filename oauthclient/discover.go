// Package oauthclient is the OAuth client side of mcpgate: it discovers an
// MCP server's authorization server (RFC 9728 protected resource metadata,
// then RFC 8414 / OpenID Connect discovery), logs a user in with the
// authorization code flow, PKCE and a loopback redirect (RFC 8252), and
// keeps the tokens in a per-user cache, refreshing them when they expire.
// The OAuth exchanges themselves are golang.org/x/oauth2's.
package oauthclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpgate/mcpgate/auth"
)

// ResourceMetadata is the RFC 9728 §2 protected resource metadata.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	// RFC 9449 §5.1: the resource accepts DPoP-bound tokens, and may
	// require them.
	DPoPSigningAlgs   []string `json:"dpop_signing_alg_values_supported"`
	DPoPBoundRequired bool     `json:"dpop_bound_access_tokens_required"`
}

// ServerMetadata is the authorization server metadata (RFC 8414; OpenID
// Connect discovery has the same members).
type ServerMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	JWKSURI                       string   `json:"jwks_uri"`
	ScopesSupported               []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	GrantTypesSupported           []string `json:"grant_types_supported"`
	// RFC 9207: the redirect carries iss, to be checked.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
	// Client ID Metadata Documents (MCP 2025-11-25): a client may use an
	// https URL as its client_id.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported"`
	// RFC 9449 §5.1: the server binds tokens to DPoP proofs.
	DPoPSigningAlgs []string `json:"dpop_signing_alg_values_supported"`
}

// Discovery is what a client learns about a protected MCP server before it
// asks for a token.
type Discovery struct {
	Resource ResourceMetadata
	Server   ServerMetadata
	// MetadataURL is where the resource metadata was found.
	MetadataURL string
	// Challenge is the server's WWW-Authenticate answer to a request
	// without a token ("" when it did not send one).
	Challenge string
	// ChallengeScope is the scope parameter of the challenge.
	ChallengeScope string
}

// Errors a caller can branch on.
var (
	// ErrNoMetadata: no protected resource metadata at the challenge's
	// resource_metadata nor at either well-known path.
	ErrNoMetadata = errors.New("oauthclient: the server publishes no protected resource metadata (RFC 9728)")
	// ErrResourceMismatch: the metadata's resource is not the URL asked
	// about (RFC 9728 §3.3 requires them to be equal).
	ErrResourceMismatch = errors.New("oauthclient: the metadata's resource does not match the URL")
	// ErrIssuerMismatch: the authorization server metadata names another
	// issuer than the one it was fetched for (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("oauthclient: the authorization server metadata names another issuer")
)

const maxDocBytes = 1 << 20

// GetJSON fetches a JSON document (at most 1 MiB) into into; an answer
// other than 200 with a JSON media type is an error.
func GetJSON(ctx context.Context, hc *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return fmt.Errorf("GET %s: Content-Type %q, want application/json", u, ct)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes)).Decode(into); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// WellKnownURLs are where RFC 9728 §3.1 puts the metadata of resource: the
// path-inserted form first, then the root of the host.
func WellKnownURLs(resource string) []string {
	u, err := url.Parse(resource)
	if err != nil {
		return nil
	}
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		return []string{root + p, root}
	}
	return []string{root}
}

// Probe sends an unauthenticated MCP request (a ping) to resource and
// returns the status and the WWW-Authenticate header.
func Probe(ctx context.Context, hc *http.Client, resource string) (int, string, error) {
	body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
	resp.Body.Close()
	return resp.StatusCode, strings.Join(resp.Header.Values("WWW-Authenticate"), ", "), nil
}

// Discover finds the protected resource metadata of resource (from the
// challenge of an unauthenticated request, else the well-known paths),
// checks that it names resource, and fetches the first authorization
// server's metadata.
func Discover(ctx context.Context, hc *http.Client, resource string) (*Discovery, error) {
	d := &Discovery{}
	if _, ch, err := Probe(ctx, hc, resource); err == nil {
		d.Challenge = ch
		d.ChallengeScope = ChallengeParam(ch, "scope")
	} else {
		return nil, fmt.Errorf("oauthclient: cannot reach %s: %w", resource, err)
	}
	candidates := WellKnownURLs(resource)
	if rm := ChallengeParam(d.Challenge, "resource_metadata"); rm != "" {
		candidates = append([]string{rm}, candidates...)
	}
	var errs []error
	for _, u := range candidates {
		var m ResourceMetadata
		if err := GetJSON(ctx, hc, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		d.Resource, d.MetadataURL = m, u
		break
	}
	if d.MetadataURL == "" {
		return nil, fmt.Errorf("%w: %v", ErrNoMetadata, errors.Join(errs...))
	}
	if d.Resource.Resource != resource {
		return nil, fmt.Errorf("%w: %s names %q, not %q", ErrResourceMismatch, d.MetadataURL, d.Resource.Resource, resource)
	}
	if len(d.Resource.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("oauthclient: %s names no authorization_servers", d.MetadataURL)
	}
	sm, err := DiscoverServer(ctx, hc, d.Resource.AuthorizationServers[0])
	if err != nil {
		return nil, err
	}
	d.Server = *sm
	return d, nil
}

// ServerMetadataURLs are where an issuer's metadata may be, in the order
// MCP 2025-11-25 §Authorization Server Metadata Discovery tries them.
func ServerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	base := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}
}

// DiscoverServer fetches an authorization server's metadata and checks
// that it names issuer.
func DiscoverServer(ctx context.Context, hc *http.Client, issuer string) (*ServerMetadata, error) {
	var errs []error
	for _, u := range ServerMetadataURLs(issuer) {
		var m ServerMetadata
		if err := GetJSON(ctx, hc, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer {
			return nil, fmt.Errorf("%w: %s names %q, not %q", ErrIssuerMismatch, u, m.Issuer, issuer)
		}
		if err := m.checkHTTPS(); err != nil {
			return nil, err
		}
		return &m, nil
	}
	return nil, fmt.Errorf("oauthclient: no authorization server metadata for %s: %w", issuer, errors.Join(errs...))
}

// ErrNotHTTPS is returned for an authorization server whose issuer or
// endpoints are plain http on a host that is not loopback: codes, client
// secrets and tokens would cross the network in the clear.
var ErrNotHTTPS = errors.New("oauthclient: the authorization server must use https (http only on a loopback host, for local tests)")

// checkHTTPS holds the issuer and every endpoint a login or a refresh
// sends to (RFC 6749 §3.1, §3.2; RFC 8414 §2) to https, loopback excepted.
func (m *ServerMetadata) checkHTTPS() error {
	for _, e := range []struct{ name, url string }{
		{"issuer", m.Issuer}, {"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint}, {"registration_endpoint", m.RegistrationEndpoint},
	} {
		if e.url == "" {
			continue
		}
		u, err := url.Parse(e.url)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && auth.IsLoopbackHost(u.Host))) {
			return fmt.Errorf("%w: its %s is %q", ErrNotHTTPS, e.name, e.url)
		}
	}
	return nil
}
