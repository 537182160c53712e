package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

// The gateway's confidential client at the test issuer, and the client
// (audience) of the downstream service users' tokens are exchanged for.
const (
	gwClient   = "mcpgate-gateway"
	gwSecret   = "gateway-secret"
	ghAudience = "github-mcp"
)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// audienceServer is a remote MCP server (the go-sdk's Streamable HTTP
// handler) that, as a GitHub-like service would, accepts only bearer
// tokens of its own audience that the issuer exchanged, and records the
// Authorization of every request that reached it.
type audienceServer struct {
	url  string
	port string

	mu      sync.Mutex
	seen    []string // Authorization of every request
	refused int
}

func startAudienceServer(t *testing.T, iss *authtest.Issuer) *audienceServer {
	t.Helper()
	as := &audienceServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "github-like", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tok, _ := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: req.Extra.TokenInfo.UserID + " " + hashOf(tok)}}}, nil, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			return nil, sdkauth.ErrInvalidToken
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			return nil, sdkauth.ErrInvalidToken
		}
		var c struct {
			Aud  any     `json:"aud"`
			Exp  float64 `json:"exp"`
			User string  `json:"preferred_username"`
		}
		if json.Unmarshal(payload, &c) != nil {
			return nil, sdkauth.ErrInvalidToken
		}
		auds, _ := c.Aud.([]any)
		if s, ok := c.Aud.(string); ok {
			auds = []any{s}
		}
		// Its own audience, and a token the issuer exchanged (and so signed).
		if !slices.Contains(auds, any(ghAudience)) || !slices.Contains(iss.ExchangedFor(c.User), tok) {
			return nil, fmt.Errorf("%w: not a token for %s", sdkauth.ErrInvalidToken, ghAudience)
		}
		return &sdkauth.TokenInfo{UserID: c.User, Expiration: time.Unix(int64(c.Exp), 0)}, nil
	}
	h := sdkauth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.seen = append(as.seen, r.Header.Get("Authorization"))
		as.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized {
			as.mu.Lock()
			as.refused++
			as.mu.Unlock()
		}
	}))
	t.Cleanup(ts.Close)
	as.url = ts.URL + "/mcp"
	as.port = ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	return as
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestServersCredentials: per-server credentials through the real
// program. Two users reach gh, a remote server that accepts only tokens
// of its own audience: each user's upstream worker sends that user's
// exchanged token, and the client's own token never arrives (the server
// would refuse it). ev, a stdio server with an env credential, hands each
// user's worker its own exchanged token; plain, a server of the same list
// without credentials, gets none.
func TestServersCredentials(t *testing.T) {
	needSandboxHost(t) // credentials need the required sandbox (or accounts)
	stub, err := stubWorker()
	require.NoError(t, err)
	dir := t.TempDir()
	secret := filepath.Join(dir, "gateway-secret")
	require.NoError(t, os.WriteFile(secret, []byte(gwSecret), 0o600))

	iss := authtest.New(t)
	iss.SetExchangeClient(gwClient, gwSecret)
	iss.AddClient(ghAudience)
	as := startAudienceServer(t, iss)
	file := filepath.Join(dir, "servers.yaml")
	yaml := `
auth:
  introspection_client_id: ` + gwClient + `
  introspection_client_secret_file: ` + secret + `
worker:
  sandbox: {enabled: true, require: true}
servers:
  - name: gh
    url: ` + as.url + `
    credentials:
      - {header: Authorization, prefix: "Bearer ", from: token_exchange, audience: ` + ghAudience + `}
  - name: ev
    command: [` + stub + `]
    credentials:
      - {env: GITHUB_TOKEN, from: token_exchange, audience: ` + ghAudience + `}
  - name: plain
    command: [` + stub + `]
`
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	g := launchTLSGateway(t, map[string]string{"MCPGATE_CONFIG": file}, tlsLaunch{issuer: iss})
	base := g.resource
	at := func(name string) *tlsGateway {
		s := *g
		s.resource = base + "/" + name
		return &s
	}
	gh, ev, plain := at("gh"), at("ev"), at("plain")
	gh.awaitServing(t)

	// A user's token for a server, naming the gateway's client among its
	// audiences as Keycloak's standard exchange requires.
	tokenFor := func(s *tlsGateway, user string) string {
		c := iss.KeycloakClaims(user, s.resource, "mcp:use", "mcp:write")
		c["aud"] = []string{s.resource, gwClient}
		tok, err := iss.Sign(c, authtest.SignOptions{})
		require.NoError(t, err)
		return tok
	}

	t.Run("remote: each user's own exchanged token, never the client's", func(t *testing.T) {
		got := map[string]string{}
		var originals []string
		for _, user := range []string{"alice", "bob"} {
			tok := tokenFor(gh, user)
			originals = append(originals, tok)
			for _, version := range []string{"", "2025-11-25"} {
				cs := gh.connectVersion(t, &tok, version)
				who := callText(t, cs, "whoami", nil)
				name, sum, _ := strings.Cut(who, " ")
				assert.Equal(t, user, name, "the remote server saw %s's token", user)
				assert.NotEqual(t, hashOf(tok), sum, "the client's own token went upstream")
				exchanged := iss.ExchangedFor(user)
				require.NotEmpty(t, exchanged)
				assert.Contains(t, hashesOf(exchanged), sum, "a token the issuer exchanged for %s", user)
				if version == "" {
					got[user] = sum
				} else {
					assert.Equal(t, got[user], sum, "the 2025 session's worker sends the same cached token")
				}
			}
		}
		assert.NotEqual(t, got["alice"], got["bob"])

		// The server would refuse a client's own token.
		req, err := http.NewRequest(http.MethodPost, as.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+originals[0])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

		as.mu.Lock()
		defer as.mu.Unlock()
		assert.Equal(t, 1, as.refused, "only the request above was refused")
		for i, a := range as.seen[:len(as.seen)-1] {
			tok, ok := strings.CutPrefix(a, "Bearer ")
			assert.True(t, ok, "request %d carried a bearer token", i)
			assert.NotContains(t, originals, tok, "request %d carried a client's own token", i)
		}
	})

	t.Run("stdio: each user's worker sees its own; a server without credentials none", func(t *testing.T) {
		sums := map[string]string{}
		for _, user := range []string{"alice", "bob"} {
			tok := tokenFor(ev, user)
			cs := ev.connect(t, &tok)
			sum := callText(t, cs, "credhash", map[string]any{"text": "GITHUB_TOKEN"})
			assert.Contains(t, hashesOf(iss.ExchangedFor(user)), sum, "%s's worker holds a token exchanged for %s", user, user)
			assert.NotEqual(t, hashOf(tok), sum)
			sums[user] = sum

			ptok := tokenFor(plain, user)
			pcs := plain.connect(t, &ptok)
			assert.Equal(t, "none", callText(t, pcs, "credhash", map[string]any{"text": "GITHUB_TOKEN"}), "plain has no credentials")
		}
		assert.NotEqual(t, sums["alice"], sums["bob"])
		assert.NotContains(t, hashesOf(iss.ExchangedFor("bob")), sums["alice"])
	})

	assert.NotContains(t, g.log.String(), "Bearer ey", "no token in the gateway's log")
	for _, user := range []string{"alice", "bob"} {
		for _, x := range iss.ExchangedFor(user) {
			assert.NotContains(t, g.log.String(), x, "an exchanged token in the gateway's log")
		}
	}
}

func hashesOf(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = hashOf(t)
	}
	return out
}
