package authtest_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
)

// TestTokenEndpoint gets a token with the x/oauth2 client-credentials flow
// and verifies it with a real Authenticator.
func TestTokenEndpoint(t *testing.T) {
	iss := authtest.New(t)
	const aud = "https://127.0.0.1:8443/mcp"
	a, err := auth.New(context.Background(), auth.Options{
		Issuer: iss.URL, Resource: aud, RequiredScopes: []string{"mcp:use"}, WriteScope: "mcp:write",
		HTTPClient: iss.Client(), UserClaim: "preferred_username", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	defer a.Close()
	<-a.Ready()

	cfg := clientcredentials.Config{
		ClientID: "bench", ClientSecret: "any", TokenURL: iss.URL + "/token",
		Scopes:         []string{"mcp:use"},
		EndpointParams: url.Values{"resource": {aud}, "username": {"carol"}},
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, iss.Client())
	tok, err := cfg.Token(ctx)
	require.NoError(t, err)
	r := httptest.NewRequest("GET", aud, nil)
	tok.SetAuthHeader(r)
	p, err := a.Authenticate(r)
	require.NoError(t, err)
	assert.Equal(t, "carol", p.UserID)
	assert.Equal(t, "bench", p.ClientID)
	assert.True(t, p.ReadOnly)

	cfg.EndpointParams = url.Values{"resource": {"https://elsewhere.example/mcp"}}
	tok, err = cfg.Token(ctx)
	require.NoError(t, err)
	r = httptest.NewRequest("GET", aud, nil)
	tok.SetAuthHeader(r)
	_, err = a.Authenticate(r)
	require.ErrorIs(t, err, auth.ErrAudience)
}
