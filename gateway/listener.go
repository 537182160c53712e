package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/auth"
)

// overloadResponse is written to a plain-HTTP connection accepted beyond a
// limit, so that a client learns why rather than waiting in the kernel's
// queue.
const overloadResponse = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 48\r\n\r\n" +
	"gateway: too many connections; try again later\r\n"

// ListenerOptions configure LimitListener. The zero value limits nothing.
type ListenerOptions struct {
	// MaxConnections bounds the connections open at once; 0 means no limit.
	MaxConnections int
	// MaxUnauthenticatedPerAddress bounds the connections from one client
	// address (an IPv4 address, or an IPv6 /64) that have not yet carried
	// a request past the gateway's checks (with authentication: a valid
	// token); 0 means no limit. Without it, a peer without a token could
	// fill MaxConnections.
	MaxUnauthenticatedPerAddress int
	// MaxConnectionsPerPrincipal bounds the connections that carried a
	// request past the gateway's checks, counted against the principal
	// (auth.PrincipalKey: issuer and subject) of the first such request;
	// 0 means no limit. Keep it below MaxConnections, so that one token,
	// read-only even, cannot hold every slot: the connection of a request
	// beyond it is answered 429 and closed. Connections of requests
	// without a principal (the localhost mode) are not counted.
	MaxConnectionsPerPrincipal int
	// UnauthenticatedIdleTimeout bounds every read deadline of a connection
	// that has not yet carried such a request (its TLS handshake, its
	// first request's head, its wait for the next one); 0 means no extra
	// bound. Once a request passes, the deadlines net/http sets apply.
	UnauthenticatedIdleTimeout time.Duration
	// TLS says the listener will be wrapped in TLS. A connection beyond a
	// limit is then closed cleanly (FIN, no bytes) before any handshake: a
	// plain-text 503 would be unreadable to a TLS client, and a handshake
	// spent on a refusal would be an attacker's bargain. Without TLS it is
	// answered 503 with Retry-After.
	TLS bool
	// OnRefused, when set, is told of each connection refused, with the
	// limit: RefusedConnections or RefusedUnauthenticated (a metric). It
	// runs on the accepting goroutine and must return quickly.
	OnRefused func(limit string)
}

// The limits a refused connection names to ListenerOptions.OnRefused.
const (
	RefusedConnections     = "maxConnections"               // limits.max_connections
	RefusedUnauthenticated = "maxUnauthenticatedPerAddress" // limits.max_unauthenticated_per_address
	RefusedPerPrincipal    = "maxConnectionsPerPrincipal"   // limits.max_connections_per_principal
)

// LimitListener returns a listener that enforces lo (docs/design.md, Limits: limits on
// everything a peer controls). Wrap it before TLS, and set
// http.Server.ConnContext to ConnContext so that the gateway can tell it
// which connections have passed its checks.
func LimitListener(l net.Listener, lo ListenerOptions) net.Listener {
	ll := &limitListener{Listener: l, opts: lo, unauth: make(map[string]int), authed: make(map[auth.PrincipalKey]int)}
	if lo.MaxConnections > 0 {
		ll.slots = make(chan struct{}, lo.MaxConnections)
	}
	return ll
}

type limitListener struct {
	net.Listener
	opts  ListenerOptions
	slots chan struct{} // nil: no limit

	mu     sync.Mutex
	unauth map[string]int            // unauthenticated connections per client address
	authed map[auth.PrincipalKey]int // authenticated connections per principal
}

// Accept returns the next connection within the limits; those beyond are
// refused on a goroutine of their own.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
			default:
				l.refused(RefusedConnections)
				go l.refuse(c)
				continue
			}
		}
		addr := clientAddress(c.RemoteAddr())
		l.mu.Lock()
		over := l.opts.MaxUnauthenticatedPerAddress > 0 && l.unauth[addr] >= l.opts.MaxUnauthenticatedPerAddress
		if !over {
			l.unauth[addr]++
		}
		l.mu.Unlock()
		if over {
			l.release()
			l.refused(RefusedUnauthenticated)
			go l.refuse(c)
			continue
		}
		return &limitConn{Conn: c, l: l, addr: addr}, nil
	}
}

func (l *limitListener) refused(limit string) {
	if l.opts.OnRefused != nil {
		l.opts.OnRefused(limit)
	}
}

