package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/oauthclient"
)

func init() { commands["bridge"] = runBridge }

// runBridge is `mcpgate bridge`: stdio on one side,
// Streamable HTTP with the cached token on the other.
func runBridge(ctx context.Context, m *Main, args []string) error {
	if wantsSocket(args) {
		return runShim(ctx, m, args)
	}
	fs := pflag.NewFlagSet("bridge", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate bridge --url URL
       mcpgate bridge --socket [PATH]   (the local gateway: see --socket --help)

An MCP server on stdin/stdout that forwards every message to the gateway at
URL over Streamable HTTP, with the token of "mcpgate login --url URL"
(refreshed when it expires, and once more when the gateway answers 401). For
MCP clients that cannot do OAuth themselves; "mcpgate install" writes the
entry that runs it. If the gateway restarts, the next request starts a new
session. Logs go to stderr only.

`)
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.add(fs)
	if done, err := parseClientFlags(m, fs, args, &cf); done {
		return err
	}
	hc, err := cf.httpClient()
	if err != nil {
		return err
	}
	hc.Timeout = 0 // an SSE answer lasts as long as its tool runs
	ts, err := oauthclient.NewTokenSource(oauthclient.Cache{Path: cf.cache}, hc, cf.url)
	if err != nil {
		return err
	}
	// A DPoP-bound token goes with a fresh proof of the key it is bound
	// to on every request (RFC 9449 §7). The login may become a DPoP one
	// while the bridge runs (a new login here or in another process), so
	// the key is loaded when the first bound token is sent.
	dc := *hc
	dc.Transport = &oauthclient.DPoPTransport{Base: hc.Transport, LoadKey: oauthclient.Cache{Path: cf.cache}.DPoPKey,
		Bound: func(string) bool { e := ts.Entry(); return e.Bound() }}
	hc = &dc
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	var reauth func(context.Context, string) (string, error)
	if f, ok := m.Stderr.(*os.File); ok && isTerminal(f) {
		// A person runs the bridge in a terminal: log in again there
		// rather than failing (the client's stdio is not a terminal).
		reauth = func(ctx context.Context, scope string) (string, error) {
			prev := ts.Entry()
			scopes := prev.Scopes
			for _, s := range strings.Fields(scope) {
				if !slices.Contains(scopes, s) {
					scopes = append(scopes, s)
				}
			}
			lo := oauthclient.LoginOptions{Resource: cf.url, HTTPClient: hc, Scopes: scopes,
				OpenBrowser: func(u string) error { return systemBrowser(m, u) }, Previous: &prev,
				DPoP: "auto", DPoPKey: oauthclient.Cache{Path: cf.cache}.DPoPKey}
			if prev.DPoP {
				lo.DPoP = "on"
			}
			if !prev.Registered { // a client id the user gave at login
				lo.ClientID, lo.ClientSecret = prev.ClientID, prev.ClientSecret
			}
			e, err := oauthclient.Login(ctx, lo)
			if err != nil {
				return "", err
			}
			if err := ts.Set(e); err != nil {
				return "", err
			}
			return e.AccessToken, nil
		}
	}
	return bridge.Run(ctx, m.Stdin, m.Stdout, bridge.Options{
		Reauthorize: reauth,
		URL:         cf.url, HTTPClient: hc, Log: log,
		Token: func(context.Context) (string, error) {
			t, err := ts.Token()
			if err != nil {
				return "", err
			}
			return t.AccessToken, nil
		},
		Refresh: func(ctx context.Context) (string, error) {
			t, err := ts.Refresh(ctx)
			if err != nil {
				return "", err
			}
			return t.AccessToken, nil
		},
	})
}

// isTerminal says whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
