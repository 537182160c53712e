package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// examplePolicyFile writes a configuration file holding the auth.policies
// example of deploy/auth-server.yaml, switched on, and returns its path.
// The rest of the configuration comes from startTLSGateway's environment.
func examplePolicyFile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/auth-server.yaml")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(data), "# BEGIN policies example\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "# END policies example")
	require.True(t, ok)
	path := filepath.Join(t.TempDir(), "policies.yaml")
	require.NoError(t, os.WriteFile(path, []byte("auth:\n"+strings.ReplaceAll(block, "# ", "")), 0o644))
	return path
}

var (
	readerScopes    = []string{"mcp:use", "mcp:read"}
	developerScopes = []string{"mcp:use", "mcp:read", "mcp:develop"}
)

// TestServeExamplePolicy: the example policy on the real program, the
// built-in worker and SQLite, with the example policy of
// deploy/auth-server.yaml: a reader sees only reading tools and its worker
// is read-only; its apply_ddl gets 403 insufficient_scope naming
// mcp:develop, by any spelling; the same session (and, on 2026-07-28, the
// same client) presented a developer token runs apply_ddl; an admin-only
// tool stays refused to the developer with a JSON-RPC kind; and a reader's
// token afterwards cannot run it.
func TestServeExamplePolicy(t *testing.T) {
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_CONFIG":           examplePolicyFile(t),
		"MCPGATE_AUTH_WRITE_SCOPE": "",
	})
	ddl := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"apply_ddl","arguments":{"sql":"CREATE TABLE %s (id integer)"}}}`

	t.Run("session (2025-11-25)", func(t *testing.T) {
		tok := g.token(t, "carol", readerScopes...)
		cs := g.connectSession(t, &tok)
		names := toolNames(t, cs)
		assert.True(t, names["query"] && names["list_tables"] && names["status"], "reader tools: %v", names)
		for _, hidden := range []string{"apply_ddl", "drop_table", "execute_sql", "commit", "begin"} {
			assert.False(t, names[hidden], "%s listed to a reader", hidden)
		}
		assert.Equal(t, true, statusOf(t, cs)["readOnly"], "a reader's worker and database are read-only")

		reader := tok
		for _, body := range []string{
			strings.Replace(ddl, "%s", "t_reader", 1),
			strings.Replace(strings.Replace(ddl, "%s", "t_reader", 1), `"tools/call"`, `"TOOLS/CALL"`, 1),
			strings.Replace(strings.Replace(ddl, "%s", "t_reader", 1), `"name":"apply_ddl"`, `"name":"query","name":"apply_ddl"`, 1),
			strings.Replace(strings.Replace(ddl, "%s", "t_reader", 1), `"name":"apply_ddl"`, `"name":"apply_ddl","Name":"query"`, 1),
		} {
			code, h, out := g.raw(t, reader, cs.ID(), body)
			assert.NotContains(t, out, `"result"`, "%d %s", code, out)
			if strings.Contains(body, `"tools/call"`) && !strings.Contains(body, `"Name"`) && !strings.Contains(body, `"name":"query"`) {
				assert.Equal(t, http.StatusForbidden, code)
				assert.Contains(t, h.Get("WWW-Authenticate"), `error="insufficient_scope"`)
				assert.Contains(t, h.Get("WWW-Authenticate"), `scope="mcp:use mcp:read mcp:develop"`)
			}
		}

		tok = g.token(t, "carol", developerScopes...) // the client stepped up
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "apply_ddl", Arguments: map[string]any{"sql": "CREATE TABLE t_session (id integer)"}})
		require.NoError(t, err, "the developer's apply_ddl on the reader's session")
		assert.False(t, res.IsError, "apply_ddl: %v", res.Content)
		assert.Equal(t, false, statusOf(t, cs)["readOnly"], "the session now has a developer's worker")

		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop_table", Arguments: map[string]any{"table": "customers"}})
		var werr *jsonrpc.Error
		require.True(t, errors.As(err, &werr), "got %v, want a JSON-RPC error", err)
		assert.JSONEq(t, `"forbidden"`, kindOf(t, werr.Data), "an admin-only tool, to a developer")

		tok = reader // a step-down on the developer's session
		code, _, out := g.raw(t, reader, cs.ID(), strings.Replace(ddl, "%s", "t_down", 1))
		assert.Equal(t, http.StatusForbidden, code, out)
		assert.False(t, toolNames(t, cs)["apply_ddl"], "the reader's list on the developer's session")
	})

	t.Run("stateless (2026-07-28)", func(t *testing.T) {
		// Without an OAuth handler the go-sdk client ends its connection on
		// a 403 (TestSDKStepUp has the handler); with no session to keep, a
		// client of the new token is the same thing on 2026-07-28.
		call := func(tok string, table string) (*mcp.CallToolResult, error) {
			cs := g.connect(t, &tok)
			require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
			return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "apply_ddl", Arguments: map[string]any{"sql": "CREATE TABLE " + table + " (id integer)"}})
		}
		reader := g.token(t, "dora", readerScopes...)
		assert.False(t, toolNames(t, g.connect(t, &reader))["apply_ddl"])
		_, err := call(reader, "t_modern")
		require.Error(t, err, "a reader's apply_ddl")
		assert.Contains(t, err.Error(), "Forbidden")

		res, err := call(g.token(t, "dora", developerScopes...), "t_modern")
		require.NoError(t, err, "the developer's apply_ddl")
		assert.False(t, res.IsError, "apply_ddl: %v", res.Content)

		_, err = call(reader, "t_modern2")
		require.Error(t, err, "a reader again: never the developer's worker")
	})
}

// TestSDKStepUp drives the go-sdk client's own OAuth handling against the
// test issuer, in the least-privilege mode (auth.initial_scopes): the first
// 401 asks only for the reader tier; carol's apply_ddl gets 403
// insufficient_scope, the client re-authorizes for the challenge's scopes,
// the issuer (its authorization endpoint, as carol) grants mcp:develop
// (she holds the role), and the retried call
// runs, on the same session on 2025-11-25 and the same client on
// 2026-07-28. bob, without the role, is granted no mcp:develop and stays
// refused.
func TestSDKStepUp(t *testing.T) {
	g := startTLSGateway(t, map[string]string{
		"MCPGATE_CONFIG":              examplePolicyFile(t),
		"MCPGATE_AUTH_WRITE_SCOPE":    "",
		"MCPGATE_AUTH_INITIAL_SCOPES": "mcp:use mcp:read",
	})
	// Both the gateway's and the issuer's certificates.
	pool := g.client.Transport.(*http.Transport).TLSClientConfig.RootCAs.Clone()
	pool.AppendCertsFromPEM(g.issuer.CertPEM())
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	noRedirect := &http.Client{Transport: hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	entitled := map[string][]string{"carol": developerScopes, "bob": readerScopes}
	connect := func(t *testing.T, user, version string) (*mcp.ClientSession, *[][]string) {
		var asked [][]string
		h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			// Pre-registered (the realm file's mcpgate-cli): the go-sdk
			// v1.8.0 registers a new client on every authorization when it
			// registers dynamically, and a session belongs to its client.
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: "mcpgate-cli"},
			RedirectURL:         "http://127.0.0.1:1/callback",
			Client:              hc,
			AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				// The browser: the user logs in (login_hint) and Keycloak
				// leaves out the scopes the user is not entitled to (role
				// scope mappings); the test issuer approves the rest.
				u, err := url.Parse(args.URL)
				if err != nil {
					return nil, err
				}
				q := u.Query()
				requested := strings.Fields(q.Get("scope"))
				asked = append(asked, requested)
				var granted []string
				for _, s := range requested {
					if slices.Contains(entitled[user], s) {
						granted = append(granted, s)
					}
				}
				q.Set("scope", strings.Join(granted, " "))
				q.Set("login_hint", user)
				u.RawQuery = q.Encode()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
				if err != nil {
					return nil, err
				}
				resp, err := noRedirect.Do(req)
				if err != nil {
					return nil, err
				}
				resp.Body.Close()
				back, err := url.Parse(resp.Header.Get("Location"))
				if err != nil {
					return nil, err
				}
				bq := back.Query()
				return &auth.AuthorizationResult{Code: bq.Get("code"), State: bq.Get("state"), Iss: bq.Get("iss")}, nil
			},
		})
		require.NoError(t, err)
		c := mcp.NewClient(&mcp.Implementation{Name: "step-up", Version: "1"}, nil)
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.resource, HTTPClient: hc, OAuthHandler: h, DisableStandaloneSSE: true}, opts)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs, &asked
	}
	ddl := func(cs *mcp.ClientSession, table string) (*mcp.CallToolResult, error) {
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "apply_ddl", Arguments: map[string]any{"sql": "CREATE TABLE " + table + " (id integer)"}})
	}

	for _, version := range []string{"2025-11-25", ""} {
		t.Run("carol "+cmp.Or(version, "2026-07-28"), func(t *testing.T) {
			cs, asked := connect(t, "carol", version)
			// Scope order is not part of the request: the SDK takes the
			// challenge's or the metadata's, depending on which it read.
			require.Len(t, *asked, 1)
			require.ElementsMatch(t, []string{"mcp:use", "mcp:read"}, (*asked)[0], "the least-privilege 401 asks for the reader tier only")
			assert.False(t, toolNames(t, cs)["apply_ddl"], "a reader's list")
			res, err := ddl(cs, "t_sdk_"+strings.ReplaceAll(cmp.Or(version, "modern"), "-", ""))
			require.NoError(t, err, "the retried call after the step-up")
			assert.False(t, res.IsError, "apply_ddl: %v", res.Content)
			require.Len(t, *asked, 2)
			assert.ElementsMatch(t, []string{"mcp:use", "mcp:read", "mcp:develop"}, (*asked)[1], "the step-up asks for the challenge's scopes")
			assert.True(t, toolNames(t, cs)["apply_ddl"], "the developer's list")
		})
	}

	t.Run("bob is not entitled", func(t *testing.T) {
		cs, _ := connect(t, "bob", "2025-11-25")
		_, err := ddl(cs, "t_bob")
		require.Error(t, err, "bob's apply_ddl after a step-up that granted nothing")
	})
}
