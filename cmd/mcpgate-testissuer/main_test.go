package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/auth/authtest"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/credential"
)

// TestTokensVerify runs the program and checks each token it writes
// against a real Authenticator configured as scripts/test-tls.sh does.
func TestTokensVerify(t *testing.T) {
	for _, shape := range []string{"keycloak", "ory"} {
		t.Run(shape, func(t *testing.T) {
			dir := t.TempDir()
			const aud = "https://127.0.0.1:8443/mcp"
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan *authtest.Issuer, 1)
			done := make(chan error, 1)
			var out bytes.Buffer
			go func() {
				done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--audience", aud, "--tokens-dir", dir, "--shape", shape, "--users", "3"},
					&out, io.Discard, func(i *authtest.Issuer) { ready <- i })
			}()
			var iss *authtest.Issuer
			select {
			case iss = <-ready:
			case err := <-done:
				t.Fatalf("run ended early: %v", err)
			}
			defer func() {
				cancel()
				require.NoError(t, <-done)
			}()

			client, err := certs.ClientTrusting(filepath.Join(dir, "issuer-ca.pem"))
			require.NoError(t, err)
			userClaim := "preferred_username"
			if shape == "ory" {
				userClaim = "sub"
			}
			a, err := auth.New(context.Background(), auth.Options{
				Issuer: iss.URL, Resource: aud, RequiredScopes: []string{"mcp:use"}, WriteScope: "mcp:write",
				UserClaim: userClaim, HTTPClient: client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			require.NoError(t, err)
			defer a.Close()
			<-a.Ready()

			for _, tc := range []struct {
				file     string
				user     string
				readOnly bool
				want     error
			}{
				{"full.jwt", "alice", false, nil},
				{"readonly.jwt", "alice", true, nil},
				{"user2.jwt", "bob", false, nil},
				{"users/alice-01.jwt", "alice-01", false, nil},
				{"users/alice-03.jwt", "alice-03", false, nil},
				{"low.jwt", "", false, auth.ErrMissingScope},
				{"wrongaud.jwt", "", false, auth.ErrAudience},
				{"expired.jwt", "", false, auth.ErrExpired},
			} {
				t.Run(tc.file, func(t *testing.T) {
					b, err := os.ReadFile(filepath.Join(dir, tc.file))
					require.NoError(t, err)
					r := httptest.NewRequest("POST", aud, nil)
					r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
					p, err := a.Authenticate(r)
					if !errors.Is(err, tc.want) {
						t.Fatalf("got %v, want %v", err, tc.want)
					}
					if tc.want == nil {
						assert.Equal(t, tc.user, p.UserID)
						assert.Equal(t, tc.readOnly, p.ReadOnly)
					}
				})
			}
			others, err := filepath.Glob(filepath.Join(dir, "users", "*.jwt"))
			require.NoError(t, err)
			assert.Len(t, others, 3, "--users 3 writes three tokens")
			env, err := os.ReadFile(filepath.Join(dir, "env.sh"))
			require.NoError(t, err)
			for _, v := range []string{"MCP_TOKEN=", "MCP_LOW_SCOPE_TOKEN=", "MCP_WRONG_AUD_TOKEN=", "MCP_TOKEN_2="} {
				assert.Contains(t, string(env), "export "+v)
			}
			assert.Contains(t, out.String(), "ready "+iss.URL)
		})
	}
}

func TestUsage(t *testing.T) {
	var errb bytes.Buffer
	err := run(context.Background(), []string{"--listen", "127.0.0.1:0"}, io.Discard, &errb, nil)
	require.ErrorIs(t, err, errUsage)
	assert.Contains(t, errb.String(), "--audience")
	errb.Reset()
	require.NoError(t, run(context.Background(), []string{"--help"}, io.Discard, &errb, nil))
	assert.Contains(t, errb.String(), "full.jwt")
}

// TestExchangeClient: with --exchange-client the tokens name the client
// too, still verify for the gateway, and exchange for an
// --exchange-audience by the credential package's client.
func TestExchangeClient(t *testing.T) {
	dir := t.TempDir()
	const aud = "https://127.0.0.1:8443/mcp"
	secret := filepath.Join(dir, "gw-secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *authtest.Issuer, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--audience", aud, "--tokens-dir", dir,
			"--exchange-client", "mcpgate-gateway", "--exchange-secret-file", secret, "--exchange-audience", "github-mcp"},
			io.Discard, io.Discard, func(i *authtest.Issuer) { ready <- i })
	}()
	var iss *authtest.Issuer
	select {
	case iss = <-ready:
	case err := <-done:
		t.Fatalf("run ended early: %v", err)
	}
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	client, err := certs.ClientTrusting(filepath.Join(dir, "issuer-ca.pem"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "full.jwt"))
	require.NoError(t, err)
	ex, err := credential.NewExchanger(credential.ExchangeOptions{Issuer: iss.URL, ClientID: "mcpgate-gateway", ClientSecret: []byte("s3cret"), HTTPClient: client})
	require.NoError(t, err)
	br, err := credential.New("github", credential.Options{Credentials: []credential.Credential{{Env: "T", From: credential.FromTokenExchange, Audience: "github-mcp"}}}, ex)
	require.NoError(t, err)
	s, err := br.Get(ctx, &auth.Principal{Issuer: iss.URL, Subject: "alice", UserID: "alice"}, strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.Len(t, s.Env, 1)
	assert.Len(t, iss.ExchangedFor("alice"), 1)
}
