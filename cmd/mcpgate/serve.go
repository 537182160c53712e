package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/gateway"
)

func init() { commands["serve"] = serve }

// serveConfig is what `mcpgate serve` needs; serveFlags fills it from the
// command line for now (config/ will take over, with a file and env).
type serveConfig struct {
	Listen  string
	Gateway gateway.Options
}

// serveFlags parses serve's flags into a serveConfig.
func serveFlags(m *Main, args []string) (serveConfig, error) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	listen := fs.String("listen", "127.0.0.1:8000", "address to listen on (loopback only for now)")
	readOnly := fs.Bool("read-only", false, "make every session read-only")
	workerCommand := fs.String("worker-command", "", "stdio MCP server to run per session, split on spaces (default: the built-in worker)")
	title := fs.String("title", "", "serverInfo.title the workers announce")
	if err := fs.Parse(args); err != nil {
		return serveConfig{}, err
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("mcpgate: serve takes no arguments, got %q", fs.Args())
	}
	return serveConfig{
		Listen: *listen,
		Gateway: gateway.Options{
			WorkerCommand: strings.Fields(*workerCommand),
			ReadOnly:      *readOnly,
			ServerVersion: Version,
			ServerTitle:   *title,
		},
	}, nil
}

func serve(ctx context.Context, m *Main, args []string) error {
	cfg, err := serveFlags(m, args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return nil
	case err != nil:
		fmt.Fprintln(m.Stderr, err)
		return errUsage
	}
	return runGateway(ctx, m, cfg)
}

// runGateway serves /mcp on cfg.Listen until ctx is cancelled, then stops
// every worker and the server.
func runGateway(ctx context.Context, m *Main, cfg serveConfig) error {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("mcpgate: --listen %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// Until authentication and TLS are in place, the gateway serves
		// only this machine (MCP §Security Warning: bind to localhost).
		return fmt.Errorf("mcpgate: --listen %q is not a loopback address; use 127.0.0.1 or ::1", cfg.Listen)
	}
	cfg.Gateway.LoopbackHostCheck = true
	if cfg.Gateway.Logger == nil {
		cfg.Gateway.Logger = slog.New(slog.NewTextHandler(m.Stderr, nil))
	}
	log := cfg.Gateway.Logger

	g, err := gateway.New(cfg.Gateway)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = g.Close(context.Background())
		return fmt.Errorf("mcpgate: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("mcpgate: serving", "url", "http://"+ln.Addr().String()+"/mcp")

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	// Workers first: that ends their streams, so Shutdown need not wait on
	// SSE responses that would never finish.
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cerr := g.Close(stopCtx)
	if serr := srv.Shutdown(stopCtx); serr != nil {
		srv.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr)
}
