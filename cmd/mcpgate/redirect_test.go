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
