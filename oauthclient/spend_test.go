package oauthclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A refresh token is spent only when the rotated one can be stored: a
// cache that cannot be read or written (its mode changed under a running
// bridge, its folder replaced by a file) makes the refresh fail before it
// reaches the issuer. Otherwise the new refresh token would live only in
// memory, and the next use of the cached one would be a reuse that makes
// the issuer revoke the whole login.
func TestRefreshSpendsNothingItCannotStore(t *testing.T) {
	breakages := map[string]func(t *testing.T, path string) (undo func()){
		"cache file readable by others": func(t *testing.T, path string) func() {
			require.NoError(t, os.Chmod(path, 0o644))
			return func() { require.NoError(t, os.Chmod(path, 0o600)) }
		},
		"cache file damaged": func(t *testing.T, path string) func() {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, []byte("{"), 0o600))
			return func() { require.NoError(t, os.WriteFile(path, b, 0o600)) }
		},
	}
	for name, breakIt := range breakages {
		t.Run(name, func(t *testing.T) {
			ri := &rotatingIssuer{}
			srv := httptest.NewServer(ri)
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
			c := Cache{Path: path}
			require.NoError(t, c.Put(expiredEntry(srv.URL)))
			ts, err := NewTokenSource(c, srv.Client(), "https://mcp.example/mcp")
			require.NoError(t, err)

			undo := breakIt(t, path)
			_, err = ts.Token()
			require.Error(t, err, "the cache cannot take the rotated token")
			assert.Equal(t, 0, ri.refreshes, "the refresh token was not spent")

			undo()
			tok, err := ts.Token()
			require.NoError(t, err)
			assert.True(t, ri.live(tok.AccessToken))
			assert.False(t, ri.revoked, "no refresh token was spent twice")
			other, err := NewTokenSource(c, srv.Client(), "https://mcp.example/mcp")
			require.NoError(t, err)
			tok2, err := other.Token()
			require.NoError(t, err)
			assert.Equal(t, tok.AccessToken, tok2.AccessToken, "the cache holds the rotated tokens")
		})
	}
}

// A lock file the user cannot open is reported as such, not as a busy
// cache: the error names the file and says what to do.
func TestCacheLockFileUnusable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
	require.NoError(t, os.MkdirAll(path+".lock", 0o700))
	err := Cache{Path: path}.Put(expiredEntry("https://issuer.example/token"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "another mcpgate process")
	assert.Contains(t, err.Error(), path+".lock")
}

// A token endpoint that takes the request and never answers must not hold
// the refresh (and the cache's lock, which every mcpgate process of the
// user waits for) for ever: the bridge's HTTP client has no overall
// timeout (its SSE answers last as long as a tool runs), so the refresh
// bounds itself.
func TestRefreshGivesUpOnAHungTokenEndpoint(t *testing.T) {
	defer func(d time.Duration) { refreshTimeout = d }(refreshTimeout)
	refreshTimeout = 50 * time.Millisecond
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // answers nothing while the test runs
	}))
	defer hung.Close()
	defer close(release)
	path := filepath.Join(t.TempDir(), "mcpgate", "tokens.json")
	c := Cache{Path: path}
	require.NoError(t, c.Put(expiredEntry(hung.URL)))
	ts, err := NewTokenSource(c, &http.Client{}, "https://mcp.example/mcp")
	require.NoError(t, err)
	_, err = ts.Token()
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Put(expiredEntry(hung.URL)), "the cache's lock is free again")
}
