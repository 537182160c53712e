package oauthclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// LoginOptions configure Login. Resource is required; the zero value of
// the rest is a safe default.
type LoginOptions struct {
	// Resource is the MCP server's URL (its canonical resource URI).
	Resource string
	// HTTPClient reaches the server and the authorization server;
	// default http.DefaultClient.
	HTTPClient *http.Client
	// ClientID is a pre-registered client id, or an https URL of a
	// Client ID Metadata Document when the server supports those. Empty:
	// dynamic registration (RFC 7591) when offered.
	ClientID string
	// ClientSecret goes with a confidential pre-registered ClientID.
	ClientSecret string
	// Scopes to ask for; default the challenge's scope, else the
	// resource's scopes_supported.
	Scopes []string
	// ClientName is sent at registration; default "mcpgate".
	ClientName string
	// OpenBrowser sends the user to the authorization URL; required (the
	// command prints the URL and starts the system browser; tests follow
	// the redirect with an HTTP client).
	OpenBrowser func(authURL string) error
	// Timeout bounds the wait for the browser's redirect; default five
	// minutes.
	Timeout time.Duration
	// Previous is the cached entry of an earlier login: its registered
	// client and loopback port are reused when they still fit.
	Previous *Entry
	// DPoP says whether to ask for DPoP-bound tokens (RFC 9449): "on",
	// "off", or "auto" (the default): when the resource offers them (its
	// metadata requires them or lists dpop_signing_alg_values_supported,
	// or its challenge to a request without a token has the DPoP scheme,
	// RFC 9449 §7.1), and the authorization server's metadata lists ES256
	// among its dpop_signing_alg_values_supported.
	DPoP string
	// DPoPKey returns the key proofs are made with; required unless DPoP
	// is "off".
	DPoPKey func() (*DPoPKey, error)
}

// wantDPoP decides o.DPoP for the discovered metadata.
func wantDPoP(mode string, d *Discovery) (bool, error) {
	switch mode {
	case "off":
		return false, nil
	case "on":
		return true, nil
	case "", "auto":
		offered := d.Resource.DPoPBoundRequired || len(d.Resource.DPoPSigningAlgs) > 0 ||
			slices.ContainsFunc(ParseChallenges(d.Challenge), func(c Challenge) bool { return c.Scheme == "dpop" })
		return offered && slices.Contains(d.Server.DPoPSigningAlgs, "ES256"), nil
	}
	return false, fmt.Errorf("oauthclient: DPoP must be auto, on or off, not %q", mode)
}

// ErrAuthorization is a refusal by the authorization server or the user.
var ErrAuthorization = errors.New("oauthclient: authorization failed")

