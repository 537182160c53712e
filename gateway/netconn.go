package gateway

import "net"

// NetConn returns the connection LimitListener accepted, so that the
// server's ConnContext can reach what it wraps (a Unix socket's peer
// credentials, say).
func (c *limitConn) NetConn() net.Conn { return c.Conn }
