// Package auth turns a bearer token into a Principal or into a precise
// RFC 6750 challenge. It knows nothing of MCP sessions.
package auth

import (
	"context"
	"time"
)

// Principal is the verified caller of one request.
type Principal struct {
	Issuer   string    // the token's exact iss
	Subject  string    // the token's sub
	UserID   string    // from the configured user claim; the worker runs as this user
	ClientID string    // azp or client_id, when present
	Scopes   []string  // granted scopes
	Expiry   time.Time // the token's exp
	ReadOnly bool      // the token lacks the write scope
	KeyID    string    // kid of the verifying key, for logs
	TokenTag string    // a short hash of the token, for logs; never the token
}

// Owner names who owns a session: the same issuer and subject.
func (p *Principal) Owner() string { return p.Issuer + "\x00" + p.Subject }

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the auth middleware verified, or nil
// when the request was not authenticated (the localhost mode).
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
