package auth

import (
	"slices"
	"sync"
	"time"
)

// DefaultTokenCacheSize is how many verified tokens an Authenticator keeps
// by default: at a few hundred bytes each, about 4 MiB at most.
const DefaultTokenCacheSize = 10000

// tokenCache remembers tokens that passed every check, keyed by the
// SHA-256 of the token, so a client that presents the same token on each
// request pays for one signature check. It holds no token, only
// its hash and the principal. An entry is served only while:
//   - the clock is before its until (the token's exp, or earlier), and
//     nbf/iat still pass: those checks are made again on every hit;
//   - the keys it was verified with are still the current ones: a JWKS
//     change (rotation, a key removed) empties it; a refetch that finds
//     the same keys does not.
//
// A failure is never stored. Options are fixed for an Authenticator's
// life, and each Authenticator has its own cache, so a configuration
// change (a new Authenticator) starts empty. The bound is kept first in,
// first out: an attacker who floods it with valid tokens of their own
// only costs others a signature check.
type tokenCache struct {
	mu      sync.RWMutex
	max     int
	entries map[[32]byte]*cachedToken
	order   [][32]byte // keys in insertion order, a ring of max slots
	next    int
	gen     any // the key set of the entries
}

// cachedToken is what a hit needs to answer without verifying.
type cachedToken struct {
	p        Principal // Scopes and Tools are owned by the entry
	until    time.Time // exp or earlier; the entry is dead from then on
	nbf, iat time.Time // zero when absent
	gen      any       // the keys' *keyGeneration, or nil
	// stale is when an introspection answer stops serving even while the
	// endpoint fails (getStale); zero for JWTs.
	stale time.Time
	// refusal is the error of a remembered refusal (introspection only);
	// nil for a token that passed.
	refusal error
}

// newTokenCache returns a cache of max entries, or nil (no caching) when
// max is negative.
func newTokenCache(max int) *tokenCache {
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = DefaultTokenCacheSize
	}
	return &tokenCache{max: max, entries: map[[32]byte]*cachedToken{}}
}

// get returns the entry for sum when it may answer now, under key set gen.
func (c *tokenCache) get(sum *[32]byte, gen any, now time.Time, leeway time.Duration) *cachedToken {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	e := c.entries[*sum]
	c.mu.RUnlock()
	switch {
	case e == nil, e.gen != gen, !now.Before(e.until),
		!e.nbf.IsZero() && e.nbf.After(now.Add(leeway)),
		!e.iat.IsZero() && e.iat.After(now.Add(leeway)):
		// A full verification decides, and names the failed check.
		return nil
	}
	return e
}

// getStale returns the entry for sum, past its until, while its stale time
// has not come: an introspection answer, for when the endpoint fails.
func (c *tokenCache) getStale(sum *[32]byte, now time.Time) *cachedToken {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	e := c.entries[*sum]
	c.mu.RUnlock()
	if e == nil || !now.Before(e.stale) {
		return nil
	}
	return e
}

// revoke ends the entry for sum, if any, for get and getStale alike: the
// introspection endpoint has since refused its token, so its earlier
// answer must not serve it again, even while the endpoint fails. The entry
// keeps its slot until evicted.
func (c *tokenCache) revoke(sum *[32]byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[*sum]; e != nil {
		dead := *e
		dead.until, dead.stale = time.Time{}, time.Time{}
		c.entries[*sum] = &dead
	}
}

// put stores e for sum; e.p is copied.
func (c *tokenCache) put(sum *[32]byte, e cachedToken) {
	if c == nil {
		return
	}
	e.p.Scopes, e.p.Tools = slices.Clone(e.p.Scopes), slices.Clone(e.p.Tools)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gen != c.gen {
		// The key set changed: nothing verified under the old one stays.
		clear(c.entries)
		c.order, c.next, c.gen = c.order[:0], 0, e.gen
	}
	if _, ok := c.entries[*sum]; ok {
		c.entries[*sum] = &e
		return
	}
	if len(c.order) < c.max {
		c.order = append(c.order, *sum)
	} else {
		delete(c.entries, c.order[c.next])
		c.order[c.next] = *sum
		c.next = (c.next + 1) % c.max
	}
	c.entries[*sum] = &e
}

func (c *tokenCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// principal is a copy of the entry's principal the caller may change.
func (e *cachedToken) principal() *Principal {
	p := e.p
	p.Scopes, p.Tools = slices.Clone(e.p.Scopes), slices.Clone(e.p.Tools)
	return &p
}
