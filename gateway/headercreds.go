package gateway

import (
	"time"

	"github.com/mcpgate/mcpgate/auth"
	"github.com/mcpgate/mcpgate/credential"
	"github.com/mcpgate/mcpgate/worker"
)

// A remote server's worker (mcpgate upstream) gets its user's header
// credentials on a socket of its own (credential.HeaderFeed) and takes a
// new set before each request it sends. So a header credential that
// comes due is renewed in place, by the next request of its user (whose
// token was verified just now: never after the user's own token expired),
// before that request reaches the worker; the worker and its upstream
// session stay. Only when that fails is the worker replaced, as a stdio
// worker holding an expiring credential is.

// withHeaderFeed completes the start of b's worker with b's header
// credentials: the worker's end of a new feed, its first file (fd 3:
// `mcpgate upstream --credential-fd 3`), holding the set.
func withHeaderFeed(b *binding, s worker.Session) (worker.Session, error) {
	if len(b.creds.Header) == 0 {
		return s, nil
	}
	feed, file, err := credential.NewHeaderFeed(b.creds)
	if err != nil {
		return s, err
	}
	if old := b.feed.Swap(feed); old != nil {
		_ = old.Close() // a worker a step-up replaced keeps the set it took last
	}
	s.Files = append(append(s.Files[:0:0], file), s.Files...)
	return s, nil
}

// closeFeed closes b's feed once its worker has exited.
func (b *binding) closeFeed() {
	if f := b.feed.Load(); f != nil {
		_ = f.Close()
	}
}

// renew is when b's credentials are due: the last set its feed carried,
// else the set it started with.
func (b *binding) renew() time.Time {
	if f := b.feed.Load(); f != nil {
		return f.Renew()
	}
	return b.creds.Renew
}

// refreshFeed hands b's worker fresh, its user's credentials obtained for
// the request at hand, in place of the set that is due at now. False when
// b has no feed, fresh is itself due, or the worker cannot take it: the
// caller then replaces the worker.
func (b *binding) refreshFeed(fresh credential.Set, now time.Time) bool {
	f := b.feed.Load()
	if f == nil || fresh.Renew.IsZero() || !now.Before(fresh.Renew) {
		return false
	}
	if err := f.Send(fresh); err != nil {
		b.log.Warn("gateway: renewing a worker's header credentials in place failed; replacing the worker", "err", err)
		return false
	}
	b.log.Info("gateway: renewed a worker's header credentials in place")
	return true
}

// refreshSession renews, in place, the header credentials of the session
// s, due at now, with its user's credentials for c; false when that
// cannot be done (the session then ends, as a stdio worker's does).
func (g *Gateway) refreshSession(c *call, s *binding, now time.Time) bool {
	if s.feed.Load() == nil || g.opts.Credentials == nil {
		return false
	}
	fresh, err := g.opts.Credentials.Get(c.r.Context(), c.principal, auth.SubjectTokenFrom(c.r.Context()).Token())
	if err != nil {
		s.log.Warn("gateway: renewing a session's header credentials failed", "err", err)
		return false
	}
	return s.refreshFeed(fresh, now)
}
