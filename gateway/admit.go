package gateway

import (
	"context"

	"github.com/mcpgate/mcpgate/auth"
)

// AdmitConn tells the connection ctx was made for (ConnContext), if it
// came through a LimitListener, that its principal p has passed every
// check, as a request past the gateway's checks does: for a connection
// whose peer is known before its first request (a Unix socket's, by its
// credentials). It reports false when p holds every connection its share
// allows: refuse the connection.
func AdmitConn(ctx context.Context, p *auth.Principal) bool {
	c, ok := ctx.Value(connKey{}).(*limitConn)
	if !ok {
		return true
	}
	var who *auth.PrincipalKey
	if p != nil {
		k := p.Key()
		who = &k
	}
	return c.authenticate(who)
}
