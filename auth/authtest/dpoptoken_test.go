package authtest_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/oauthclient"
)

// TestTokenEndpointDPoP: a token request with a valid proof gets a token
// bound to the proof's key, after the nonce the issuer asks for; one
// without a proof gets a bearer token; a bad proof is refused.
func TestTokenEndpointDPoP(t *testing.T) {
	iss := authtest.New(t)
	iss.DPoPNonce = "n-1"
	key, err := oauthclient.NewDPoPKey()
	require.NoError(t, err)
	cfg := clientcredentials.Config{ClientID: "bench", ClientSecret: "any", TokenURL: iss.URL + "/token",
		EndpointParams: url.Values{"resource": {"https://127.0.0.1:8443/mcp"}}}

	hc := oauthclient.DPoPClient(iss.Client(), key, iss.URL+"/token", nil)
	tok, err := cfg.Token(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	require.NoError(t, err)
	assert.Equal(t, "DPoP", tok.Type())
	claims, err := jwt.ParseInsecure([]byte(tok.AccessToken))
	require.NoError(t, err)
	var cnf map[string]any
	require.NoError(t, claims.Get("cnf", &cnf))
	assert.Equal(t, key.Thumbprint(), cnf["jkt"])
	assert.Equal(t, 1, iss.TokenProofs(), "the proof without the nonce was refused, the retry counted")

	tok, err = cfg.Token(context.WithValue(context.Background(), oauth2.HTTPClient, iss.Client()))
	require.NoError(t, err)
	assert.Equal(t, "Bearer", tok.Type(), "no proof, no binding")

	// A proof for another endpoint is no proof for this one.
	u, _ := url.Parse(iss.URL + "/elsewhere")
	proof, err := key.Proof("POST", u, "", "n-1")
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", iss.URL+"/token", strings.NewReader("grant_type=client_credentials&client_id=bench&resource=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", proof)
	resp, err := iss.Client().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "invalid_dpop_proof")
}
