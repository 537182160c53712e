package gateway

import (
	"net"
	"sync"
	"time"
)

// overloadResponse is written to a connection accepted beyond the limit, so
// that a client learns why rather than waiting in the kernel's queue.
const overloadResponse = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 48\r\n\r\n" +
	"gateway: too many connections; try again later\r\n"

// LimitListener returns a listener that keeps at most n connections open at
// once (DESIGN §10: limits on everything a peer controls). A connection
// beyond the limit is answered 503 with Retry-After and closed. n <= 0
// means no limit. Wrap it before TLS: the refusal is then plain HTTP on a
// plain socket, which keeps an attacker from buying a handshake with it.
func LimitListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n)}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			go refuse(c)
		}
	}
}

// refuse answers an over-limit connection and closes it, bounded in time.
func refuse(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(overloadResponse))
	_ = c.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot once.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
