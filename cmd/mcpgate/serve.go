package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/certs"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/metrics"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/builtin"
	"github.com/mcpgate/mcpgate/tools/db"
	"github.com/mcpgate/mcpgate/tools/db/sqlite"
	"github.com/mcpgate/mcpgate/worker"
)

func init() { commands["serve"] = serve }

// serve is `mcpgate serve`: load and check the configuration (defaults, the
// file, MCPGATE_ variables, flags), then run the gateway until ctx ends.
func serve(ctx context.Context, m *Main, args []string) error {
	fs := config.Flags()
	daemon := addDaemonFlags(fs)
	fs.SetOutput(m.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(m.Stderr, "mcpgate serve: takes no arguments, got %q\n", fs.Args())
		return errUsage
	}
	cfg, err := config.Loader{Getenv: m.Getenv}.Load("", fs)
	if err == nil {
		daemon.adjust(cfg, m.Getenv)
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(m.Stderr, "mcpgate serve: the configuration has problems:")
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	log := newLogger(cfg, m.Stderr)
	for _, name := range config.UnknownEnv(os.Environ()) {
		log.Warn("mcpgate: unknown configuration variable ignored; see docs/configuration.md", "name", name)
	}
	if daemon.detach() {
		return detachDaemon(ctx, m, cfg, args)
	}
	return runGateway(withDaemon(ctx, daemon), m, cfg, log)
}

// builtinEnv is the built-in worker's environment besides its identity:
// the database settings, the worker's runtime defaults (builtin.Environ),
// then the operator's worker.env, last, so that it may override the
// defaults (os/exec keeps the last of a name).
func builtinEnv(d db.Config, operator []string) []string {
	return slices.Concat(d.Environ(), builtin.Environ(), operator)
}

// newLogger builds the gateway's log from log.level and log.format.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel()}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// gatewayOptions maps the configuration to the gateway's options and to the
// launcher of its workers. For the built-in worker it also prepares the
// database: the SQLite file (with the demo schema) is created here, once, so
// that every worker, read-only ones included, finds it.
func gatewayOptions(ctx context.Context, cfg *config.Config, log *slog.Logger) (*worker.Launcher, gateway.Options, error) {
	opts := cfg.GatewayOptions()
	opts.Logger = log
	wopts := cfg.LauncherOptions()
	wopts.ServerVersion = Version
	wopts.Logger = log
	command := cfg.Worker.Command // an external worker: its safe tools come from config
	if cfg.RemoteURL() != "" {
		var err error
		if command, err = upstreamWorkerCommand(cfg.Entry()); err != nil {
			return nil, opts, err
		}
	}
	builtin := len(command) == 0
	// An external worker's database, if any, is its own business.
	dbReady := readyCheck(func(context.Context) error { return nil })
	if builtin {
		safe, undo, d, err := builtinWorker(ctx, cfg, log)
		if err != nil {
			return nil, opts, err
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, opts, fmt.Errorf("mcpgate: finding the built-in worker (this executable): %w", err)
		}
		command = builtinWorkerCommand(exe, log)
		wopts.IdentityOnStdin = true
		opts.SafeTools, opts.UndoTools = safe, undo
		wopts.Env = builtinEnv(d, wopts.Env)
		dbReady = databaseAnswers(d.WithDefaults())
	}
	if wopts.PoolSize > 0 && wopts.PoolSize != config.DefaultPoolSize && !wopts.IdentityOnStdin {
		// Said only for a size the operator chose: the default applies to
		// the built-in worker and is no news for an external one.
		log.Info("mcpgate: worker.pool_size does not apply: the external worker.command has not declared worker.identity_on_stdin, so each session starts its own worker")
	}
	if err := workerLimits(cfg, log, &wopts); err != nil {
		return nil, opts, err
	}
	if err := workerAccounts(cfg, log, &wopts); err != nil {
		return nil, opts, err
	}
	if err := workerSandbox(cfg, log, command, builtin, &wopts); err != nil {
		return nil, opts, err
	}
	launcher, err := worker.NewLauncher(command, wopts)
	if err != nil {
		return nil, opts, fmt.Errorf("mcpgate: %w", err)
	}
	opts.Ready = allReady(workerStartable(command), dbReady)
	return launcher, opts, nil
}

// builtinWorker returns the safe and undo tools of the built-in worker's
// toolsets and its database settings, creating the SQLite database when
// that is the engine.
func builtinWorker(ctx context.Context, cfg *config.Config, log *slog.Logger) (safe, undo []string, d db.Config, err error) {
	safe, err = tools.SafeToolNames(cfg.Worker.Toolsets)
	if err != nil {
		return nil, nil, d, fmt.Errorf("mcpgate: worker.toolsets: %w", err)
	}
	undo, err = tools.UndoToolNames(cfg.Worker.Toolsets)
	if err != nil {
		return nil, nil, d, fmt.Errorf("mcpgate: worker.toolsets: %w", err)
	}
	d = cfg.DatabaseConfig()
	if d.Driver == "" || d.Driver == db.SQLite {
		d.Driver = db.SQLite
		path, err := filepath.Abs(cfg.Database.Path)
		if err != nil {
			return nil, nil, d, fmt.Errorf("mcpgate: database.path: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, nil, d, fmt.Errorf("mcpgate: database.path: %w", err)
		}
		created, err := sqlite.Ensure(ctx, path)
		if err != nil {
			return nil, nil, d, fmt.Errorf("mcpgate: database.path: %w", err)
		}
		if created {
			log.Info("mcpgate: created the SQLite database with the demo schema", "path", path)
		}
		d.DSN = path
	}
	return safe, undo, d, nil
}

// runGateway serves /mcp (and, with auth, the RFC 9728 metadata) until ctx
// is cancelled, then stops every worker and the server.
func runGateway(ctx context.Context, m *Main, cfg *config.Config, log *slog.Logger) error {
	if cfg.Server.Insecure && cfg.TCPListen() != "" && !cfg.Loopback() && (!cfg.TLSEnabled() || !cfg.Authenticated()) {
		log.Warn("mcpgate: INSECURE: serving a non-loopback address without TLS and authentication; anyone who can reach it can run tools", "listen", cfg.Server.Listen)
	}
	var launcher *worker.Launcher // the one server at /mcp; none with servers (newServers)
	var gopts gateway.Options
	if len(cfg.Servers) == 0 {
		var err error
		if launcher, gopts, err = gatewayOptions(ctx, cfg, log); err != nil {
			return err
		}
	}
	obs, err := newObservability(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := obs.close(sctx); err != nil {
			log.Error("mcpgate: closing the metrics listener and audit file", "err", err)
		}
	}()
	obs.gatewayOptions(&gopts)
	if gopts.Credentials, err = workerCredentials(cfg, obs.metrics); err != nil {
		return err
	}
	events := adminEvents(cfg, &gopts)
	mux := http.NewServeMux()
	keys := closedChan                // the localhost mode has no keys to wait for
	var pageAuthn *auth.Authenticator // for the web pages; nil in the localhost mode
	if cfg.Authenticated() {
		authn, err := newAuthenticator(ctx, cfg, log, obs.metrics)
		if err != nil {
			return err
		}
		defer authn.Close()
		pageAuthn = authn
		// The gateway runs it after its Host and Origin checks, so that a
		// forbidden browser request gets 403 rather than a challenge.
		gopts.Middleware = authn.Middleware
		gopts.Ready = allReady(keysLoaded(authn), gopts.Ready)
		keys = authn.Ready()
		for _, p := range authn.MetadataPaths() {
			mux.Handle(p, authn.MetadataHandler())
		}
	}
	srvs, err := startServers(ctx, cfg, wiring{log: log, obs: obs, root: pageAuthn, mux: mux, socket: cfg.SocketListen() != ""}, launcher, gopts)
	if err != nil {
		return err
	}
	if len(cfg.Servers) > 0 {
		if err := mountCombined(cfg, wiring{log: log, root: pageAuthn, mux: mux, socket: cfg.SocketListen() != ""}, srvs); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), stopWait)
			defer cancel()
			return errors.Join(err, closeServers(sctx, srvs))
		}
	}
	g := srvs[0].Gateway // serves the probes, its readiness covering every server's
	stopCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 30*time.Second)
	}
	// The probes: unauthenticated, outside the gateway's Host and Origin
	// checks (a kubelet probes by pod address), and bodies that say only
	// up or down.
	mux.Handle("/healthz", g.HealthHandler())
	mux.Handle("/readyz", g.HealthHandler())
	obs.start(serverSet(srvs))

	if !awaitKeys(ctx, keys, keysWait, log) {
		sctx, cancel := stopCtx()
		defer cancel()
		return closeServers(sctx, srvs) // stopped before it listened
	}
	sock, err := openSocket(ctx, cfg, m.Getenv, log)
	if err != nil {
		sctx, cancel := stopCtx()
		defer cancel()
		return errors.Join(err, closeServers(sctx, srvs))
	}
	defer sock.close()
	ln, err := listenTCP(cfg)
	if err != nil {
		sctx, cancel := stopCtx()
		defer cancel()
		return errors.Join(fmt.Errorf("mcpgate: listen: %w", err), closeServers(sctx, srvs))
	}
	lopts := cfg.ListenerOptions()
	lopts.OnRefused = obs.metrics.ConnectionRefused
	if ln != nil {
		ln = gateway.LimitListener(ln, lopts)
	}
	scheme := "http"
	var notAfter func() time.Time
	srv := &http.Server{
		Handler:           obs.handler(mux),
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       cfg.Limits.IdleTimeout,
		// Every request starts with a fresh write deadline; the gateway
		// moves it forward as a long answer or a stream writes.
		WriteTimeout: cfg.Limits.WriteTimeout,
		// Lets the gateway tell the listener which connections have
		// passed the token check.
		ConnContext:    gateway.ConnContext,
		MaxHeaderBytes: cfg.MaxHeaderBytes(),
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if cfg.TLSEnabled() && ln != nil {
		r, err := certs.NewReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, log)
		if err != nil {
			ln.Close()
			sctx, cancel := stopCtx()
			defer cancel()
			return errors.Join(err, closeServers(sctx, srvs))
		}
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go r.Watch(watchCtx)
		obs.metrics.CertificateExpiry(r.NotAfter)
		notAfter = r.NotAfter
		srv.TLSConfig = certs.ServerTLSConfig(r)
		if err := clientCertificates(cfg, srv.TLSConfig); err != nil {
			ln.Close()
			sctx, cancel := stopCtx()
			defer cancel()
			return errors.Join(err, closeServers(sctx, srvs))
		}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}

	if len(cfg.Servers) > 0 {
		log.Info("mcpgate: the connect page and the operator view are not served beside a servers list")
	} else if err := routeMCP(mux, g, cfg, pages{authn: pageAuthn, events: events, audit: obs.audit, notAfter: notAfter, addr: listenerAddr(ln), scheme: scheme, log: log}); err != nil {
		closeListener(ln)
		sctx, cancel := stopCtx()
		defer cancel()
		return errors.Join(err, closeServers(sctx, srvs))
	}
	served := make(chan error, 2)
	if ln != nil {
		go func() { served <- srv.Serve(ln) }()
		for _, s := range srvs {
			log.Info("mcpgate: serving", "url", scheme+"://"+ln.Addr().String()+s.Path, "server", s.Name,
				"resource", s.Config.Resource(), "auth", cfg.Authenticated(), "read_only", s.Config.Server.ReadOnly)
		}
	}
	sock.serve(ctx, srv, lopts, serverSet(srvs), served)

	select {
	case err = <-served:
	case <-sock.idle():
		// Nothing in flight, nobody connected: nothing to drain.
	case <-ctx.Done():
		drain(srvs, cfg.Limits.DrainTimeout, m.Hurry, log)
	}
	// Workers first: that ends their streams, so Shutdown need not wait on
	// SSE responses that would never finish.
	sctx, cancel := stopCtx()
	defer cancel()
	cerr := closeServers(sctx, srvs)
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	sock.shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}

