package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/oauthclient"
)

func init() {
	commands["login"] = runLogin
	commands["token"] = runToken
}

// clientFlags are the flags every client-side command shares.
type clientFlags struct {
	url, caFile, cache string
}

func (c *clientFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "the gateway's MCP endpoint, e.g. https://mcp.example.com/mcp (required)")
	fs.StringVar(&c.caFile, "ca-file", "", "PEM file of extra CA certificates to trust (a self-signed gateway or issuer)")
	fs.StringVar(&c.cache, "cache", "", "the token cache file (default: mcpgate/tokens.json in the user's configuration directory)")
}

// httpClient trusts the system roots plus --ca-file.
func (c *clientFlags) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("mcpgate: --ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mcpgate: --ca-file %s holds no PEM certificate", c.caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: refuseDowngrade}, nil
}

// refuseDowngrade stops a redirect from https to another scheme: Go's
// client keeps the Authorization header (and a token request's body) on a
// redirect to the same host whatever its scheme, so following it would
// send the token in the clear.
func refuseDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refused a redirect from https to %s://%s%s: it would send the token without TLS; check the URL and the proxy in front of the server",
			req.URL.Scheme, req.URL.Host, req.URL.Path)
	}
	return nil
}

// parseClientFlags parses fs and checks --url; done means return (help
// printed, or a usage error in err).
func parseClientFlags(m *Main, fs *pflag.FlagSet, args []string, c *clientFlags) (done bool, err error) {
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return true, nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return true, errUsage
	}
	if fs.NArg() > 0 || c.url == "" {
		fmt.Fprintf(m.Stderr, "mcpgate %s: needs --url and no arguments (see --help)\n", fs.Name())
		return true, errUsage
	}
	// The token goes to --url: never in the clear over the network.
	if err := auth.CheckURL(c.url); err != nil {
		fmt.Fprintf(m.Stderr, "mcpgate %s: --url %v\n", fs.Name(), err)
		return true, errUsage
	}
	return false, nil
}

// runLogin is `mcpgate login`.
func runLogin(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("login", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate login --url URL [--client-id ID [--client-secret-file FILE]] [--scope S]...

Logs you in to the gateway at URL for mcpgate token and mcpgate bridge:
finds its authorization server (RFC 9728 metadata), registers a client there
when it offers dynamic registration (else pass --client-id), opens your
browser for the authorization code flow with PKCE and a loopback redirect to
http://127.0.0.1:PORT/callback, and keeps the tokens in the token cache
(mode 0600), refreshing them later as needed. When the gateway and its
issuer offer DPoP (RFC 9449), the tokens are bound to a key kept beside the
cache (dpop-key.pem, mode 0600) and are useless without it.

`)
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.add(fs)
	clientID := fs.String("client-id", "", "a registered client id (or an https Client ID Metadata Document URL), instead of dynamic registration")
	secretFile := fs.String("client-secret-file", "", "file holding the client secret of a confidential --client-id")
	scopes := fs.StringSlice("scope", nil, "scope to ask for; repeat (default: the scopes the gateway's challenge names)")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the browser")
	dpop := fs.String("dpop", "auto", "DPoP-bound tokens (RFC 9449): auto (when the gateway and its issuer both offer them), on, or off")
	if done, err := parseClientFlags(m, fs, args, &cf); done {
		return err
	}
	hc, err := cf.httpClient()
	if err != nil {
		return err
	}
	secret, err := readSecret(*secretFile)
	if err != nil {
		return err
	}
	cache := oauthclient.Cache{Path: cf.cache}
	prev, _ := cache.Lookup(cf.url)
	open := m.OpenBrowser
	if open == nil {
		open = func(u string) error { return systemBrowser(m, u) }
	}
	e, err := oauthclient.Login(ctx, oauthclient.LoginOptions{
		Resource: cf.url, HTTPClient: hc, ClientID: *clientID, ClientSecret: secret, Scopes: *scopes,
		OpenBrowser: open, Timeout: *timeout, Previous: prev, DPoP: *dpop, DPoPKey: cache.DPoPKey,
	})
	if err != nil {
		return err
	}
	if err := cache.Put(e); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "logged in to %s at %s (scopes %q, token valid until %s)\n", cf.url, e.Issuer,
		strings.Join(e.Scopes, " "), e.Expiry.Local().Format(time.RFC3339))
	return nil
}

// runToken is `mcpgate token`.
func runToken(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("token", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate token --url URL
       mcpgate token --url URL --client-credentials --client-id ID --client-secret-file FILE [--scope S]...

Prints a valid access token for the gateway at URL, for curl and scripts:
  curl -H "Authorization: Bearer $(mcpgate token --url URL)" ...
From the cache that mcpgate login filled (refreshed when it has expired), or
with --client-credentials from the authorization server's token endpoint for
a service client (nothing is cached then).

`)
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.add(fs)
	cc := fs.Bool("client-credentials", false, "use the client credentials grant instead of the cached login")
	clientID := fs.String("client-id", "", "the client id, with --client-credentials")
	secretFile := fs.String("client-secret-file", "", "file holding the client secret, with --client-credentials")
	scopes := fs.StringSlice("scope", nil, "scope to ask for with --client-credentials; repeat (default: the gateway's scopes_supported)")
	if done, err := parseClientFlags(m, fs, args, &cf); done {
		return err
	}
	hc, err := cf.httpClient()
	if err != nil {
		return err
	}
	if *cc {
		if *clientID == "" || *secretFile == "" {
			fmt.Fprintln(m.Stderr, "mcpgate token: --client-credentials needs --client-id and --client-secret-file")
			return errUsage
		}
		secret, err := readSecret(*secretFile)
		if err != nil {
			return err
		}
		tok, err := oauthclient.ClientCredentials(ctx, hc, cf.url, *clientID, secret, *scopes)
		if err != nil {
			return err
		}
		fmt.Fprintln(m.Stdout, tok.AccessToken)
		return nil
	}
	ts, err := oauthclient.NewTokenSource(oauthclient.Cache{Path: cf.cache}, hc, cf.url)
	if err != nil {
		return err
	}
	tok, err := ts.Token()
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, tok.AccessToken)
	return nil
}

// readSecret reads a secret from a file ("" for no file), trimmed of the
// newline editors add. Secrets never come from the command line, where
// other users can read them in the process list.
func readSecret(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("mcpgate: --client-secret-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// systemBrowser prints the URL (for a terminal without a browser, or a
// browser on another machine) and starts the system's browser on it: the
// program $BROWSER names when set (the convention of xdg-open, Python's
// webbrowser and git; an agent without a display can follow the redirect
// with one), else the system's opener.
func systemBrowser(m *Main, u string) error {
	fmt.Fprintf(m.Stderr, "Opening your browser to log in. If it does not open, visit:\n  %s\n", u)
	var cmd *exec.Cmd
	switch browser := m.Getenv("BROWSER"); {
	case browser != "":
		cmd = exec.Command(browser, u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return nil // the printed URL is enough
	}
	go cmd.Wait() // reap it; the browser outlives nothing of ours
	return nil
}
