package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/doctor"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/oauthclient"
	"github.com/mcpgate/mcpgate/worker"
)

func init() { commands["doctor"] = runDoctor }

// errChecksFailed makes `mcpgate doctor` exit 1 after printing its report.
var errChecksFailed = errors.New("mcpgate doctor: some checks failed (FAIL lines above)")

// runDoctor is `mcpgate doctor`.
func runDoctor(ctx context.Context, m *Main, args []string) error {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, `Usage: mcpgate doctor --url URL [--token-file FILE] [--user-claim CLAIM]
       mcpgate doctor --config FILE

Checks a gateway and prints one line per check: OK, WARN or FAIL, what was
checked, and for WARN and FAIL what to change. Exit status 1 when a check
failed.

--url checks from a client's side: TLS, the 401 challenge, the RFC 9728
metadata at both well-known paths, the authorization server and what MCP
clients need of it (PKCE, registration, scopes; Keycloak's usual slips), and
a token (--token-file, else the one of mcpgate login): its iss, aud, expiry,
scopes and user claim, then whether the gateway accepts it.

--config checks on the gateway's machine: the configuration (the file, then
MCPGATE_ variables), the listen address, the TLS certificate (names, chain,
expiry), the issuer's discovery and JWKS over auth.issuer_ca_file, the
algorithm allow-list, the clock against the issuer's, and the audience; with
a servers list, each server: its path and audience, its worker started, or
a remote server's URL answering.

`)
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.add(fs)
	fs.Lookup("url").Usage = "the gateway's MCP endpoint, e.g. https://mcp.example.com/mcp (client-side checks; or --config)"
	cfgFile := fs.String("config", "", "the gateway's configuration file (server-side checks)")
	tokenFile := fs.String("token-file", "", "a file holding an access token to explain and try (default: the cached login, if any)")
	userClaim := fs.String("user-claim", "", "the claim the gateway reads the user from (auth.user_claim; default preferred_username on Keycloak, else sub)")
	switch err := fs.Parse(args); {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	if fs.NArg() > 0 || (cf.url == "") == (*cfgFile == "") {
		fmt.Fprintln(m.Stderr, "mcpgate doctor: give --url or --config, not both (see --help)")
		return errUsage
	}
	var r *doctor.Report
	if *cfgFile != "" {
		cfg, err := config.Loader{Getenv: m.Getenv}.Load(*cfgFile, nil)
		if err != nil {
			fmt.Fprintf(m.Stdout, "FAIL  %-22s %s — fix the file\n", "config", strings.ReplaceAll(err.Error(), "\n", "; "))
			return errChecksFailed
		}
		log := slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		opts := doctor.ServerOptions{}
		valid := cfg.Validate() == nil
		if valid && len(cfg.Servers) == 0 {
			opts.Worker = checkWorker(cfg, log)
		}
		r = doctor.CheckServer(ctx, cfg, opts)
		if valid {
			doctor.CheckServers(ctx, r, cfg, func(ctx context.Context, sc *config.Config, readOnly bool) (string, error) {
				return checkWorker(sc, log)(ctx, readOnly)
			})
		}
	} else {
		hc, err := cf.httpClient()
		if err != nil {
			return err
		}
		token := ""
		if *tokenFile != "" {
			if token, err = readSecret(*tokenFile); err != nil {
				return err
			}
		} else if ts, err := oauthclient.NewTokenSource(oauthclient.Cache{Path: cf.cache}, hc, cf.url); err == nil {
			if t, err := ts.Token(); err == nil {
				token = t.AccessToken
			}
			if e := ts.Entry(); e.DPoP && e.Bound() && token != "" {
				// A bound token is checked the way the bridge sends it:
				// as DPoP, with a proof of the cached key.
				if key, err := (oauthclient.Cache{Path: cf.cache}).DPoPKey(); err == nil {
					bound := token
					hc = oauthclient.DPoPClient(hc, key, "", func(t string) bool { return t == bound })
				}
			}
		}
		r = doctor.CheckURL(ctx, doctor.URLOptions{URL: cf.url, HTTPClient: hc, Token: token, UserClaim: *userClaim,
			DPoPKey: oauthclient.Cache{Path: cf.cache}.DPoPKey})
		if token == "" {
			defer fmt.Fprintln(m.Stdout, "(no token checked: pass --token-file, or run mcpgate login --url URL first)")
		}
	}
	r.Print(m.Stdout)
	if r.Failed() {
		return errChecksFailed
	}
	return nil
}

// checkWorker starts the worker serve would start, for a session of the
// doctor, sends initialize and waits for the answer: the built-in worker
// opens its database then (read-only for a read-only session).
func checkWorker(cfg *config.Config, log *slog.Logger) func(ctx context.Context, readOnly bool) (string, error) {
	return func(ctx context.Context, readOnly bool) (string, error) {
		launcher, _, err := gatewayOptions(ctx, cfg, log)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(ctx, cfg.Limits.WorkerStartTimeout)
		defer cancel()
		conn, err := launcher.Start(worker.Session{User: "mcpgate-doctor", ID: "doctor", ReadOnly: readOnly}, worker.ConnConfig{Logger: log})
		if err != nil {
			return "", err
		}
		defer conn.Close(context.Background(), "", "")
		init, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpgate-doctor","version":"` + Version + `"}}}`))
		if err != nil {
			return "", err
		}
		s := worker.NewStream(false)
		s.Expect(1)
		conn.Call(init, "", s, nil)
		for {
			select {
			case <-s.Ready():
			case <-conn.Done():
				return "", errors.New("the worker exited before answering initialize")
			case <-ctx.Done():
				return "", fmt.Errorf("no answer to initialize within limits.worker_start_timeout (%s)", cfg.Limits.WorkerStartTimeout)
			}
			msgs, _ := s.Take(false)
			for _, m := range msgs {
				if !m.Response {
					continue
				}
				var a struct {
					Result struct {
						ServerInfo struct{ Name string } `json:"serverInfo"`
					} `json:"result"`
					Error *struct{ Message string } `json:"error"`
				}
				json.Unmarshal(m.Data, &a)
				if a.Error != nil {
					return "", errors.New("initialize failed: " + a.Error.Message)
				}
				return a.Result.ServerInfo.Name, nil
			}
		}
	}
}
