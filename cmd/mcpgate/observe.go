package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/audit"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/metrics"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tracing"
)

// observability is the audit trail and the metrics of one serve: built
// before the gateway (a sink or a listener that cannot be opened stops the
// start), served alongside it, closed after it.
type observability struct {
	log     *slog.Logger
	audit   *audit.Log
	metrics *metrics.Metrics
	tracing *tracing.Tracing // nil without tracing.otlp_endpoint
	ln      net.Listener     // the metrics listener; nil when off
	srv     *http.Server
	stop    context.CancelFunc // ends the SIGHUP watch
	done    chan struct{}
}

// newObservability opens audit.path, the metrics listener and the span
// exporter.
func newObservability(ctx context.Context, cfg *config.Config, log *slog.Logger) (*observability, error) {
	mopts := metrics.Options{Sandbox: sandboxProfile(cfg)}
	for _, sc := range cfg.ServerConfigs() {
		names := sc.Worker.SafeTools
		if len(sc.Worker.Command) == 0 && sc.RemoteURL() == "" {
			var err error
			if names, err = tools.ToolNames(sc.Worker.Toolsets); err != nil {
				return nil, fmt.Errorf("mcpgate: worker.toolsets: %w", err)
			}
		}
		mopts.Tools = append(mopts.Tools, names...)
		if sc.Entry() != nil {
			mopts.Servers = append(mopts.Servers, sc.ServerName())
		}
	}
	o := &observability{log: log, metrics: metrics.New(mopts), done: make(chan struct{})}
	a := cfg.Audit
	opts := audit.Options{
		Path: a.Path, Arguments: a.Arguments, MaxArgumentBytes: int(a.MaxArgumentBytes),
		Redact: a.RedactArguments, ErrorLog: log, OnWriteError: o.metrics.AuditWriteFailed,
	}
	if a.Path == "" || a.Log {
		opts.Logger = log
	}
	var err error
	if o.audit, err = audit.Open(opts); err != nil {
		return nil, fmt.Errorf("mcpgate: audit.path: %w", err)
	}
	if cfg.Metrics.Listen != config.MetricsOff {
		if o.ln, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			_ = o.audit.Close()
			return nil, fmt.Errorf("mcpgate: metrics.listen: %w", err)
		}
	}
	if cfg.Tracing.OTLPEndpoint != "" {
		if o.tracing, err = tracing.New(ctx, cfg.Tracing.OTLPEndpoint, Version); err != nil {
			_ = o.close(ctx)
			return nil, err
		}
	}
	return o, nil
}

// handler wraps the main listener's handler: tracing first, so its span
// covers the rest, then the HTTP metrics. With metrics.listen off nothing
// can read them, so no request pays for counting (about 3 % of the
// gateway's CPU per call, measured).
func (o *observability) handler(h http.Handler) http.Handler {
	if o.ln != nil {
		h = o.metrics.Middleware(h)
	}
	if o.tracing != nil {
		h = o.tracing.Middleware(h)
	}
	return h
}

// gatewayOptions adds the observers and the tracer to opts.
func (o *observability) gatewayOptions(opts *gateway.Options) {
	opts.Observers = []gateway.Observer{o.audit}
	if o.ln != nil {
		opts.Observers = append(opts.Observers, o.metrics)
	}
	if o.tracing != nil {
		opts.Trace = o.tracing.Call
	}
}

// start serves /metrics for g and reopens the audit file on SIGHUP, until
// close.
func (o *observability) start(g interface {
	Sessions() int
	Workers(kind string) int
}) {
	o.metrics.Live(g)
	ctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer close(o.done)
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := o.audit.Reopen(); err != nil {
					o.log.Error("mcpgate: reopening audit.path on SIGHUP; still writing the old file", "err", err)
				}
			}
		}
	}()
	if o.ln == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.metrics.Handler())
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := o.srv.Serve(o.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.log.Error("mcpgate: the metrics listener stopped", "err", err)
		}
	}()
	o.log.Info("mcpgate: serving metrics", "url", "http://"+o.ln.Addr().String()+"/metrics")
}

// close stops the metrics listener and closes the audit file: after the
// gateway, so that the last events are written.
func (o *observability) close(ctx context.Context) error {
	var err error
	if o.srv != nil {
		err = o.srv.Shutdown(ctx)
	} else if o.ln != nil {
		err = o.ln.Close()
	}
	if o.stop != nil {
		o.stop()
		<-o.done
	}
	if o.tracing != nil {
		err = errors.Join(err, o.tracing.Shutdown(ctx))
	}
	return errors.Join(err, o.audit.Close())
}
