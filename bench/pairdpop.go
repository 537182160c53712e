package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/oauthclient"
)

// dpop compares a call with a DPoP-bound token (RFC 9449: a proof signed
// by the client's key on every request, checked by the gateway) against
// the same call with the Bearer token of the same user, on the TLS system.
// The bound token comes from the test issuer's token endpoint, which binds
// a token to the key of the proof sent with the request.
func (pe pairEnv) dpop(ctx context.Context) PairResult {
	res := PairResult{A: "Bearer", B: "DPoP"}
	t, ok := pe.running[sysMCPGateTLS].(*httpTarget)
	if !ok || t.issuer == "" || t.token == "" {
		res.Skipped = "needs the mcpgate-tls system, its test issuer and its token running in the same run"
		return res
	}
	key, err := oauthclient.NewDPoPKey()
	var tok string
	if err == nil {
		tok, err = t.dpopToken(ctx, key)
	}
	if err != nil {
		res.fail(err)
		return res
	}
	a, b, ok := pe.openBoth(ctx, &res, t.open, func(ctx context.Context) (*session, error) { return t.openDPoP(ctx, tok, key) })
	if !ok {
		return res
	}
	res.ClientWork = proofTime(key, t.endpoint, tok)
	pe.measure(ctx, &res, a, b, pe.cfg.Trivial.Name)
	return res
}

// openDPoP starts a session whose every request carries tok as a DPoP
// token with a fresh proof of key, as oauthclient's transport sends them.
func (t *httpTarget) openDPoP(ctx context.Context, tok string, key *oauthclient.DPoPKey) (*session, error) {
	return t.connectVia(ctx, func(tr *http.Transport) http.RoundTripper {
		d := &oauthclient.DPoPTransport{Base: tr, Key: key, Bound: func(s string) bool { return s == tok }}
		return bearer{next: d, value: "Bearer " + tok}
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// dpopToken asks the test issuer's token endpoint for a token of the
// Bearer token's user, audience and scopes, bound to key.
func (t *httpTarget) dpopToken(ctx context.Context, key *oauthclient.DPoPKey) (string, error) {
	claims, err := jwtClaims(t.token)
	if err != nil {
		return "", err
	}
	user, _ := claims["preferred_username"].(string)
	if user == "" {
		user, _ = claims["sub"].(string)
	}
	aud, _ := claims["aud"].(string)
	if l, ok := claims["aud"].([]any); ok && len(l) > 0 {
		aud, _ = l[0].(string)
	}
	scope, _ := claims["scope"].(string)
	tokenURL := t.issuer + "/token"
	hc := oauthclient.DPoPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: t.tls}}, key, tokenURL, nil)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"mcpbench"},
		"username": {user}, "resource": {aud}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("mcpbench: DPoP token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("mcpbench: DPoP token: the issuer answered %s: %.200s", resp.Status, body)
	}
	if !strings.EqualFold(tr.TokenType, "DPoP") {
		return "", fmt.Errorf("mcpbench: DPoP token: the issuer did not bind it (token_type %q)", tr.TokenType)
	}
	return tr.AccessToken, nil
}

// proofTime is the p50 of making 200 proofs for a request to endpoint:
// the client's share of a DPoP call's cost, which its latency includes.
func proofTime(key *oauthclient.DPoPKey, endpoint, tok string) time.Duration {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0
	}
	lat := make(Latencies, 0, 200)
	for range 200 {
		t0 := time.Now()
		if _, err := key.Proof(http.MethodPost, u, tok, ""); err != nil {
			return 0
		}
		lat = append(lat, time.Since(t0))
	}
	return Summarize(lat).P50
}

// jwtClaims reads a JWT's claims without checking it: the harness only
// copies the user, audience and scopes of a token it was given.
func jwtClaims(tok string) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("mcpbench: the bearer token is not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("mcpbench: the bearer token's claims: %w", err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("mcpbench: the bearer token's claims: %w", err)
	}
	return c, nil
}
