package web

// The operator view's login: OpenID Connect at the gateway's issuer
// (authorization code with PKCE and a nonce, the ID token verified by
// go-oidc, RFC 9207's iss checked), and whether a login may see the view.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

func parseRequire(req string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(req, ":")
	if !ok || name == "" || !slices.Contains([]string{"scope", "role", "group"}, kind) {
		return "", "", fmt.Errorf("web: %q is not scope:NAME, role:NAME or group:NAME", req)
	}
	return kind, name, nil
}

// loginState is the signed content of the login cookie, between the
// redirect to the issuer and the callback.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// oauth returns the client, discovering the issuer on first use.
func (a *Admin) oauth(ctx context.Context) (*oidc.Provider, *oauth2.Config, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.provider
	if p == nil {
		// One discovery at a time, and none for discoveryRetry after one
		// failed: visitors of /admin/login cannot make the gateway hammer
		// an issuer that is down.
		if !a.failedAt.IsZero() && a.opts.Now().Sub(a.failedAt) < discoveryRetry {
			return nil, nil, a.failedErr
		}
		var err error
		p, err = oidc.NewProvider(oidc.ClientContext(ctx, a.opts.HTTPClient), a.opts.Issuer)
		if err != nil {
			a.failedAt, a.failedErr = a.opts.Now(), err
			return nil, nil, err
		}
		a.provider = p
	}
	scopes := []string{oidc.ScopeOpenID, "profile"}
	if kind, name, _ := parseRequire(a.opts.Require); kind == "scope" {
		scopes = append(scopes, name)
	}
	ep := p.Endpoint()
	if a.opts.ClientSecret == "" {
		ep.AuthStyle = oauth2.AuthStyleInParams // a public client: PKCE is its proof
	}
	return p, &oauth2.Config{ClientID: a.opts.ClientID, ClientSecret: a.opts.ClientSecret,
		Endpoint: ep, RedirectURL: a.opts.RedirectURL, Scopes: scopes}, nil
}

// login sends the browser to the issuer with a fresh state, nonce and PKCE
// verifier, kept in a signed cookie until the callback. That cookie is
// SameSite=Lax: the callback is a navigation from the issuer's site.
func (a *Admin) login(w http.ResponseWriter, r *http.Request) {
	_, cfg, err := a.oauth(r.Context())
	if err != nil {
		a.log.Warn("web: the operator view cannot reach the issuer", "issuer", a.opts.Issuer, "err", err)
		a.fail(w, http.StatusServiceUnavailable, "The issuer cannot be reached, so you cannot log in now. Try again in a moment.")
		return
	}
	st := loginState{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Expires: a.opts.Now().Add(loginTTL).Unix()}
	v, err := a.cookie.encode(loginCookie, st)
	if err != nil {
		a.fail(w, http.StatusInternalServerError, "The login could not start.")
		return
	}
	setCookie(w, loginCookie, v, loginTTL, http.SameSiteLaxMode)
	http.Redirect(w, r, cfg.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce)), http.StatusSeeOther)
}

