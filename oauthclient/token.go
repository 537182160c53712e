package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ErrRefresh means the cached tokens can no longer be refreshed (the
// refresh token expired or was revoked): the user must log in again.
var ErrRefresh = errors.New("oauthclient: the cached login has expired; run mcpgate login --url URL again")

// TokenSource is an oauth2.TokenSource over a cached login: it returns the
// cached access token while it is valid, refreshes it when it is not, and
// writes the refreshed tokens back to the cache.
type TokenSource struct {
	cache Cache
	hc    *http.Client

	mu    sync.Mutex
	entry *Entry
	dpop  *http.Client // s.hc sending DPoP proofs to the token endpoint
}

// NewTokenSource serves the tokens of the newest cached login for resource.
func NewTokenSource(cache Cache, hc *http.Client, resource string) (*TokenSource, error) {
	e, err := cache.Lookup(resource)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &TokenSource{cache: cache, hc: hc, entry: e}, nil
}

// Entry is a copy of the current cache entry.
func (s *TokenSource) Entry() Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.entry
}

// Set replaces the login the source serves (after a new Login), and
// caches it.
func (s *TokenSource) Set(e *Entry) error {
	if err := s.cache.Put(e); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry = e
	return nil
}

// Token returns a valid access token, refreshing it when it has expired
// (golang.org/x/oauth2 treats a token as expired a little early).
func (s *TokenSource) Token() (*oauth2.Token, error) {
	return s.token(context.Background(), false)
}

// Refresh refreshes the token even though it has not expired yet (after
// the server answered 401 to it).
func (s *TokenSource) Refresh(ctx context.Context) (*oauth2.Token, error) {
	return s.token(ctx, true)
}

func (s *TokenSource) token(ctx context.Context, force bool) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refused := s.entry.AccessToken
	// fresh is a token we may hand out: valid, and not the one the server
	// just refused.
	fresh := func() (*oauth2.Token, bool) {
		cur := s.entry.Token()
		return cur, cur.Valid() && (!force || cur.AccessToken != refused)
	}
	// Another process (a second bridge, mcpgate token) may have refreshed
	// since: with rotating refresh tokens, ours is then spent, and the
	// cache holds the live one.
	s.reload()
	if cur, ok := fresh(); ok {
		return cur, nil
	}
	// Refresh under the cache's lock, and look at the cache once more
	// after taking it: a process that held the lock may have refreshed
	// just now. So one refresh token is spent once, however many
	// processes found the token expired at the same moment.
	l, err := s.cache.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	// This read must succeed: the rotated refresh token is stored by
	// reading, changing and replacing this file, and a refresh whose
	// result cannot be stored spends the cached token for nothing (its
	// next use is a reuse, and the issuer may revoke the whole login).
	e, err := s.cache.Get(s.entry.Issuer, s.entry.Resource)
	if err != nil {
		return nil, err
	}
	if e != nil {
		s.entry = e
	}
	if cur, ok := fresh(); ok {
		return cur, nil
	}
	if s.entry.RefreshToken == "" {
		return nil, ErrRefresh
	}
	if err := s.cache.writable(); err != nil {
		return nil, err
	}
	return s.refresh(ctx)
}

// reload replaces the entry with the cache's when that is another one;
// it reports whether it did.
func (s *TokenSource) reload() bool {
	e, err := s.cache.Get(s.entry.Issuer, s.entry.Resource)
	if err != nil || e == nil || (e.AccessToken == s.entry.AccessToken && e.RefreshToken == s.entry.RefreshToken) {
		return false
	}
	s.entry = e
	return true
}

// refreshTimeout bounds one refresh request: the caller holds the cache's
// lock meanwhile, and the bridge's HTTP client has no overall timeout.
var refreshTimeout = 30 * time.Second

// refresh uses the refresh token and caches the result. The caller holds
// mu and the cache's lock.
func (s *TokenSource) refresh(ctx context.Context) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	cur := s.entry.Token()
	cur.Expiry = time.Unix(1, 0) // makes oauth2 refresh
	hc := s.hc
	if s.entry.DPoP {
		// RFC 9449 §5: the refresh carries a proof of the key the
		// tokens are bound to.
		if s.dpop == nil {
			key, err := s.cache.DPoPKey()
			if err != nil {
				return nil, err
			}
			s.dpop = DPoPClient(s.hc, key, s.entry.TokenURL, nil)
		}
		hc = s.dpop
	}
	tok, err := s.entry.Config().TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), cur).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return nil, ErrRefresh
		}
		return nil, fmt.Errorf("oauthclient: refreshing the token at %s: %w", s.entry.TokenURL, err)
	}
	e := *s.entry
	e.AccessToken, e.TokenType, e.Expiry = tok.AccessToken, tok.Type(), tok.Expiry
	if tok.RefreshToken != "" {
		e.RefreshToken = tok.RefreshToken // rotated
	}
	// Keep the rotated tokens even when storing them fails: the old
	// refresh token is spent either way.
	s.entry = &e
	if err := s.cache.put(&e); err != nil {
		return nil, err
	}
	return e.Token(), nil
}

// ClientCredentials gets a token for resource with a client id and secret
// (RFC 6749 §4.4), sending the RFC 8707 resource; the token endpoint comes
// from discovery.
func ClientCredentials(ctx context.Context, hc *http.Client, resource, clientID, secret string, scopes []string) (*oauth2.Token, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	d, err := Discover(ctx, hc, resource)
	if err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = d.Resource.ScopesSupported
	}
	cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: d.Server.TokenEndpoint,
		Scopes: scopes, EndpointParams: map[string][]string{"resource": {resource}}}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		return nil, fmt.Errorf("%w: client credentials at %s: %v", ErrAuthorization, d.Server.TokenEndpoint, err)
	}
	return tok, nil
}
