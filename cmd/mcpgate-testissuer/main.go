// Command mcpgate-testissuer is a throwaway OpenID Connect issuer for
// scripts/test-tls.sh, benchmarks and the conformance probe. It serves
// discovery and a JWKS over HTTPS (package auth/authtest), writes a set of
// access tokens for one audience, and runs until interrupted. Its keys
// live in memory only: tokens die with the process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/auth/authtest"
)

const help = `mcpgate-testissuer — a throwaway OIDC issuer that mints test access tokens

Usage:
  mcpgate-testissuer --audience https://127.0.0.1:8443/mcp [--listen 127.0.0.1:9443]
                     [--cert FILE --key FILE] [--tokens-dir DIR] [flags]

Serves /.well-known/openid-configuration and /jwks over HTTPS at
https://LISTEN (the issuer URL; point the gateway's issuer at it), then writes
these tokens (one JWT per file in --tokens-dir, or NAME=JWT lines on stdout):

  full.jwt       USER with "USE WRITE"          a read-write session
  readonly.jwt   USER with "USE"                a read-only session
  low.jwt        USER without USE               403 insufficient_scope
  wrongaud.jwt   USER, full scopes, other aud   401 invalid_token
  user2.jwt      USER2 with "USE WRITE"         a second user
  expired.jwt    USER, full scopes, expired     401 invalid_token

and, with --users N, users/USER-01.jwt … users/USER-NN.jwt: read-write
tokens of N more users, USER-01 to USER-NN (for benchmarks of many users;
the file name without .jwt is the user).

and, in --tokens-dir, env.sh with the probe's variables (MCP_TOKEN,
MCP_LOW_SCOPE_TOKEN, MCP_WRONG_AUD_TOKEN, MCP_TOKEN_2) to source. Tokens are
Keycloak-shaped (user in preferred_username, RS256, typ JWT) or, with
--shape ory, Ory-shaped (user in sub, scp array, ES256, typ at+jwt).

Without --cert/--key it makes a self-signed certificate for 127.0.0.1,
localhost and ::1 and writes it to --ca-out (default DIR/issuer-ca.pem, or
./issuer-ca.pem): the gateway must trust that file to reach the issuer.
It also grants client credentials to any client at ISSUER_URL/token (form
fields scope, resource, and username to choose the user), for tools that
fetch their own tokens; and, for "mcpgate login", registers clients at
ISSUER_URL/register and approves every authorization request at once as
USER (authorization code with PKCE S256, refresh tokens). With
--exchange-client it exchanges tokens at ISSUER_URL/token by RFC 8693, as
Keycloak's standard token exchange does, for the clients
--exchange-audience names. It prints "ready ISSUER_URL" when everything is
written and serves until SIGINT or SIGTERM.

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var errUsage = errors.New("mcpgate-testissuer: usage")

// run serves until ctx ends; ready, when set, is called once the tokens
// are written (for tests).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(*authtest.Issuer)) error {
	fs := pflag.NewFlagSet("mcpgate-testissuer", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, help)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:9443", "address to serve HTTPS on; the issuer URL is https://LISTEN")
	certFile := fs.String("cert", "", "server certificate PEM (default: a fresh self-signed one)")
	keyFile := fs.String("key", "", "server key PEM, with --cert")
	caOut := fs.String("ca-out", "", "where to write the self-signed certificate (default TOKENS-DIR/issuer-ca.pem or ./issuer-ca.pem)")
	audience := fs.String("audience", "", "the gateway's resource URI the tokens are for (required), e.g. https://127.0.0.1:8443/mcp")
	tokensDir := fs.String("tokens-dir", "", "directory to write NAME.jwt files and env.sh into (default: print NAME=JWT lines)")
	user := fs.String("user", "alice", "user of most tokens")
	user2 := fs.String("user2", "bob", "user of user2.jwt")
	users := fs.Int("users", 0, "also write users/USER-NN.jwt, read-write tokens of this many more users")
	useScope := fs.String("use-scope", "mcp:use", "the required scope (USE)")
	writeScope := fs.String("write-scope", "mcp:write", "the write scope (WRITE)")
	ttl := fs.Duration("ttl", 24*time.Hour, "token lifetime")
	shape := fs.String("shape", "keycloak", "token shape: keycloak or ory")
	exClient := fs.String("exchange-client", "", "a confidential client that may exchange tokens (RFC 8693): the gateway's; every token but wrongaud.jwt names it among its audiences")
	exSecretFile := fs.String("exchange-secret-file", "", "file holding --exchange-client's secret")
	exAudiences := fs.StringSlice("exchange-audience", nil, "a client exchanged tokens may be for (repeat for more)")
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	if *audience == "" || fs.NArg() > 0 || (*exClient == "") != (*exSecretFile == "") || *users < 0 || (*certFile == "") != (*keyFile == "") || (*shape != "keycloak" && *shape != "ory") {
		fmt.Fprintln(stderr, "mcpgate-testissuer: need --audience, --cert with --key, --exchange-client with --exchange-secret-file, --shape keycloak|ory, --users ≥ 0, and no arguments (see --help)")
		return errUsage
	}

	cfg := authtest.Config{Addr: *listen}
	if *certFile != "" {
		var err error
		if cfg.CertPEM, err = os.ReadFile(*certFile); err != nil {
			return fmt.Errorf("mcpgate-testissuer: %w", err)
		}
		if cfg.KeyPEM, err = os.ReadFile(*keyFile); err != nil {
			return fmt.Errorf("mcpgate-testissuer: %w", err)
		}
	}
	iss, err := authtest.Start(cfg)
	if err != nil {
		return fmt.Errorf("mcpgate-testissuer: %w", err)
	}
	defer iss.Close()
	iss.Audience = *audience
	iss.LoginUser = *user
	if *exClient != "" {
		secret, err := os.ReadFile(*exSecretFile)
		if err != nil {
			return fmt.Errorf("mcpgate-testissuer: %w", err)
		}
		iss.SetExchangeClient(*exClient, strings.TrimRight(string(secret), "\r\n"))
		for _, a := range *exAudiences {
			iss.AddClient(a)
		}
	}

	if *certFile == "" {
		if *caOut == "" {
			*caOut = filepath.Join(*tokensDir, "issuer-ca.pem")
		}
		if err := writeFile(*caOut, iss.CertPEM()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "issuer certificate (trust it in the gateway): %s\n", *caOut)
	}

	now := time.Now()
	both := []string{*useScope, *writeScope}
	mintFor := func(u, aud string, expiry time.Time, scopes ...string) (string, error) {
		var c map[string]any
		o := authtest.SignOptions{}
		if *shape == "ory" {
			c = iss.OryClaims(u, aud, scopes...)
			o = authtest.SignOptions{Alg: "ES256", Typ: "at+jwt"}
		} else {
			c = iss.KeycloakClaims(u, aud, scopes...)
		}
		c["exp"] = expiry.Unix()
		if *exClient != "" && aud == *audience {
			// Keycloak's standard exchange: the subject token names the
			// exchanging client too (a second audience mapper).
			c["aud"] = []string{aud, *exClient}
		}
		return iss.Sign(c, o)
	}
	specs := []tokenSpec{
		{"full", *user, *audience, now.Add(*ttl), both, "MCP_TOKEN"},
		{"readonly", *user, *audience, now.Add(*ttl), []string{*useScope}, ""},
		{"low", *user, *audience, now.Add(*ttl), []string{"profile"}, "MCP_LOW_SCOPE_TOKEN"},
		{"wrongaud", *user, "https://wrong-audience.invalid/mcp", now.Add(*ttl), both, "MCP_WRONG_AUD_TOKEN"},
		{"user2", *user2, *audience, now.Add(*ttl), both, "MCP_TOKEN_2"},
		{"expired", *user, *audience, now.Add(-time.Minute), both, ""},
	}
	for i := range *users {
		u := fmt.Sprintf("%s-%02d", *user, i+1)
		specs = append(specs, tokenSpec{"users/" + u, u, *audience, now.Add(*ttl), both, ""})
	}
	var env strings.Builder
	for _, s := range specs {
		tok, err := mintFor(s.user, s.aud, s.expiry, s.scopes...)
		if err != nil {
			return fmt.Errorf("mcpgate-testissuer: %w", err)
		}
		if s.env != "" {
			fmt.Fprintf(&env, "export %s=%s\n", s.env, tok)
		}
		if *tokensDir == "" {
			fmt.Fprintf(stdout, "%s=%s\n", s.name, tok)
			continue
		}
		if err := writeFile(filepath.Join(*tokensDir, s.name+".jwt"), []byte(tok+"\n")); err != nil {
			return err
		}
	}
	if *tokensDir != "" {
		if err := writeFile(filepath.Join(*tokensDir, "env.sh"), []byte(env.String())); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tokens for %s in %s\n", *audience, *tokensDir)
	}
	fmt.Fprintf(stdout, "ready %s\n", iss.URL)
	if ready != nil {
		ready(iss)
	}
	<-ctx.Done()
	return nil
}

// tokenSpec is a token to write: its file name (without .jwt), user,
// audience, expiry, scopes, and the env.sh variable it goes into, if any.
type tokenSpec struct {
	name, user, aud string
	expiry          time.Time
	scopes          []string
	env             string
}

// writeFile writes a test secret readable by its owner only.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcpgate-testissuer: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("mcpgate-testissuer: %w", err)
	}
	return nil
}
