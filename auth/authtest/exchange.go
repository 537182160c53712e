package authtest

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// RFC 8693 vocabulary, as the token endpoint reads it.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// exchange is the token endpoint's RFC 8693 token exchange, by Keycloak's
// standard token exchange rules (26.2 and later): a confidential client
// authenticates, the subject token is an access token of this issuer that
// names the requesting client among its audiences, audience names a client
// of the realm, and the exchanged token is an access token for it.
type exchange struct {
	mu         sync.Mutex
	clients    map[string]string // confidential clients allowed to exchange: id → secret
	audiences  map[string]bool   // clients of the realm an exchanged token may be for
	refused    map[string]string // user → the error code their exchanges get
	failStatus int
	hold       chan struct{}
	entered    chan struct{}
	ttl        time.Duration
	padding    int
	exchanges  atomic.Int64
	issued     map[string][]string // user → the tokens exchanged for them
}

// SetExchangeClient lets the confidential client id, authenticating with
// secret (HTTP Basic or client_secret_post), exchange tokens.
func (i *Issuer) SetExchangeClient(id, secret string) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	if i.exch.clients == nil {
		i.exch.clients = map[string]string{}
	}
	i.exch.clients[id] = secret
}

// AddClient makes id a client of the realm that exchanged tokens may be
// for (the audience parameter); any other is "Audience not found".
func (i *Issuer) AddClient(id string) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	if i.exch.audiences == nil {
		i.exch.audiences = map[string]bool{}
	}
	i.exch.audiences[id] = true
}

// RefuseExchange makes every exchange of user's tokens fail with the
// error code (access_denied, say; 403 for that one, 400 for others); ""
// lets them through again.
func (i *Issuer) RefuseExchange(user, code string) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	if i.exch.refused == nil {
		i.exch.refused = map[string]string{}
	}
	if code == "" {
		delete(i.exch.refused, user)
		return
	}
	i.exch.refused[user] = code
}

// FailExchange makes every exchange answer status with an HTML body (a
// broken proxy in front of the issuer), or normally again with 0.
func (i *Issuer) FailExchange(status int) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	i.exch.failStatus = status
}

// SetExchangeTTL sets the lifetime of exchanged tokens (default five
// minutes).
func (i *Issuer) SetExchangeTTL(d time.Duration) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	i.exch.ttl = d
}

// PadExchangedTokens adds a claim of n bytes to every exchanged token, to
// make one larger than any client should take.
func (i *Issuer) PadExchangedTokens(n int) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	i.exch.padding = n
}

// HoldExchanges makes every exchange wait, from now on, until release is
// called; entered receives once per exchange that waits.
func (i *Issuer) HoldExchanges() (entered <-chan struct{}, release func()) {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	hold, in := make(chan struct{}), make(chan struct{}, 1024)
	i.exch.hold, i.exch.entered = hold, in
	var once sync.Once
	return in, func() {
		once.Do(func() {
			i.exch.mu.Lock()
			i.exch.hold, i.exch.entered = nil, nil
			i.exch.mu.Unlock()
			close(hold)
		})
	}
}

// ExchangedFor returns the tokens the endpoint issued for user's subject
// tokens, oldest first, for tests to compare with what a worker got.
func (i *Issuer) ExchangedFor(user string) []string {
	i.exch.mu.Lock()
	defer i.exch.mu.Unlock()
	return append([]string(nil), i.exch.issued[user]...)
}

// Exchanges counts the token exchange requests the endpoint received.
func (i *Issuer) Exchanges() int { return int(i.exch.exchanges.Load()) }

