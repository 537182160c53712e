// Package auth turns a bearer token into a Principal or into a precise
// RFC 6750 challenge. It knows nothing of MCP sessions.
package auth

import (
	"context"
	"encoding/json"
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
	// Recheck is when the answer that let the token in stops being
	// reused, for an introspected token: the endpoint is asked again then
	// (Introspection.MaxCacheTTL after it answered, never past Expiry), and
	// what the token holds open (an event stream) must end by then too, or
	// a token revoked at the issuer would keep it. Zero for a JWT, which is
	// never asked about again.
	Recheck  time.Time
	ReadOnly bool // the token lacks the write scope
	// Tools are the tools the policy rules grant the token, sorted; empty
	// when none does, nil when no policy is configured (then every tool,
	// subject to ReadOnly).
	Tools    []string
	KeyID    string // kid of the verifying key, for logs
	TokenTag string // a short hash of the token, for logs; never the token
	// KeyThumbprint is the RFC 7638 thumbprint (base64url SHA-256) of the
	// key the request proved it holds with a DPoP proof, which the token's
	// cnf.jkt names (RFC 9449); empty for a Bearer token.
	KeyThumbprint string
	// CertThumbprint is the SHA-256 thumbprint (base64url) of the client
	// certificate a certificate-bound token names in cnf.x5t#S256 (RFC
	// 8705), which the request came with; empty for an unbound token.
	CertThumbprint string

	// claims are the token's verified claims by exact name, read only by
	// Rights.For; nil for a principal made elsewhere.
	claims map[string]json.RawMessage
}

// Owner is who owns a session: every part of a principal that decides
// what its requests can reach. The issuer and subject name the account;
// the user id is who the worker runs as (the configured user claim, which
// need not be sub), so it must match too, or a token with the same sub and
// another preferred_username would act as a user the session was not
// started for; and the client id keeps one user's clients apart, so that a
// session one application opened is not another application's to use or
// end. It is comparable with ==; the zero Owner is the localhost mode's
// (no principal). KeyThumbprint and CertThumbprint bind a session opened
// with a sender-constrained token to the key or client certificate it
// proved: a token of the same user and client bound to another key or
// certificate (or to none) does not reach it.
type Owner struct {
	Issuer, Subject, UserID, ClientID string
	KeyThumbprint, CertThumbprint     string
}

// Owner returns the owner of the sessions p opens.
func (p *Principal) Owner() Owner {
	return Owner{Issuer: p.Issuer, Subject: p.Subject, UserID: p.UserID, ClientID: p.ClientID,
		KeyThumbprint: p.KeyThumbprint, CertThumbprint: p.CertThumbprint}
}

// Differs names the first part of o that differs from other ("issuer",
// "subject", "user", "client", "key", "certificate"), or "" when they are equal: for a log line
// that says why a request was refused a session.
func (o Owner) Differs(other Owner) string {
	switch {
	case o.Issuer != other.Issuer:
		return "issuer"
	case o.Subject != other.Subject:
		return "subject"
	case o.UserID != other.UserID:
		return "user"
	case o.ClientID != other.ClientID:
		return "client"
	case o.KeyThumbprint != other.KeyThumbprint:
		return "key"
	case o.CertThumbprint != other.CertThumbprint:
		return "certificate"
	}
	return ""
}

// PrincipalKey names an account: the issuer and the subject of its tokens
// (RFC 7519 §4.1.2: a subject is unique within its issuer). What one
// account may hold (connections, sessions, workers, buffered bytes) is
// counted by it, never by the user id alone, which the configured user
// claim yields and two accounts may share: they would exhaust one quota
// for each other. It is comparable with ==; the zero key is the localhost
// mode's (no principal).
type PrincipalKey struct {
	Issuer, Subject string
}

// Key returns the account p belongs to.
func (p *Principal) Key() PrincipalKey {
	return PrincipalKey{Issuer: p.Issuer, Subject: p.Subject}
}

// Key returns the account that owns what o owns.
func (o Owner) Key() PrincipalKey {
	return PrincipalKey{Issuer: o.Issuer, Subject: o.Subject}
}

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
