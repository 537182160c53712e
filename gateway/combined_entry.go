package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgate/mcpgate/auth"
)

// outerKey carries, in a request a Combined endpoint forwards, the rewrite
// of its results (call.outer).
type outerKey struct{}

// serveAuthenticated serves r as a request of p that an outer handler (a
// Combined endpoint) has already checked: its Host and Origin, and its
// token, for the outer endpoint's audience. The gateway's own guard and
// Options.Middleware are skipped; everything after them (the transport,
// read-only, policies, step-up, limits, audit) runs as for a request to
// this gateway's own path. p is the principal as this gateway's server
// sees it (auth.Rights.For: its read-only flag and its tools), rights
// name this server's scopes in a step-up challenge, and outer, when set,
// rewrites each result last. p is nil in the localhost mode.
func (g *Gateway) serveAuthenticated(w http.ResponseWriter, r *http.Request, p *auth.Principal, rights auth.Rights, outer func(method string, result json.RawMessage) json.RawMessage) {
	ctx := r.Context()
	if p != nil {
		ctx = auth.WithRights(auth.WithPrincipal(ctx, p), rights)
	}
	if outer != nil {
		ctx = context.WithValue(ctx, outerKey{}, outer)
	}
	g.serveMCP(w, r.WithContext(ctx))
}
