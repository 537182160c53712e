package oauthclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// An authorization server whose endpoints are plain http on a host that
// is not loopback is refused: the code, the client secret and the tokens
// would cross the network in the clear. Loopback http is for local tests.
func TestDiscoverServerRequiresHTTPS(t *testing.T) {
	for name, tc := range map[string]struct {
		endpoint string
		ok       bool
	}{
		"token endpoint on http":  {"http://as.example.com/token", false},
		"token endpoint on https": {"https://as.example.com/token", true},
		"loopback http":           {"http://127.0.0.1:9/token", true},
	} {
		t.Run(name, func(t *testing.T) {
			var ts *httptest.Server
			ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(ServerMetadata{Issuer: ts.URL, AuthorizationEndpoint: ts.URL + "/auth",
					TokenEndpoint: tc.endpoint, CodeChallengeMethodsSupported: []string{"S256"}})
			}))
			defer ts.Close()
			_, err := DiscoverServer(context.Background(), ts.Client(), ts.URL)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrNotHTTPS)
				require.ErrorContains(t, err, "token_endpoint")
			}
		})
	}
}
