package main

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

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

// serve returns the function that serves one stdio connection.
func (s *stdioConns) serve(a *local.Access, o local.StdioOptions) func(*local.StdioConn) {
	s.init()
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
		a.ServeStdio(s.ctx, c, o)
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
