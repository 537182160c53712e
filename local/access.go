package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/mcpgate/mcpgate/auth"
)

// Rule opens the socket to another account than its owner's: the account
// named User, or every member of Group.
type Rule struct {
	User, Group string
	// ReadOnly makes the account's sessions read-only.
	ReadOnly bool
	// Tools are the tools the account may reach, sorted; nil means every
	// tool (subject to ReadOnly).
	Tools []string
}

// AccessOptions decide who a peer is and what it may do.
type AccessOptions struct {
	// Issuer names the identities a socket vouches for, apart from every
	// token issuer's: the binding key of a worker holds it. Default
	// "unix:" and the host name.
	Issuer string
	// ReadOnly makes every peer read-only (server.read_only).
	ReadOnly bool
	// OwnerUser is the user id of the socket's owner (this process's
	// account); default its account name.
	OwnerUser string
	// Rules open the socket to other accounts, first match wins; none
	// means the owner's account only.
	Rules []Rule
	// Log hears each refusal; nil means slog.Default().
	Log *slog.Logger
}

// Access turns a socket's peer into the principal its requests run as.
type Access struct {
	o      AccessOptions
	self   uint32
	groups map[string]uint32 // the rules' groups, by name
}

// NewAccess checks o's rules against the system's accounts and groups: a
// name that does not exist is an error, not a rule that never matches.
func NewAccess(o AccessOptions) (*Access, error) {
	if o.Issuer == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		o.Issuer = "unix:" + host
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &Access{o: o, self: uint32(os.Geteuid()), groups: map[string]uint32{}}
	if o.OwnerUser == "" {
		u, err := user.LookupId(strconv.Itoa(int(a.self)))
		if err != nil {
			return nil, fmt.Errorf("local: this process's account (uid %d) has no name: %w; set server.local_user", a.self, err)
		}
		a.o.OwnerUser = u.Username
	}
	var errs []error
	for i, r := range o.Rules {
		switch {
		case (r.User == "") == (r.Group == ""):
			errs = append(errs, fmt.Errorf("local: rule %d: name a user or a group, not both or neither", i))
		case r.User != "":
			if _, err := user.Lookup(r.User); err != nil {
				errs = append(errs, fmt.Errorf("local: rule %d: no account %q on this system", i, r.User))
			}
		default:
			g, err := user.LookupGroup(r.Group)
			if err != nil {
				errs = append(errs, fmt.Errorf("local: rule %d: no group %q on this system", i, r.Group))
				continue
			}
			gid, _ := strconv.ParseUint(g.Gid, 10, 32)
			a.groups[r.Group] = uint32(gid)
		}
	}
	return a, errors.Join(errs...)
}

// Rules are the rules that open the socket to other accounts.
func (a *Access) Rules() []Rule { return a.o.Rules }

// Issuer is the issuer of the principals a returns.
func (a *Access) Issuer() string { return a.o.Issuer }

// RefusedError is a peer the socket does not serve.
type RefusedError struct {
	UID     uint32
	Account string // "" when the uid has no name
	Reason  string
}

func (e *RefusedError) Error() string {
	who := fmt.Sprintf("uid %d", e.UID)
	if e.Account != "" {
		who += " (" + e.Account + ")"
	}
	return "local: " + who + " " + e.Reason
}

// Principal is who peer is: its uid (the subject) mapped to its account
// name (the user id), under a's issuer, read-only and with the tools its
// rule gives. The socket's owner is always served; another account only
// by a rule naming it or a group it belongs to.
func (a *Access) Principal(p Peer) (*auth.Principal, error) {
	pr := &auth.Principal{Issuer: a.o.Issuer, Subject: strconv.FormatUint(uint64(p.UID), 10), ReadOnly: a.o.ReadOnly}
	if p.UID == a.self {
		pr.UserID = a.o.OwnerUser
		return pr, nil
	}
	refused := &RefusedError{UID: p.UID, Reason: "may not use this socket; its owner can add the account (or a group of it) to server.unix_allowed_users"}
	u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10))
	if err != nil {
		refused.Reason = "has no account name on this system, and only named accounts may use this socket"
		return nil, refused
	}
	refused.Account = u.Username
	var gids []string
	for _, r := range a.o.Rules {
		match := r.User != "" && r.User == u.Username
		if r.Group != "" {
			if gids == nil {
				gids, _ = u.GroupIds()
				gids = append(gids, strconv.FormatUint(uint64(p.GID), 10))
			}
			match = slices.Contains(gids, strconv.FormatUint(uint64(a.groups[r.Group]), 10))
		}
		if match {
			pr.UserID = u.Username
			pr.ReadOnly = pr.ReadOnly || r.ReadOnly
			pr.Tools = r.Tools
			return pr, nil
		}
	}
	return nil, refused
}

type peerKey struct{}

// peerDecision is what a connection's peer was found to be.
type peerDecision struct {
	principal *auth.Principal
	err       error
}

// ConnContext is the socket's http.Server.ConnContext: it decides once per
// connection who its peer is, then calls next (gateway.ConnContext). A
// connection that did not come from a Listener gets no decision, and
// Guard refuses its requests.
func (a *Access) ConnContext(next func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		d := peerDecision{err: errors.New("local: the connection's peer is unknown")}
		for inner := c; inner != nil; {
			if lc, ok := inner.(*Conn); ok {
				peer, err := lc.Peer()
				if err != nil {
					d.err = err
				} else {
					d.principal, d.err = a.Principal(peer)
				}
				break
			}
			u, ok := inner.(interface{ NetConn() net.Conn })
			if !ok {
				break
			}
			inner = u.NetConn()
		}
		ctx = context.WithValue(ctx, peerKey{}, &d)
		if next != nil {
			ctx = next(ctx, c)
		}
		return ctx
	}
}

// Guard serves the socket's requests: a peer the socket does not serve is
// answered 403 on every path, and a request that carries an Authorization
// header 400, since the kernel, not a token, says who is on a socket (a
// token would be refused rather than silently ignored, so a client does
// not believe it acts as the token's user). Others go on to next with
// their principal in the context (auth.PrincipalFrom).
func (a *Access) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := r.Context().Value(peerKey{}).(*peerDecision)
		if d == nil || d.principal == nil {
			err := errors.New("local: the connection's peer is unknown")
			if d != nil {
				err = d.err
			}
			a.o.Log.Warn("local: refused a peer on the socket", "err", err)
			refuse(w, http.StatusForbidden, "access_denied", err.Error())
			return
		}
		// Any Authorization line, even an empty one before the token:
		// Get would read only the first.
		if len(r.Header.Values("Authorization")) > 0 {
			refuse(w, http.StatusBadRequest, "invalid_request", "local: a Unix socket takes no Authorization header: the kernel says who you are; send no token here (tokens are for the gateway's TCP address)")
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), d.principal)))
	})
}

// FromSocket reports whether r arrived on a socket guarded by an Access
// (its principal, if any, is the peer's, not a token's).
func FromSocket(r *http.Request) bool {
	_, ok := r.Context().Value(peerKey{}).(*peerDecision)
	return ok
}

// refuse writes an OAuth-style error object (RFC 6749 §5.2): the bridge
// shows its description to the user.
func refuse(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// Middleware is the gateway's authentication when it serves a socket and
// a network address: a request from the socket already carries its peer's
// principal (Guard), and network, the token check (nil in the localhost
// mode), is for the others.
func Middleware(network func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		tcp := next
		if network != nil {
			tcp = network(next)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if FromSocket(r) {
				next.ServeHTTP(w, r)
				return
			}
			tcp.ServeHTTP(w, r)
		})
	}
}
