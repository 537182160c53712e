package authtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The interactive half of the test issuer, for OAuth clients such as
// `mcpgate login`: dynamic client registration (RFC 7591), an authorization
// endpoint that approves every request at once as LoginUser, or as the
// request's login_hint (no login page:
// a test's "browser" just follows the redirect), authorization codes bound
// to PKCE S256 (RFC 7636), the redirect's iss parameter (RFC 9207), and
// refresh tokens. Only for tests.

// grants holds the issuer's codes, refresh tokens and registered clients.
type grants struct {
	mu      sync.Mutex
	codes   map[string]grant
	refresh map[string]grant
	clients map[string][]string       // client_id → redirect URIs
	claims  map[string]map[string]any // user → extra claims (SetUserClaims)

	refreshes atomic.Int64
}

type grant struct {
	client, redirect, challenge, user, aud, nonce string
	jkt                                           string // the DPoP key the tokens are bound to
	scopes                                        []string
	expires                                       time.Time
}

func (g *grants) init() {
	if g.codes == nil {
		g.codes, g.refresh, g.clients = map[string]grant{}, map[string]grant{}, map[string][]string{}
	}
}

// SetUserClaims adds claims to the tokens the authorization code grant
// issues for user, access and ID token alike: roles (realm_access,
// resource_access), groups, a name.
func (i *Issuer) SetUserClaims(user string, claims map[string]any) {
	i.grants.mu.Lock()
	defer i.grants.mu.Unlock()
	if i.grants.claims == nil {
		i.grants.claims = map[string]map[string]any{}
	}
	i.grants.claims[user] = claims
}

// Refreshes counts refresh-token grants served.
func (i *Issuer) Refreshes() int { return int(i.grants.refreshes.Load()) }

// register is RFC 7591 dynamic client registration for public clients.
func (i *Issuer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	id := "dyn-" + randomID()
	i.grants.mu.Lock()
	i.grants.init()
	i.grants.clients[id] = req.RedirectURIs
	i.grants.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{
		"client_id": id, "client_name": req.ClientName, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
}

// authorize approves at once and redirects with a code bound to the PKCE
// challenge, the redirect URI, the scopes and the RFC 8707 resource.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect := q.Get("client_id"), q.Get("redirect_uri")
	i.grants.mu.Lock()
	i.grants.init()
	uris, registered := i.grants.clients[client]
	i.grants.mu.Unlock()
	if client == "" || redirect == "" || (registered && !contains(uris, redirect)) {
		http.Error(w, "authtest: unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back, err := url.Parse(redirect)
	if err != nil {
		http.Error(w, "authtest: bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := back.Query()
	v.Set("iss", i.URL)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		v.Set("error", "invalid_request")
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
		return
	}
	aud := q.Get("resource")
	if aud == "" {
		aud = i.Audience
	}
	user := i.LoginUser
	if hint := q.Get("login_hint"); hint != "" {
		user = hint // OpenID Connect Core §3.1.2.1: who is expected to log in
	}
	if user == "" {
		user = "alice"
	}
	code := randomID()
	i.grants.mu.Lock()
	i.grants.codes[code] = grant{client: client, redirect: redirect, challenge: q.Get("code_challenge"),
		user: user, aud: aud, nonce: q.Get("nonce"), scopes: strings.Fields(q.Get("scope")), expires: time.Now().Add(time.Minute)}
	i.grants.mu.Unlock()
	v.Set("code", code)
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// userGrant serves the authorization_code and refresh_token grants; ok
// false means the request was answered with an error.
func (i *Issuer) userGrant(w http.ResponseWriter, r *http.Request, jkt string) {
	f := r.PostForm
	i.grants.mu.Lock()
	i.grants.init()
	var g grant
	var found bool
	switch f.Get("grant_type") {
	case "authorization_code":
		g, found = i.grants.codes[f.Get("code")]
		delete(i.grants.codes, f.Get("code")) // single use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		client := f.Get("client_id")
		if id, _, ok := r.BasicAuth(); ok && client == "" {
			client = id // RFC 6749 §2.3.1: the client may authenticate in the header
		}
		if found && (g.redirect != f.Get("redirect_uri") || g.client != client ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || time.Now().After(g.expires)) {
			found = false
		}
	case "refresh_token":
		g, found = i.grants.refresh[f.Get("refresh_token")]
		delete(i.grants.refresh, f.Get("refresh_token")) // rotated
		i.grants.refreshes.Add(1)
		if found && g.jkt != "" && g.jkt != jkt {
			// RFC 9449 §5: a bound public client's refresh token needs
			// a proof of the same key.
			i.grants.mu.Unlock()
			oauthError(w, http.StatusBadRequest, "invalid_dpop_proof")
			return
		}
	}
	if found && g.jkt == "" {
		g.jkt = jkt
	}
	var rt string
	var extra map[string]any
	if found {
		rt = randomID()
		i.grants.refresh[rt] = g
		extra = i.grants.claims[g.user]
	}
	i.grants.mu.Unlock()
	if !found {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	c := i.KeycloakClaims(g.user, g.aud, g.scopes...)
	c["azp"] = g.client
	ttl := i.AccessTokenTTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	c["exp"] = i.Now().Add(ttl).Unix()
	for k, v := range extra {
		c[k] = v
	}
	typ := "Bearer"
	if g.jkt != "" {
		c["cnf"], typ = map[string]any{"jkt": g.jkt}, "DPoP"
	}
	tok, err := i.Sign(c, SignOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	answer := map[string]any{
		"access_token": tok, "token_type": typ, "expires_in": int(ttl.Seconds()),
		"refresh_token": rt, "scope": strings.Join(g.scopes, " "),
	}
	if contains(g.scopes, "openid") {
		// OpenID Connect Core §3.1.3.3: an ID token for the client, with
		// the nonce of the authorization request.
		id := map[string]any{
			"iss": i.URL, "sub": c["sub"], "aud": g.client, "azp": g.client,
			"exp": c["exp"], "iat": i.Now().Unix(), "preferred_username": g.user,
		}
		if g.nonce != "" {
			id["nonce"] = g.nonce
		}
		for k, v := range extra {
			id[k] = v
		}
		if answer["id_token"], err = i.Sign(id, SignOptions{}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(answer)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