// Login runs the authorization code flow with PKCE (S256) through a
// loopback redirect (RFC 8252 §7.3) and returns the cache entry, tokens
// included. It sends the RFC 8707 resource parameter and checks the RFC 9207
// iss of the redirect.
func Login(ctx context.Context, o LoginOptions) (*Entry, error) {
	if o.OpenBrowser == nil {
		return nil, errors.New("oauthclient: LoginOptions.OpenBrowser is required")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	d, err := Discover(ctx, hc, o.Resource)
	if err != nil {
		return nil, err
	}
	as := d.Server
	if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
		return nil, fmt.Errorf("oauthclient: %s publishes no authorization or token endpoint", as.Issuer)
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		// MCP 2025-11-25: a client must refuse a server that does not
		// advertise PKCE S256.
		return nil, fmt.Errorf("oauthclient: %s does not advertise PKCE S256 (code_challenge_methods_supported); refusing to log in without it", as.Issuer)
	}
	dpop, err := wantDPoP(o.DPoP, d)
	if err != nil {
		return nil, err
	}
	if dpop {
		if o.DPoPKey == nil {
			return nil, errors.New("oauthclient: LoginOptions.DPoPKey is required for DPoP")
		}
		key, err := o.DPoPKey()
		if err != nil {
			return nil, err
		}
		hc = DPoPClient(hc, key, as.TokenEndpoint, nil)
	}
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = strings.Fields(d.ChallengeScope)
	}
	if len(scopes) == 0 {
		scopes = d.Resource.ScopesSupported
	}

	ln, err := listenLoopback(o.Previous, as.Issuer, o.Resource)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr().String())

	e := &Entry{Issuer: as.Issuer, Resource: o.Resource, AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint,
		RedirectURI: redirect, Scopes: scopes, ResourceParam: true, DPoP: dpop}
	switch {
	case o.ClientID != "":
		e.ClientID, e.ClientSecret = o.ClientID, o.ClientSecret
	case o.Previous != nil && o.Previous.Registered && o.Previous.Issuer == as.Issuer && o.Previous.RedirectURI == redirect:
		e.ClientID, e.ClientSecret, e.Registered = o.Previous.ClientID, o.Previous.ClientSecret, true
	case as.RegistrationEndpoint != "":
		name := o.ClientName
		if name == "" {
			name = "mcpgate"
		}
		if e.ClientID, e.ClientSecret, err = register(ctx, hc, as.RegistrationEndpoint, name, redirect); err != nil {
			return nil, err
		}
		e.Registered = true
	default:
		return nil, fmt.Errorf("oauthclient: %s offers no dynamic client registration; register a public client with redirect URI http://127.0.0.1/callback (any port) and pass --client-id", as.Issuer)
	}

	cfg := e.Config()
	verifier := oauth2.GenerateVerifier()
	state := randomString()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", o.Resource))

	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := checkRedirect(q, state, as)
		if res == nil {
			io.WriteString(w, "mcpgate: logged in. You can close this window.\n")
			select {
			case done <- result{code: q.Get("code")}:
			default:
			}
			return
		}
		http.Error(w, "mcpgate: "+res.Error(), http.StatusBadRequest)
		if errors.Is(res, errWrongState) {
			return // not our redirect: keep waiting for the real one
		}
		select {
		case done <- result{err: res}:
		default:
		}
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		<-served
	}()

	if err := o.OpenBrowser(authURL); err != nil {
		return nil, fmt.Errorf("oauthclient: opening the browser: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var res result
	select {
	case res = <-done:
	case <-wait.Done():
		return nil, fmt.Errorf("oauthclient: no redirect from the browser within %s", o.Timeout)
	}
	if res.err != nil {
		return nil, res.err
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), res.code,
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", o.Resource))
	if err != nil {
		return nil, fmt.Errorf("%w: exchanging the code: %v", ErrAuthorization, err)
	}
	e.AccessToken, e.TokenType, e.RefreshToken, e.Expiry = tok.AccessToken, tok.Type(), tok.RefreshToken, tok.Expiry
	return e, nil
}

var errWrongState = errors.New("the redirect's state is not this login's")

// checkRedirect checks the authorization response: state, error, and the
// RFC 9207 iss (required when the server advertises it, and must match
// whenever present: a mix-up attack sends another server's code here).
func checkRedirect(q url.Values, state string, as ServerMetadata) error {
	if q.Get("state") != state {
		return errWrongState
	}
	iss, hasIss := q["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != as.Issuer):
		return fmt.Errorf("%w: the redirect's iss %q is not %q (RFC 9207 mix-up check)", ErrAuthorization, q.Get("iss"), as.Issuer)
	case !hasIss && as.IssParameterSupported:
		return fmt.Errorf("%w: the redirect lacks iss although %s advertises it (RFC 9207)", ErrAuthorization, as.Issuer)
	}
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("%w: %s %s", ErrAuthorization, e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		return fmt.Errorf("%w: the redirect carries no code", ErrAuthorization)
	}
	return nil
}

// listenLoopback listens on 127.0.0.1, on the previous login's port when
// it is free (a registered redirect URI names its port), else on any port.
func listenLoopback(prev *Entry, issuer, resource string) (net.Listener, error) {
	if prev != nil && prev.Issuer == issuer && prev.Resource == resource {
		if u, err := url.Parse(prev.RedirectURI); err == nil && u.Hostname() == "127.0.0.1" {
			if ln, err := net.Listen("tcp", u.Host); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauthclient: loopback listener for the redirect: %w", err)
	}
	return ln, nil
}

// register is RFC 7591 dynamic registration of a native public client
// (application_type from OpenID Connect Dynamic Client Registration).
func register(ctx context.Context, hc *http.Client, endpoint, name, redirect string) (id, secret string, err error) {
	body, _ := json.Marshal(map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"application_type":           "native",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("oauthclient: registering the client: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var e struct {
			ErrorDescription string `json:"error_description"`
		}
		json.Unmarshal(raw, &e)
		hint := ""
		if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized {
			// Keycloak's anonymous registration policy ("Trusted Hosts")
			// refuses hosts it does not list; see docs/keycloak.md.
			hint = "; the server refuses anonymous registration (Keycloak: the realm's Trusted Hosts client registration policy must allow this host), or pass --client-id"
		}
		return "", "", fmt.Errorf("oauthclient: registering the client at %s: %s %s%s", endpoint, resp.Status, e.ErrorDescription, hint)
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.ClientID == "" {
		return "", "", fmt.Errorf("oauthclient: registering the client at %s: the answer has no client_id", endpoint)
	}
	return out.ClientID, out.ClientSecret, nil
}

func randomString() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
