package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/local"
	"github.com/mcpgate/mcpgate/worker"
)

// servedServer is one MCP server of the servers list, served at its own
// path by a gateway of its own: what the combined /mcp endpoint needs of
// each server.
type servedServer struct {
	// Name is the configured name, the path element of Path and the
	// server label of its audit events.
	Name string
	// Path is /mcp/<name>.
	Path string
	// Config is the configuration the server runs from
	// (config.Config.ServerConfigs): its scopes, policies, read-only
	// switch and worker.
	Config *config.Config
	// Gateway serves Path, with its own workers, limits and drain.
	Gateway *gateway.Gateway
	// Auth checks the server's tokens: its audience, scopes and policies;
	// nil in the localhost mode.
	Auth *auth.Authenticator
}

// wiring is what serve has made that every server's gateway is wired
// into: the log, the audit and metrics, the top-level token checker (nil
// in the localhost mode) and the mux the paths are mounted on.
type wiring struct {
	log  *slog.Logger
	obs  *observability
	root *auth.Authenticator
	mux  *http.ServeMux
	// socket says that a Unix socket is served too: each gateway's
	// token check then lets the socket's requests through, which carry
	// their peer's principal (local.Middleware).
	socket bool
}

// authn is the gateway middleware for the token check network: itself,
// or with a socket, local.Middleware around it.
func (w wiring) authn(network func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	if w.socket {
		return local.Middleware(network)
	}
	return network
}

// newServers starts a gateway for each entry of servers: one launcher and
// one gateway per server, sharing one gateway.Accounting (the limits are
// the process's), each checking tokens for its own resource with
// an authenticator derived from w.root (one issuer discovery, one key
// fetcher for all), and mounts each at /mcp/<name> with its RFC 9728
// metadata. On an error it stops what it started.
func newServers(ctx context.Context, cfg *config.Config, w wiring) ([]servedServer, error) {
	var out []servedServer
	// One count of the limits for every server: limits.max_sessions and
	// the rest bound the process, not each server.
	acct := gateway.NewAccounting()
	fail := func(err error) ([]servedServer, error) {
		sctx, cancel := context.WithTimeout(context.Background(), stopWait)
		defer cancel()
		return nil, errors.Join(err, closeServers(sctx, out))
	}
	for _, sc := range cfg.ServerConfigs() {
		launcher, gopts, err := gatewayOptions(ctx, sc, w.log.With("server", sc.ServerName()))
		if err != nil {
			return fail(fmt.Errorf("mcpgate: server %q: %w", sc.ServerName(), err))
		}
		gopts.Server, gopts.Accounting = sc.ServerName(), acct
		w.obs.gatewayOptions(&gopts)
		// Each server's own credentials (servers[].credentials), obtained by
		// a broker of its own.
		if gopts.Credentials, err = workerCredentials(sc, w.obs.metrics); err != nil {
			return fail(fmt.Errorf("mcpgate: server %q: %w", sc.ServerName(), err))
		}
		if len(out) == 0 { // the gateway that answers /readyz
			gopts.Ready = allReady(readyRest(&out), gopts.Ready)
		}
		s := servedServer{Name: sc.ServerName(), Path: sc.MountPath(), Config: sc}
		if w.root != nil {
			if s.Auth, err = serverAuthenticator(w.root, sc); err != nil {
				return fail(fmt.Errorf("mcpgate: server %q: %w", sc.ServerName(), err))
			}
			gopts.Middleware = s.Auth.Middleware
			gopts.Ready = allReady(keysLoaded(s.Auth), gopts.Ready)
		}
		gopts.Middleware = w.authn(gopts.Middleware)
		if s.Gateway, err = gateway.New(launcher, gopts); err != nil {
			return fail(fmt.Errorf("mcpgate: server %q: %w", sc.ServerName(), err))
		}
		out = append(out, s)
		w.mux.Handle(s.Path, s.Gateway)
		if s.Auth != nil {
			// The root well-known path is the top-level resource's (/mcp).
			w.mux.Handle(s.Auth.MetadataPath(), s.Auth.MetadataHandler())
		}
	}
	return out, nil
}