// keysWait bounds how long serve waits for the issuer's keys before it
// listens (awaitKeys).
var keysWait = 10 * time.Second

// closedChan is a channel that is already closed.
var closedChan = func() <-chan struct{} { c := make(chan struct{}); close(c); return c }()

// awaitKeys holds the listener back until the issuer's signing keys are
// loaded (keys closed), at most wait. A gateway without them answers every
// token with 503, and a load balancer that has not seen its /readyz fail
// yet (a replica restarted within the health check's detection time still
// counts as up) would route clients to it; a port that refuses connections
// is what a load balancer retries elsewhere safely, as nothing reached a
// replica. After wait (an issuer down for longer) it listens anyway, with
// /readyz at 503, so that /healthz and the probes work. It reports false
// when ctx ended first.
func awaitKeys(ctx context.Context, keys <-chan struct{}, wait time.Duration, log *slog.Logger) bool {
	select {
	case <-keys:
		return true
	default:
	}
	log.Info("mcpgate: waiting for the issuer's signing keys before listening", "at_most", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-keys:
		return true
	case <-t.C:
		log.Warn("mcpgate: listening before the issuer's signing keys are loaded; /readyz answers 503 and tokens are refused with 503 until they are")
		return true
	case <-ctx.Done():
		return false
	}
}

// drain lets the calls in flight finish, up to timeout or until hurry is
// closed (a second SIGTERM), while the listener stays open: /readyz says
// 503 and new sessions get 503 with Retry-After (gateway.Drain).
func drain(srvs []servedServer, timeout time.Duration, hurry <-chan struct{}, log *slog.Logger) {
	dctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-hurry:
			log.Warn("mcpgate: asked again to stop: stopping the workers now")
			cancel()
		case <-dctx.Done():
		}
	}()
	drainServers(dctx, srvs)
}

// newAuthenticator maps the configuration to the token checker.
func newAuthenticator(ctx context.Context, cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (*auth.Authenticator, error) {
	opts, err := cfg.AuthOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = log
	opts.OnRefused = m.AuthRefused
	if len(cfg.Servers) > 0 {
		// The combined /mcp: a client logging in for it asks for every
		// server's scopes.
		opts.ExtraScopes = append(opts.ExtraScopes, serversScopes(cfg)...)
	}
	c, err := issuerClient(cfg)
	if err != nil {
		return nil, err
	}
	opts.HTTPClient = c
	opts.HTTPClient.Transport = m.IssuerTransport(opts.HTTPClient.Transport)
	return auth.New(ctx, opts)
}
