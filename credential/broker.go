package credential

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/auth"
)

// MaxSecretBytes bounds one credential, whatever its source: an exchanged
// token, a secret file. A credential travels in a worker's environment,
// where Linux refuses one string over 128 KiB (MAX_ARG_STRLEN), or in a
// header; anything larger is refused rather than buffered or passed on.
const MaxSecretBytes = 64 << 10

// Errors a caller may branch on; an *Error wraps one of them.
var (
	// ErrNoAccess: the user has no credential for the server (no secret
	// file of theirs): the user has no access to it.
	ErrNoAccess = errors.New("credential: no access")
	// ErrRefused: the issuer refused the exchange, or the configuration
	// refuses the secret (its owner or mode, a symbolic link).
	ErrRefused = errors.New("credential: refused")
	// ErrUnavailable: the issuer could not be asked or answered wrongly;
	// the request may succeed later.
	ErrUnavailable = errors.New("credential: unavailable")
)

// Error is why one credential of a server could not be had for a user. Its
// message names the server, the credential and, for a refused exchange,
// the issuer's error code; never the credential nor the user's token.
type Error struct {
	Server     string // the server's name
	Credential string // Credential.Name
	// IssuerError is the issuer's RFC 6749 error code (invalid_grant,
	// access_denied…), when it sent one.
	IssuerError string
	Reason      string // what went wrong, for the client and the log
	Kind        error  // ErrNoAccess, ErrRefused or ErrUnavailable
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("credential: server %q: %s: %s", e.Server, e.Credential, e.Reason)
	if e.IssuerError != "" {
		msg += " (issuer error " + e.IssuerError + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Kind }

// Set is the credentials of one user's worker of one server.
type Set struct {
	// Env holds NAME=value pairs for the worker's environment.
	Env []string
	// Files are the EnvFile credentials: a variable name and the bytes
	// its file holds.
	Files []File
	// Header holds a remote server's header credentials.
	Header http.Header
	// Renew is when the set must no longer be used: a margin before the
	// first of its credentials expires. Zero: none expires.
	Renew time.Time
}

// File is one EnvFile credential.
type File struct {
	Env   string
	Value []byte
}

// String never shows a credential.
func (s Set) String() string {
	return fmt.Sprintf("credential.Set{%d env, %d files, %d headers, renew %v}", len(s.Env), len(s.Files), len(s.Header), s.Renew)
}

// Empty reports whether s holds no credential.
func (s Set) Empty() bool { return len(s.Env) == 0 && len(s.Files) == 0 && len(s.Header) == 0 }

// Broker obtains the credentials of one server for its users.
type Broker struct {
	server string
	creds  []Credential
	ex     *Exchanger
}

// New returns the Broker of the server named server, with credentials
// opts. ex does the token exchanges; it may be nil when no credential
// comes from token_exchange.
func New(server string, opts Options, ex *Exchanger) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Exchanges() && ex == nil {
		return nil, errors.New("credential: token_exchange credentials need the gateway's exchange client (auth.issuer and auth.introspection_client_id)")
	}
	return &Broker{server: server, creds: opts.Credentials, ex: ex}, nil
}

// Server is the name the broker's errors give the server.
func (b *Broker) Server() string { return b.server }

// Get returns p's credentials. token is p's verified access token, the
// subject of a token exchange; it is sent to the issuer's token endpoint
// and nowhere else. A sender-constrained token (DPoP, a client
// certificate) is refused for exchange: the gateway does not hold the
// client's key, and the issuer would need a proof of it.
func (b *Broker) Get(ctx context.Context, p *auth.Principal, token string) (Set, error) {
	var s Set
	for i, c := range b.creds {
		fail := func(kind error, reason string) (Set, error) {
			return Set{}, &Error{Server: b.server, Credential: c.Name(), Reason: reason, Kind: kind}
		}
		var value []byte
		var renew time.Time
		switch c.From {
		case FromTokenExchange:
			switch {
			case p == nil || token == "":
				return fail(ErrNoAccess, "token exchange needs the user's access token; this gateway serves no authenticated user")
			case p.KeyThumbprint != "":
				return fail(ErrRefused, "the request's token is DPoP-bound (cnf.jkt) and the gateway does not hold the client's key to exchange it; use a Bearer token for this server")
			case p.CertThumbprint != "":
				return fail(ErrRefused, "the request's token is bound to a client certificate (cnf.x5t#S256) and the gateway does not hold its key to exchange it; use an unbound token for this server")
			}
			tok, r, err := b.ex.token(ctx, exchangeKey{issuer: p.Issuer, subject: p.Subject, user: p.UserID, server: b.server, cred: i}, c, token)
			if err != nil {
				var e *Error
				if errors.As(err, &e) {
					e.Server, e.Credential = b.server, c.Name()
				}
				return Set{}, err
			}
			value, renew = []byte(tok), r
		case FromFile:
			if p == nil {
				return fail(ErrNoAccess, "per-user secrets need an authenticated user")
			}
			v, err := readUserSecret(c.Dir, p.UserID, c.Name())
			if err != nil {
				return Set{}, &Error{Server: b.server, Credential: c.Name(), Reason: err.reason, Kind: err.kind}
			}
			value = v
		case FromStatic:
			v, err := readStatic(c.Path)
			if err != nil {
				return Set{}, &Error{Server: b.server, Credential: c.Name(), Reason: err.reason, Kind: err.kind}
			}
			value = v
		}
		if c.Env != "" && strings.IndexByte(string(value), 0) >= 0 || c.Header != "" && strings.ContainsAny(string(value), "\r\n\x00") {
			return fail(ErrRefused, "the credential holds a character its destination cannot carry (NUL, or a line break in a header)")
		}
		if !renew.IsZero() && (s.Renew.IsZero() || renew.Before(s.Renew)) {
			s.Renew = renew
		}
		switch {
		case c.Env != "":
			s.Env = append(s.Env, c.Env+"="+string(value))
		case c.EnvFile != "":
			s.Files = append(s.Files, File{Env: c.EnvFile, Value: value})
		default:
			if s.Header == nil {
				s.Header = http.Header{}
			}
			s.Header.Set(c.Header, c.Prefix+string(value))
		}
	}
	return s, nil
}