// callback completes the login: the state must be the cookie's, the code
// is exchanged with the PKCE verifier, the ID token is verified (issuer,
// audience, signature, expiry) and must carry the cookie's nonce, and the
// login must hold Require.
func (a *Admin) callback(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(loginCookie)
	var st loginState
	if err != nil || a.cookie.decode(loginCookie, c.Value, &st) != nil || a.opts.Now().Unix() >= st.Expires {
		a.fail(w, http.StatusBadRequest, "This login has no state here (it expired, or it was started elsewhere). Log in again.")
		return
	}
	setCookie(w, loginCookie, "", 0, http.SameSiteLaxMode) // single use
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1 {
		a.log.Warn("web: an operator login came back with another state", "remote", r.RemoteAddr)
		a.fail(w, http.StatusBadRequest, "The login's state does not match. Log in again.")
		return
	}
	if e := q.Get("error"); e != "" {
		a.fail(w, http.StatusForbidden, "The issuer refused the login.")
		return
	}
	if iss := q.Get("iss"); iss != "" && iss != a.opts.Issuer {
		// RFC 9207: the answer comes from another issuer (mix-up).
		a.fail(w, http.StatusBadRequest, "The login came back from another issuer.")
		return
	}
	p, cfg, err := a.oauth(r.Context())
	if err != nil {
		a.fail(w, http.StatusServiceUnavailable, "The issuer cannot be reached. Try again in a moment.")
		return
	}
	ctx := oidc.ClientContext(r.Context(), a.opts.HTTPClient)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(st.Verifier))
	if err != nil {
		a.log.Warn("web: an operator login's code exchange failed", "err", err)
		a.fail(w, http.StatusForbidden, "The issuer did not accept the login's code. Log in again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.Verifier(&oidc.Config{ClientID: a.opts.ClientID, Now: a.opts.Now}).Verify(ctx, raw)
	if err != nil {
		a.log.Warn("web: an operator login's ID token was refused", "err", err)
		a.fail(w, http.StatusForbidden, "The login's ID token is not valid.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1 {
		a.log.Warn("web: an operator login's ID token carries another nonce", "sub", idt.Subject)
		a.fail(w, http.StatusForbidden, "The login's ID token was not made for this login.")
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		a.fail(w, http.StatusForbidden, "The login's ID token is not valid.")
		return
	}
	granted, _ := tok.Extra("scope").(string)
	if _, present := tok.Extra("scope").(string); !present {
		// RFC 6749 §5.1: no scope in the answer means the scope asked for.
		granted = strings.Join(cfg.Scopes, " ")
	}
	user := nameOf(claims, idt.Subject)
	act := Action{Time: a.opts.Now(), Name: "admin/login", Admin: user, AdminIssuer: idt.Issuer, AdminSub: idt.Subject}
	if !Authorized(a.opts.Require, a.opts.ClientID, claims, strings.Fields(granted)) {
		a.log.Warn("web: refused an operator login without the required scope, role or group", "user", user, "require", a.opts.Require)
		act.Outcome = "refused"
		a.audit(act)
		// The page does not name Require: role and group names are not
		// public (the connect page leaves them out too).
		a.fail(w, http.StatusForbidden, "This account may not open the operator view. Ask the gateway's operators for access.")
		return
	}
	s := session{User: user, Subject: idt.Subject, Issuer: idt.Issuer, CSRF: random(), Expires: a.opts.Now().Add(a.opts.SessionTTL).Unix()}
	v, err := a.cookie.encode(sessionCookie, s)
	if err != nil {
		a.fail(w, http.StatusInternalServerError, "The login could not be completed.")
		return
	}
	act.Outcome = "ok"
	a.audit(act)
	setCookie(w, sessionCookie, v, a.opts.SessionTTL, http.SameSiteStrictMode)
	// A SameSite=Strict cookie is not sent on a redirect that began at the
	// issuer's site: a page of our own moves on to the view.
	render(w, a.log, "continue.html", http.StatusOK, nil)
}

// nameOf is the operator's name for the page and the audit trail.
func nameOf(claims map[string]any, sub string) string {
	for _, k := range []string{"preferred_username", "email", "name"} {
		if s, ok := claims[k].(string); ok && s != "" {
			return s
		}
	}
	return sub
}

// Authorized reports whether a login holds require: for "scope:NAME" the
// granted scopes; for "role:NAME" the ID token's realm_access.roles,
// resource_access.<clientID>.roles or roles; for "group:NAME" its groups
// (Keycloak writes a group as its path, /NAME, or as NAME).
func Authorized(require, clientID string, claims map[string]any, scopes []string) bool {
	kind, name, err := parseRequire(require)
	if err != nil {
		return false
	}
	switch kind {
	case "scope":
		return slices.Contains(scopes, name)
	case "role":
		if ra, ok := claims["realm_access"].(map[string]any); ok && holds(ra["roles"], name) {
			return true
		}
		if res, ok := claims["resource_access"].(map[string]any); ok {
			if c, ok := res[clientID].(map[string]any); ok && holds(c["roles"], name) {
				return true
			}
		}
		return holds(claims["roles"], name)
	case "group":
		return holds(claims["groups"], name) || !strings.HasPrefix(name, "/") && holds(claims["groups"], "/"+name)
	}
	return false
}

func holds(list any, name string) bool {
	l, ok := list.([]any)
	if !ok {
		return false
	}
	for _, v := range l {
		if s, ok := v.(string); ok && s == name {
			return true
		}
	}
	return false
}
