package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/local"
)

// listenTCP listens on server.listen's TCP address; nil when it names a
// socket only.
func listenTCP(cfg *config.Config) (net.Listener, error) {
	addr := cfg.TCPListen()
	if addr == "" {
		return nil, nil
	}
	return net.Listen("tcp", addr)
}

// listenerAddr is ln's address, nil for none.
func listenerAddr(ln net.Listener) net.Addr {
	if ln == nil {
		return nil
	}
	return ln.Addr()
}

// closeListener closes ln, if any.
func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// workerCounter counts the workers of every server (serverSet): the
// daemon is idle only with none.
type workerCounter interface{ Workers(kind string) int }

// localSocket is the gateway's Unix socket: its listener, who may use it,
// its server, and in daemon mode the watch that ends an idle daemon. A
// nil *localSocket (no socket configured) does nothing.
type localSocket struct {
	ln     *local.Listener
	access *local.Access
	log    *slog.Logger
	daemon *daemonMode
	// maxBody is limits.max_body_bytes: the bound on a stdio
	// connection's message as on an HTTP body.
	maxBody int

	srv      *http.Server
	conns    atomic.Int64 // connections open on the socket, of both kinds
	stdio    stdioConns   // the stdio connections being served
	idleOnce sync.Once
	idleCh   chan struct{} // closed when the daemon has been idle for server.idle_exit
	leaving  atomic.Bool   // the idle exit has closed the listener
	stop     chan struct{} // closed by shutdown: ends the watch
}

// openSocket listens on server.listen's socket, if it names one: the
// path is checked and locked (local.Listen), and the access rules
// resolved against the system's accounts.
func openSocket(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger) (*localSocket, error) {
	entry := cfg.SocketListen()
	if entry == "" {
		return nil, nil
	}
	path, err := config.SocketPath(entry, getenv)
	if err != nil {
		return nil, err
	}
	rules, err := cfg.UnixRules()
	if err != nil {
		return nil, err
	}
	access, err := local.NewAccess(local.AccessOptions{ReadOnly: cfg.Server.ReadOnly, OwnerUser: cfg.Server.LocalUser, Rules: rules, Log: log})
	if err != nil {
		return nil, err
	}
	ln, err := local.Listen(path, local.Options{System: cfg.SystemSocket()})
	if err != nil {
		return nil, err
	}
	return &localSocket{ln: ln, access: access, log: log, daemon: daemonFrom(ctx), maxBody: int(cfg.Limits.MaxBodyBytes),
		idleCh: make(chan struct{}), stop: make(chan struct{})}, nil
}

// serve serves the socket with base's handler and limits, reporting
// Serve's end on served; in daemon mode it tells the process that started
// it that the daemon is ready, and watches for idleness.
func (s *localSocket) serve(ctx context.Context, base *http.Server, lopts gateway.ListenerOptions, g workerCounter, served chan<- error) {
	if s == nil {
		return
	}
	s.srv = &http.Server{
		Handler:           s.access.Guard(base.Handler),
		ReadHeaderTimeout: base.ReadHeaderTimeout,
		IdleTimeout:       base.IdleTimeout,
		WriteTimeout:      base.WriteTimeout,
		MaxHeaderBytes:    base.MaxHeaderBytes,
		ErrorLog:          base.ErrorLog,
		ConnContext:       s.access.ConnContext(gateway.ConnContext),
	}
	ln := local.SplitListener(gateway.LimitListener(countConns(s.ln, &s.conns), lopts), base.ReadHeaderTimeout,
		s.stdio.serve(stdioOptions{access: s.access, handler: base.Handler, log: s.log, maxBody: s.maxBody}))
	go func() {
		err := s.srv.Serve(ln)
		if !s.leaving.Load() { // an idle exit closed the listener on purpose
			served <- err
		}
	}()
	s.log.Info("mcpgate: serving", "socket", s.ln.Path(), "issuer", s.access.Issuer(), "system", len(s.access.Rules()) > 0, "pid", os.Getpid())
	if s.daemon == nil {
		return
	}
	s.daemon.ready()
	if d := s.daemon.idleExit; d > 0 {
		go s.watchIdle(d, func() bool {
			return s.conns.Load() == 0 && g.Workers(gateway.WorkerSession)+g.Workers(gateway.WorkerUser) == 0
		})
	}
}

// watchIdle closes idleCh once idle has held for d without a break. It
// first closes the listener, which removes the socket and releases its
// lock, so that a client arriving now starts a new daemon rather than
// reaching one on its way out; a connection accepted just before is
// served to its end (and the workers it starts to theirs) before idleCh
// closes.
func (s *localSocket) watchIdle(d time.Duration, idle func() bool) {
	tick := min(max(d/10, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	since := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if !idle() {
				since = now
				continue
			}
			if now.Sub(since) < d {
				continue
			}
			if !s.leaving.Load() {
				s.log.Info("mcpgate: no client and no worker for server.idle_exit; exiting", "idle_exit", d)
				s.leaving.Store(true)
				_ = s.ln.Close()
				continue // once more: a connection may have come in meanwhile
			}
			s.idleOnce.Do(func() { close(s.idleCh) })
			return
		}
	}
}

// idle is closed when the daemon has been idle for server.idle_exit; nil
// (never) without a socket or outside daemon mode.
func (s *localSocket) idle() <-chan struct{} {
	if s == nil || s.daemon == nil {
		return nil
	}
	return s.idleCh
}

// shutdown stops serving the socket.
func (s *localSocket) shutdown(ctx context.Context) {
	if s == nil || s.srv == nil {
		return
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	s.stdio.shutdown(ctx)
}

// close ends the watch, removes the socket and releases its lock.
func (s *localSocket) close() {
	if s == nil {
		return
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrClosed) {
		s.log.Warn("mcpgate: closing the socket", "err", err)
	}
}
