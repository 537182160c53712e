package authtest

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
)

// introspection is the issuer's RFC 7662 endpoint: the tokens it knows,
// the one client allowed to ask, and a switch that makes it fail.
type introspection struct {
	mu             sync.Mutex
	tokens         map[string]map[string]any
	clientID       string
	clientSecret   string
	failStatus     int
	hold           chan struct{} // when set, each request waits for it to close
	entered        chan struct{} // a held request sends here on entering
	introspections atomic.Int64
}

// IntrospectionURL is the RFC 7662 endpoint, as discovery names it.
func (i *Issuer) IntrospectionURL() string { return i.URL + "/introspect" }

// SetIntrospectionClient sets the only client credentials the
// introspection endpoint accepts (HTTP Basic, RFC 7662 §2.1); until it is
// called, every request is refused 401.
func (i *Issuer) SetIntrospectionClient(id, secret string) {
	i.intro.mu.Lock()
	defer i.intro.mu.Unlock()
	i.intro.clientID, i.intro.clientSecret = id, secret
}

// FailIntrospection makes the endpoint answer every request with status
// (e.g. 500), or normally again with 0.
func (i *Issuer) FailIntrospection(status int) {
	i.intro.mu.Lock()
	defer i.intro.mu.Unlock()
	i.intro.failStatus = status
}

// HoldIntrospection makes every introspection request wait, from now on,
// until release is called; entered receives once per request that waits,
// so a test can know a request is in the endpoint.
func (i *Issuer) HoldIntrospection() (entered <-chan struct{}, release func()) {
	i.intro.mu.Lock()
	defer i.intro.mu.Unlock()
	hold, in := make(chan struct{}), make(chan struct{}, 64)
	i.intro.hold, i.intro.entered = hold, in
	var once sync.Once
	return in, func() {
		once.Do(func() {
			i.intro.mu.Lock()
			i.intro.hold, i.intro.entered = nil, nil
			i.intro.mu.Unlock()
			close(hold)
		})
	}
}

// Introspections counts the introspection requests served.
func (i *Issuer) Introspections() int { return int(i.intro.introspections.Load()) }

// Opaque mints an opaque access token (random, no dots, as Ory's and many
// others' are) whose introspection answers active with claims.
func (i *Issuer) Opaque(claims map[string]any) string {
	tok := "ot_" + randomID() + randomID()
	i.Register(tok, claims)
	return tok
}

// Lightweight mints a Keycloak "lightweight" access token: a signed JWT
// that carries only iss, sub, exp, iat, jti, typ and azp, while its
// introspection answers with all of claims.
func (i *Issuer) Lightweight(claims map[string]any) (string, error) {
	light := map[string]any{}
	for _, k := range []string{"iss", "sub", "exp", "iat", "jti", "typ", "azp"} {
		if v, ok := claims[k]; ok {
			light[k] = v
		}
	}
	tok, err := i.Sign(light, SignOptions{})
	if err == nil {
		i.Register(tok, claims)
	}
	return tok, err
}

// Register makes introspection of tok answer active with claims.
func (i *Issuer) Register(tok string, claims map[string]any) {
	i.intro.mu.Lock()
	defer i.intro.mu.Unlock()
	if i.intro.tokens == nil {
		i.intro.tokens = map[string]map[string]any{}
	}
	i.intro.tokens[tok] = claims
}

// Revoke makes introspection of tok answer inactive from now on.
func (i *Issuer) Revoke(tok string) {
	i.intro.mu.Lock()
	defer i.intro.mu.Unlock()
	delete(i.intro.tokens, tok)
}

// introspect answers RFC 7662 §2.2: active with the token's claims, or
// only active false for a token it does not know or that was revoked.
// Unlike a real issuer it answers active past exp, so that tests reach the
// resource server's own exp check.
func (i *Issuer) introspect(w http.ResponseWriter, r *http.Request) {
	i.intro.introspections.Add(1)
	i.intro.mu.Lock()
	fail, wantID, wantSecret := i.intro.failStatus, i.intro.clientID, i.intro.clientSecret
	hold, entered := i.intro.hold, i.intro.entered
	i.intro.mu.Unlock()
	if hold != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if fail != 0 {
		http.Error(w, "introspection failing", fail)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok || wantID == "" || id != wantID || subtle.ConstantTimeCompare([]byte(secret), []byte(wantSecret)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	i.intro.mu.Lock()
	claims, known := i.intro.tokens[r.PostForm.Get("token")]
	i.intro.mu.Unlock()
	out := map[string]any{"active": false}
	if known {
		out = map[string]any{"active": true}
		for k, v := range claims {
			out[k] = v
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