// startServers starts the gateways of cfg: without a servers list, the one
// server at /mcp from launcher and gopts, checking tokens with w.root
// (which mcpgate serve has mounted); with one, newServers. The first
// server's gateway answers the probes.
func startServers(ctx context.Context, cfg *config.Config, w wiring, launcher *worker.Launcher, gopts gateway.Options) ([]servedServer, error) {
	if len(cfg.Servers) > 0 {
		return newServers(ctx, cfg, w)
	}
	gopts.Middleware = w.authn(gopts.Middleware)
	g, err := gateway.New(launcher, gopts)
	if err != nil {
		return nil, err
	}
	return []servedServer{{Path: cfg.MountPath(), Config: cfg, Gateway: g, Auth: w.root}}, nil
}

// serverAuthenticator is root for the server sc serves: its resource,
// scopes and policies.
func serverAuthenticator(root *auth.Authenticator, sc *config.Config) (*auth.Authenticator, error) {
	o, err := sc.AuthOptions()
	if err != nil {
		return nil, err
	}
	return root.ForResource(auth.Resource{
		Resource: o.Resource, ResourceName: o.ResourceName,
		RequiredScopes: o.RequiredScopes, WriteScope: o.WriteScope, ExtraScopes: o.ExtraScopes,
		InitialScopes: o.InitialScopes, Policies: o.Policies,
	})
}

// stopWait bounds how long stopping the servers' workers may take.
const stopWait = 30 * time.Second

// closeServers stops every server's workers at once, bounded by ctx.
func closeServers(ctx context.Context, ss []servedServer) error {
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { errs[i] = s.Gateway.Close(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// drainServers drains every server at once (gateway.Drain): each refuses
// new sessions and waits for its own calls in flight.
func drainServers(ctx context.Context, ss []servedServer) {
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() { _ = s.Gateway.Drain(ctx) }) // logged by the gateway
	}
	wg.Wait()
}

// serverSet is the servers as the metrics read them: their sessions and
// workers summed.
type serverSet []servedServer

func (ss serverSet) Sessions() int {
	n := 0
	for _, s := range ss {
		n += s.Gateway.Sessions()
	}
	return n
}

func (ss serverSet) Workers(kind string) int {
	n := 0
	for _, s := range ss {
		n += s.Gateway.Workers(kind)
	}
	return n
}

// readyRest is ready while every server after the first is: with the
// first's own checks, /readyz says ready only when every server is: a replica that cannot serve
// one of its servers (its command gone, its database down) is taken out
// of the load balancer as a whole, since the balancer's one health check
// routes every path.
func readyRest(ss *[]servedServer) readyCheck {
	return func(ctx context.Context) error {
		if len(*ss) < 2 {
			return nil
		}
		for _, s := range (*ss)[1:] {
			if err := s.Gateway.Ready(ctx); err != nil {
				return fmt.Errorf("mcpgate: server %q: %w", s.Name, err)
			}
		}
		return nil
	}
}

// mountCombined serves the combined endpoint at /mcp over the servers of
// a servers list (gateway.NewCombined): the union of the servers a token
// reaches, under prefixed names, its tokens checked by w.root for the
// top-level resource (<public_url>/mcp). Each server's rights through it
// are those at its own path.
func mountCombined(cfg *config.Config, w wiring, ss []servedServer) error {
	members := make([]gateway.Member, 0, len(ss))
	for _, s := range ss {
		o, err := s.Config.AuthOptions()
		if err != nil {
			return fmt.Errorf("mcpgate: server %q: %w", s.Name, err)
		}
		members = append(members, gateway.Member{Name: s.Name, Gateway: s.Gateway, Title: s.Config.Server.Title,
			Rights: auth.Rights{RequiredScopes: o.RequiredScopes, WriteScope: o.WriteScope, Policies: o.Policies}})
	}
	opts := cfg.GatewayOptions()
	opts.Logger = w.log.With("server", "(combined)")
	if w.root != nil {
		opts.Middleware = w.root.Middleware
	}
	opts.Middleware = w.authn(opts.Middleware)
	c, err := gateway.NewCombined(members, opts)
	if err != nil {
		return err
	}
	w.mux.Handle(cfg.MountPath(), c)
	return nil
}

// serversScopes are the scopes of every server of cfg's servers list, for
// the combined endpoint's metadata and challenges (scopes_supported): a
// client that logs in for /mcp asks for what reaches every server.
func serversScopes(cfg *config.Config) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s ...string) {
		for _, x := range s {
			if x != "" && !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	for _, sc := range cfg.ServerConfigs() {
		o, err := sc.AuthOptions()
		if err != nil {
			continue // reported when the server starts
		}
		add(auth.SupportedScopes(o)...)
	}
	return out
}
