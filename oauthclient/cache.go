package oauthclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/filelock"
)

// Entry is one cached login: who the client is at which authorization
// server, for which resource, and its current tokens.
type Entry struct {
	Issuer        string    `json:"issuer"`
	Resource      string    `json:"resource"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthURL       string    `json:"authorization_endpoint"`
	TokenURL      string    `json:"token_endpoint"`
	RedirectURI   string    `json:"redirect_uri,omitempty"`
	Scopes        []string  `json:"scopes,omitempty"`
	AccessToken   string    `json:"access_token"`
	TokenType     string    `json:"token_type,omitempty"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expiry        time.Time `json:"expiry,omitempty"`
	Saved         time.Time `json:"saved"`
	Registered    bool      `json:"registered,omitempty"` // the client id came from dynamic registration
	ResourceParam bool      `json:"resource_param"`       // RFC 8707 resource was sent
	DPoP          bool      `json:"dpop,omitempty"`       // token requests carry proofs of the cache's DPoP key
}

// Token is the entry's tokens in golang.org/x/oauth2's form.
func (e *Entry) Token() *oauth2.Token {
	return &oauth2.Token{AccessToken: e.AccessToken, TokenType: e.TokenType, RefreshToken: e.RefreshToken, Expiry: e.Expiry}
}

// Bound says whether the access token is DPoP-bound (RFC 9449 §5: the
// token endpoint answered token_type DPoP).
func (e *Entry) Bound() bool { return strings.EqualFold(e.TokenType, "DPoP") }

// Config is the oauth2 configuration the entry's tokens refresh with.
func (e *Entry) Config() *oauth2.Config {
	style := oauth2.AuthStyleInParams // public client: client_id in the form
	if e.ClientSecret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID: e.ClientID, ClientSecret: e.ClientSecret, RedirectURL: e.RedirectURI, Scopes: e.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.AuthURL, TokenURL: e.TokenURL, AuthStyle: style},
	}
}

// Cache is the per-user token cache: one JSON file, readable by its owner
// only (0600, in a 0700 directory, both the user's own), keyed by issuer
// and resource. Several processes may use one cache: changes are made
// under a lock on PATH.lock.
type Cache struct {
	// Path is the file; DefaultCachePath unless set.
	Path string
}

// DefaultCachePath is mcpgate/tokens.json in the user's configuration
// directory (~/.config on Linux, ~/Library/Application Support on macOS,
// %AppData% on Windows).
func DefaultCachePath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("oauthclient: no configuration directory for the token cache: %w", err)
	}
	return filepath.Join(d, "mcpgate", "tokens.json"), nil
}

// ErrNotLoggedIn is returned when the cache has no tokens for a resource.
var ErrNotLoggedIn = errors.New("oauthclient: no cached login for this URL; run mcpgate login --url URL")

type cacheFile struct {
	Entries map[string]*Entry `json:"entries"`
}

func key(issuer, resource string) string { return issuer + " " + resource }

func (c Cache) path() (string, error) {
	if c.Path != "" {
		return c.Path, nil
	}
	return DefaultCachePath()
}

func (c Cache) load() (*cacheFile, string, error) {
	p, err := c.path()
	if err != nil {
		return nil, "", err
	}
	f := &cacheFile{Entries: map[string]*Entry{}}
	if err := checkPrivateDir(filepath.Dir(p)); err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return f, p, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("oauthclient: %w", err)
	}
	if err := checkPrivateFile(p); err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, "", fmt.Errorf("oauthclient: %s is damaged (%v); delete it and log in again", p, err)
	}
	if f.Entries == nil {
		f.Entries = map[string]*Entry{}
	}
	return f, p, nil
}

// lockWait bounds the wait for another process's use of the cache: a
// holder makes at most one refresh request.
const lockWait = 2 * time.Minute

// lock takes the cache's inter-process lock (a lock file beside it), so
// that a read, a refresh and the write that follows are one step for
// every mcpgate process of this user.
func (c Cache) lock(ctx context.Context) (*filelock.Lock, error) {
	p, err := c.path()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("oauthclient: %w", err)
	}
	if err := checkPrivateDir(filepath.Dir(p)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	l, err := filelock.Acquire(ctx, p+".lock")
	switch {
	case filelock.IsBusy(err):
		return nil, fmt.Errorf("oauthclient: the token cache is busy (another mcpgate process): %w", err)
	case err != nil:
		return nil, fmt.Errorf("oauthclient: the token cache's lock file cannot be used (remove it if another user, e.g. root, owns it): %w", err)
	}
	return l, nil
}

// writable checks that the cache's folder takes a new file (put's
// temporary one), before a refresh token is spent.
func (c Cache) writable() error {
	p, err := c.path()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tokens.*.tmp")
	if err != nil {
		return fmt.Errorf("oauthclient: the token cache's folder cannot be written, so a refreshed token could not be kept: %w", err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// Lookup finds the newest entry for resource.
func (c Cache) Lookup(resource string) (*Entry, error) {
	f, _, err := c.load()
	if err != nil {
		return nil, err
	}
	var found []*Entry
	for _, e := range f.Entries {
		if e.Resource == resource {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return nil, ErrNotLoggedIn
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Saved.After(found[j].Saved) })
	return found[0], nil
}

// Get finds the entry of issuer and resource; nil when there is none.
func (c Cache) Get(issuer, resource string) (*Entry, error) {
	f, _, err := c.load()
	if err != nil {
		return nil, err
	}
	return f.Entries[key(issuer, resource)], nil
}

// Put stores e (replacing the entry of the same issuer and resource),
// under the cache's lock: the file is read again, changed and replaced,
// so that entries other processes stored meanwhile are kept.
func (c Cache) Put(e *Entry) error {
	l, err := c.lock(context.Background())
	if err != nil {
		return err
	}
	defer l.Unlock()
	return c.put(e)
}

// put is Put for a caller that holds the lock.
func (c Cache) put(e *Entry) error {
	f, p, err := c.load()
	if err != nil {
		return err
	}
	e.Saved = time.Now()
	f.Entries[key(e.Issuer, e.Resource)] = e
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("oauthclient: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tokens.*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("oauthclient: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("oauthclient: writing %s: %w", p, werr)
	}
	return nil
}
