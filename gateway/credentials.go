package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/jsonrpc"
	"github.com/mcpgate/mcpgate/worker"
)

// DecisionNoCredential is a CallEvent's Decision for a request refused
// because its user's own downstream credential could not be had (no secret
// file of theirs, a refused or failed token exchange).
const DecisionNoCredential = "noCredential"

// errCredentialExpired ends a 2025 session whose worker holds a credential
// in its environment that is about to expire: the session's state lives in
// that worker and cannot move to a new one.
var errCredentialExpired = failure{http.StatusNotFound, jsonrpc.CodeSessionNotFound,
	"gateway: the session ended: its worker's downstream credential expires, and a session's state cannot move to a new worker; initialize a new session",
	map[string]any{"kind": "credentialExpired"}}

// credentialFailure is the answer to a request whose credential could not
// be had: the credential package's message names the server, the
// credential and the issuer's error code, never a secret.
func credentialFailure(err error) failure {
	f := failure{http.StatusForbidden, jsonrpc.CodeInvalidRequest, "gateway: " + err.Error(), nil}
	data := map[string]any{"kind": "noCredential"}
	var e *credential.Error
	if errors.As(err, &e) {
		data["server"], data["credential"] = e.Server, e.Credential
		if e.IssuerError != "" {
			data["issuerError"] = e.IssuerError
		}
	}
	if errors.Is(err, credential.ErrUnavailable) {
		f.status, f.code = http.StatusBadGateway, jsonrpc.CodeInternalError
		data["kind"] = "credentialUnavailable"
	}
	f.data = data
	return f
}

// credentialsFor obtains the downstream credentials of c's user for this
// server (Options.Credentials); when they cannot be had it answers w for
// the message m and returns false. Without credentials configured it
// returns the empty set.
func (g *Gateway) credentialsFor(w http.ResponseWriter, c *call, m *jsonrpc.Message, to callee, readOnly bool) (credential.Set, bool) {
	if g.opts.Credentials == nil {
		return credential.Set{}, true
	}
	s, err := g.opts.Credentials.Get(c.r.Context(), c.principal, auth.SubjectTokenFrom(c.r.Context()).Token())
	if err == nil {
		return s, true
	}
	f := credentialFailure(err)
	user := ""
	if c.principal != nil {
		user = c.principal.UserID
	}
	g.log.Warn("gateway: refused a request: no downstream credential", "user", user, "err", err)
	g.refusedWith(c, m, to, readOnly, DecisionNoCredential, f.status)
	f.write(w, jsonID(m))
	return credential.Set{}, false
}

// jsonID is m's id, or none for a message that has none.
func jsonID(m *jsonrpc.Message) json.RawMessage {
	if m == nil {
		return nil
	}
	return m.ID
}

// withCredentials completes the start of b's worker with b's credentials:
// the variables, and the memory-backed files with the variables naming
// them.
func withCredentials(b *binding, s worker.Session) (worker.Session, error) {
	if b.creds.Empty() {
		return s, nil
	}
	if len(b.creds.Header) > 0 {
		return withHeaderFeed(b, s)
	}
	files, env, err := b.creds.OpenFiles()
	if err != nil {
		return s, err
	}
	s.Credentials = append(append([]string(nil), b.creds.Env...), env...)
	s.Files = files
	return s, nil
}

// credsDue reports whether b's worker holds a credential that is due for
// renewal at now: the worker must not serve another call.
func (b *binding) credsDue(now time.Time) bool {
	renew := b.renew()
	return !renew.IsZero() && !now.Before(renew)
}

// retireLocked takes the per-user worker b, whose credentials are due, out
// of the table, so that its key's next request starts a fresh worker with
// fresh credentials; b's worker stops once the calls in flight in it
// are answered (never during one). g.mu is held.
func (g *Gateway) retireLocked(b *binding) {
	if !g.takeLocked(b) {
		return
	}
	b.log.Info("gateway: replacing a per-user worker: its downstream credential is due for renewal")
	b.retired.Store(true)
	if b.busy.Load() == 0 {
		go g.stopRetired(b)
	}
}

// stopRetired stops a retired worker, once.
func (g *Gateway) stopRetired(b *binding) {
	if !b.retireStop.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := g.stopCtx()
	defer cancel()
	if err := g.stopTaken(ctx, b, true, ExitReplaced, "gateway: the worker's downstream credential expires; send the request again"); err != nil {
		b.log.Error("gateway: stopping a worker", "err", err)
	}
}

// expireSession ends the session s when its worker's credentials are due
// (a timer set at its start, and each request's check): its requests in
// flight, and its next ones, are told why.
func (g *Gateway) expireSession(s *binding) {
	if !g.removeKeepDB(s) {
		return
	}
	s.log.Info("gateway: ending a session: its worker's downstream credential expires")
	ctx, cancel := g.stopCtx()
	defer cancel()
	if err := g.stopTaken(ctx, s, true, ExitReplaced, "gateway: the session's worker holds a downstream credential that expires, and a session's state cannot move to a new worker"); err != nil {
		s.log.Error("gateway: stopping a worker", "err", err)
	}
}

// watchCredentials ends the session s at its credentials' renewal time.
func (g *Gateway) watchCredentials(s *binding) {
	if s.creds.Renew.IsZero() || s.feed.Load() != nil {
		return // a feed is renewed by the session's next request (headercreds.go)
	}
	t := time.AfterFunc(s.creds.Renew.Sub(g.opts.Now()), func() { g.expireSession(s) })
	s.credsTimer.Store(t)
}
