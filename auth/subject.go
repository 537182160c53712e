package auth

import "context"

// subjectTokenKey carries the verified access token of a request, for the
// one use the gateway has for it: the subject of an RFC 8693 token
// exchange at the same issuer (package credential).
type subjectTokenKey struct{}

// SubjectToken is a request's verified access token. It prints as
// "[redacted]", so that a log line or an error that formats it by
// mistake never shows it.
type SubjectToken struct{ token string }

// String never shows the token.
func (SubjectToken) String() string { return "[redacted]" }

// GoString never shows the token.
func (SubjectToken) GoString() string { return "[redacted]" }

// Token returns the token itself, for the token exchange request.
func (t SubjectToken) Token() string { return t.token }

// withSubjectToken returns a context carrying the verified token.
func withSubjectToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, subjectTokenKey{}, SubjectToken{token})
}

// SubjectTokenFrom returns the access token the middleware verified for
// the request, or the zero SubjectToken (whose Token is "") when there is
// none. The Authorization header itself is gone by then: the token goes
// to the issuer's token endpoint, and to nothing else.
func SubjectTokenFrom(ctx context.Context) SubjectToken {
	t, _ := ctx.Value(subjectTokenKey{}).(SubjectToken)
	return t
}
