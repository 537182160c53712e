package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/bridge"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/local"
)

// stdioConns are the socket's stdio connections (the shim's), each
// relayed to the gateway in-process; shutdown ends them.
type stdioConns struct {
	once   sync.Once
	mu     sync.Mutex
	closed bool // by shutdown: a connection sorted after it is closed
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (s *stdioConns) init() {
	s.once.Do(func() { s.ctx, s.cancel = context.WithCancel(context.Background()) })
}

// stdioOptions is what a stdio connection is served with: the gateway's
// handler behind the socket's Guard, and the socket's connection
// context, as for its HTTP connections.
type stdioOptions struct {
	access  *local.Access
	handler http.Handler // base.Handler: Guard is added
	log     *slog.Logger
	// maxBody bounds a message from the client, as limits.max_body_bytes
	// bounds a request's body; 0: the bridge's default.
	maxBody int
}

// stdioInFlight bounds the requests one stdio connection has in flight
// in the daemon: with maxBody, what one connection can make it hold.
const stdioInFlight = 16

// serve returns the function that serves one stdio connection.
func (s *stdioConns) serve(o stdioOptions) func(*local.StdioConn) {
	s.init()
	guarded := o.access.Guard(o.handler)
	return func(c *local.StdioConn) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		serveStdio(s.ctx, c, guarded, o)
	}
}

// serveStdio serves a stdio connection until its client's input ends or
// ctx is cancelled, then closes it. Its peer is decided once, as for an
// HTTP connection, and counted against its principal's share of
// connections; a peer refused is told why, on the connection. The
// client's messages are relayed as mcpgate bridge relays them over HTTP,
// but in this process: each is a request to the guarded handler, called
// directly, carrying the connection's values.
func serveStdio(ctx context.Context, c *local.StdioConn, guarded http.Handler, o stdioOptions) {
	defer c.Close()
	cctx, p, err := o.access.StdioPeer(ctx, c.Conn, gateway.ConnContext)
	if err != nil {
		o.log.Warn("local: refused a peer on the socket", "err", err)
		c.Refuse(err.Error())
		return
	}
	if !gateway.AdmitConn(cctx, p) {
		o.log.Warn("gateway: refused a connection over its principal's share", "remote", c.RemoteAddr().String())
		c.Refuse("local: this account holds every connection its share allows (limits.max_connections_per_principal); close another client")
		return
	}
	if err := c.Accept(); err != nil {
		return
	}
	// Run reads until the input ends; the daemon's shutdown ends it too.
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
	defer stop()
	tr := &bridge.HandlerTransport{Handler: guarded, Conn: cctx, RemoteAddr: c.RemoteAddr().String(), Log: o.log}
	err = bridge.Run(cctx, c.In, c.Conn, bridge.Options{URL: "http://localhost" + c.Target,
		HTTPClient: &http.Client{Transport: tr}, Log: o.log, MaxInputBytes: o.maxBody, MaxInFlight: stdioInFlight})
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		o.log.Info("local: a stdio connection ended", "err", err)
	}
}

// shutdown ends every stdio connection's input, so that each finishes the
// requests it has in flight and ends its session, and waits for them
// until ctx ends.
func (s *stdioConns) shutdown(ctx context.Context) {
	s.init()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// countConns counts the connections ln accepts that are open, HTTP and
// stdio alike, in n: the daemon is idle only with none.
func countConns(ln net.Listener, n *atomic.Int64) net.Listener {
	return &countingListener{Listener: ln, n: n}
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.n.Add(1)
	return &countedConn{Conn: c, n: l.n}, nil
}

type countedConn struct {
	net.Conn
	n    *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.n.Add(-1) })
	return c.Conn.Close()
}

// NetConn is the connection underneath, for ConnContext.
func (c *countedConn) NetConn() net.Conn { return c.Conn }
