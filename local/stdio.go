package local

import (
	"context"
	"errors"
	"net"

	"github.com/mcpgate/mcpgate/auth"
)

// StdioPeer decides who a stdio connection's peer is, once, as for an
// HTTP connection: it returns the connection's context (ConnContext with
// next, the values each of its requests must carry) and the peer's
// principal, or the reason the socket does not serve it.
func (a *Access) StdioPeer(ctx context.Context, c net.Conn, next func(context.Context, net.Conn) context.Context) (context.Context, *auth.Principal, error) {
	cctx := a.ConnContext(next)(ctx, c)
	d, _ := cctx.Value(peerKey{}).(*peerDecision)
	switch {
	case d == nil:
		return cctx, nil, errors.New("local: the connection's peer is unknown")
	case d.principal == nil:
		return cctx, nil, d.err
	}
	return cctx, d.principal, nil
}