// keycloakError answers as Keycloak does: an OAuth error code and a
// description.
func keycloakError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// tokenExchange serves grant_type token-exchange (called by token).
func (i *Issuer) tokenExchange(w http.ResponseWriter, r *http.Request) {
	x := &i.exch
	x.exchanges.Add(1)
	x.mu.Lock()
	hold, entered, failStatus := x.hold, x.entered, x.failStatus
	ttl, padding := x.ttl, x.padding
	x.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if failStatus != 0 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(failStatus)
		w.Write([]byte("<html><body>upstream error</body></html>"))
		return
	}
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	// Client authentication: Basic (each part form-encoded, RFC 6749
	// §2.3.1) or client_secret_post. A public client cannot exchange.
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	x.mu.Lock()
	want, known := x.clients[id]
	x.mu.Unlock()
	if !known || secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		keycloakError(w, http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
		return
	}
	f := r.PostForm
	subject := f.Get("subject_token")
	switch {
	case subject == "":
		keycloakError(w, http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' missing")
		return
	case f.Get("subject_token_type") != tokenTypeAccess:
		keycloakError(w, http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' supports access tokens only")
		return
	case f.Has("requested_subject") || f.Has("subject_issuer"):
		keycloakError(w, http.StatusBadRequest, "invalid_request", "Parameter 'requested_subject' and 'subject_issuer' are not supported for standard token exchange")
		return
	}
	switch rt := f.Get("requested_token_type"); rt {
	case "", tokenTypeAccess:
	default: // Keycloak also issues refresh tokens; the gateway never asks for one
		keycloakError(w, http.StatusBadRequest, "invalid_request", "requested_token_type unsupported")
		return
	}
	claims, ok := i.verifyOwn(subject)
	if !ok {
		keycloakError(w, http.StatusBadRequest, "invalid_token", "Invalid token")
		return
	}
	if !audienceHas(claims["aud"], id) {
		keycloakError(w, http.StatusForbidden, "access_denied", "Client is not within the token audience")
		return
	}
	audiences := f["audience"]
	x.mu.Lock()
	for _, a := range audiences {
		if !x.audiences[a] {
			x.mu.Unlock()
			keycloakError(w, http.StatusBadRequest, "invalid_client", "Audience not found")
			return
		}
	}
	user, _ := claims["preferred_username"].(string)
	refused := x.refused[user]
	x.mu.Unlock()
	if refused != "" {
		status := http.StatusBadRequest
		if refused == "access_denied" {
			status = http.StatusForbidden
		}
		keycloakError(w, status, refused, "Client not allowed to exchange")
		return
	}
	now := i.Now()
	out := map[string]any{
		"iss": i.URL, "sub": claims["sub"], "preferred_username": user,
		"azp": id, "typ": "Bearer", "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": randomID(),
		"scope": f.Get("scope"),
	}
	if len(audiences) == 1 {
		out["aud"] = audiences[0]
	} else if len(audiences) > 1 {
		out["aud"] = audiences
	}
	if padding > 0 {
		out["pad"] = strings.Repeat("x", padding)
	}
	tok, err := i.Sign(out, SignOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	x.mu.Lock()
	if x.issued == nil {
		x.issued = map[string][]string{}
	}
	x.issued[user] = append(x.issued[user], tok)
	x.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "expires_in": int(ttl / time.Second), "refresh_expires_in": 0,
		"token_type": "Bearer", "issued_token_type": tokenTypeAccess, "not-before-policy": 0,
		"scope": f.Get("scope"),
	})
}

// verifyOwn verifies a token this issuer signed (RS256 or ES256) and
// unexpired, returning its claims.
func (i *Issuer) verifyOwn(tok string) (map[string]any, bool) {
	i.mu.Lock()
	rsaPub, ecPub := &i.rsaKey.PublicKey, &i.ecKey.PublicKey
	i.mu.Unlock()
	payload, err := jws.Verify([]byte(tok), jws.WithKey(jwa.RS256(), rsaPub))
	if err != nil {
		if payload, err = jws.Verify([]byte(tok), jws.WithKey(jwa.ES256(), ecPub)); err != nil {
			return nil, false
		}
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil || claims["iss"] != i.URL {
		return nil, false
	}
	exp, ok := claims["exp"].(float64)
	if !ok || float64(i.Now().Unix()) >= exp {
		return nil, false
	}
	return claims, true
}

// audienceHas reports whether an aud claim (a string or an array) names
// client.
func audienceHas(aud any, client string) bool {
	switch a := aud.(type) {
	case string:
		return a == client
	case []any:
		for _, x := range a {
			if x == client {
				return true
			}
		}
	}
	return false
}