func (l *limitListener) release() {
	if l.slots != nil {
		<-l.slots
	}
}

// authenticated counts one connection of addr as no longer unauthenticated.
func (l *limitListener) authenticated(addr string) {
	l.mu.Lock()
	l.leaveLocked(addr)
	l.mu.Unlock()
}

func (l *limitListener) leaveLocked(addr string) {
	if l.unauth[addr]--; l.unauth[addr] <= 0 {
		delete(l.unauth, addr)
	}
}

// admit moves one connection of addr from its address's unauthenticated
// count to who's, and reports false, counting nothing, when who holds
// MaxConnectionsPerPrincipal already.
func (l *limitListener) admit(addr string, who auth.PrincipalKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if limit := l.opts.MaxConnectionsPerPrincipal; limit > 0 && l.authed[who] >= limit {
		return false
	}
	l.authed[who]++
	l.leaveLocked(addr)
	return true
}

// leave counts one of who's connections gone.
func (l *limitListener) leave(who auth.PrincipalKey) {
	l.mu.Lock()
	if l.authed[who]--; l.authed[who] <= 0 {
		delete(l.authed, who)
	}
	l.mu.Unlock()
}

// refuse answers an over-limit connection (plain HTTP) or closes it
// cleanly (TLS), bounded in time. Cleanly means a FIN after reading what
// the client sent, so that it sees the connection end rather than a reset.
func (l *limitListener) refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if !l.opts.TLS {
		_, _ = io.WriteString(c, overloadResponse)
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// clientAddress is the key of the per-address limit: the IP, or for IPv6
// its /64, which one host commonly holds whole.
func clientAddress(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	return auth.AddressKey(ta.IP)
}

type limitConn struct {
	net.Conn
	l    *limitListener
	addr string

	mu       sync.Mutex
	authed   bool
	closed   bool
	who      *auth.PrincipalKey // the principal it counts against; nil: none
	deadline time.Time          // the read deadline asked for, before the clamp
}

// SetReadDeadline clamps t to UnauthenticatedIdleTimeout from now while
// the connection is unauthenticated.
func (c *limitConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetReadDeadline(c.clampLocked(t))
}

// SetDeadline is SetWriteDeadline and SetReadDeadline.
func (c *limitConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *limitConn) clampLocked(t time.Time) time.Time {
	d := c.l.opts.UnauthenticatedIdleTimeout
	if c.authed || d <= 0 {
		return t
	}
	if limit := time.Now().Add(d); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// authenticate marks the connection as having carried a request past the
// gateway's checks, of principal who (nil: none, the localhost mode): it
// leaves its address's unauthenticated count for who's, and the read
// deadline net/http asked for applies unclamped (a read already waiting,
// such as net/http's watch for the client going away during a long
// answer, must not time out on the clamp). It reports false when who holds
// every connection its share allows: the connection stays unauthenticated,
// and the caller refuses the request and closes it. A connection counts
// against the first principal whose request passed on it, for its life.
func (c *limitConn) authenticate(who *auth.PrincipalKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.authed || c.closed {
		return true
	}
	if who == nil {
		c.l.authenticated(c.addr)
	} else {
		if !c.l.admit(c.addr, *who) {
			c.l.refused(RefusedPerPrincipal)
			return false
		}
		c.who = who
	}
	c.authed = true
	_ = c.Conn.SetReadDeadline(c.deadline)
	return true
}

// Close closes the connection and frees its slots once.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	authed, who := c.authed, c.who
	c.mu.Unlock()
	if first {
		switch {
		case !authed:
			c.l.authenticated(c.addr) // it leaves the count all the same
		case who != nil:
			c.l.leave(*who)
		}
		c.l.release()
	}
	return err
}

type connKey struct{}

// ConnContext is for http.Server.ConnContext: it lets the gateway find the
// LimitListener connection a request arrived on (through TLS, too).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	for {
		switch v := c.(type) {
		case *limitConn:
			return context.WithValue(ctx, connKey{}, v)
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return ctx
		}
	}
}

// markAuthenticated tells the request's connection, if it came through a
// LimitListener, that a request on it, of principal p, has passed every
// check. It reports
// false when the request's principal holds every connection its share
// allows (ListenerOptions.MaxConnectionsPerPrincipal): refuse the request.
func markAuthenticated(r *http.Request, p *auth.Principal) bool {
	return AdmitConn(r.Context(), p)
}
