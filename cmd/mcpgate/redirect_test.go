package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A gateway (or a proxy in front of it, or its token endpoint) that
// redirects to plain http must not get the bearer token sent there in the
// clear: Go's client keeps Authorization on a redirect to the same host
// whatever the scheme. The client commands' HTTP client refuses the
// redirect instead.
func TestClientRefusesRedirectToPlainHTTP(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization") + r.Header.Get("Cookie"))
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer tlsSrv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600))

	cf := clientFlags{caFile: ca}
	hc, err := cf.httpClient()
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, tlsSrv.URL+"/mcp", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer secret-token")
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	assert.Empty(t, leaked.Load(), "the token went out over plain http")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "http://")
	assert.NotContains(t, err.Error(), "secret-token")
}

// login, token and bridge send a bearer token to --url (or, for login,
// trust metadata fetched from it): a plain-http URL on a host that is not
// loopback is refused before anything is sent, as install refuses it.
func TestClientCommandsRefusePlainHTTPURL(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "tokens.json")
	for _, cmd := range []string{"login", "token", "bridge"} {
		t.Run(cmd, func(t *testing.T) {
			_, stderr, err := runWithEnv(t, map[string]string{"HOME": t.TempDir()}, cmd, "--url", "http://mcp.example.com/mcp", "--cache", cache)
			require.Error(t, err)
			assert.Contains(t, stderr+err.Error(), "https")
			assert.NotContains(t, stderr+err.Error(), "run mcpgate login", "refused for its URL, not for a missing login")
		})
	}
	// Loopback stays allowed for local tests: the error is then about the login.
	_, stderr, err := runWithEnv(t, map[string]string{"HOME": t.TempDir()}, "token", "--url", "http://127.0.0.1:1/mcp", "--cache", cache)
	require.Error(t, err)
	assert.NotContains(t, stderr+err.Error(), "must use https")
}
