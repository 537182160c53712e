package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"sync"
	"time"
)

// replayCache remembers the proofs seen (RFC 9449 §11.1), by a hash of the
// key's thumbprint and the jti, each until its iat is too old for the proof
// to pass again. It is bounded: when every slot holds a live entry, a new
// proof is refused (ErrReplayCacheFull) rather than let a remembered one
// be forgotten early. Entries leave in the order they came, which is
// nearly the order they expire (iat is within the window of the clock at
// insertion), so a sweep from the front frees what has expired. Nearly:
// a proof made ahead of the clock expires after those behind it, and
// would hold them in; so a full ring is compacted (every expired entry
// dropped) before a proof is refused, at most once a second.
type replayCache struct {
	mu    sync.Mutex
	max   int
	seen  map[[16]byte]time.Time // expiry
	order []replayEntry          // a ring in insertion order
	head  int                    // the oldest entry
	n     int
	// nextCompact is the whole second at or after the earliest expiry
	// the last compaction kept: none before it could free anything.
	nextCompact time.Time
}

type replayEntry struct {
	key    [16]byte
	expiry time.Time
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, seen: map[[16]byte]time.Time{}}
}

// replayKey names one proof: jti is unique per key, so another key's jti
// never collides with it.
func replayKey(jkt, jti string) [16]byte {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k
}

// remember records the proof named by key until expiry; it reports
// ErrProofReplayed when the proof was seen and has not expired, and
// ErrReplayCacheFull when there is no room.
func (c *replayCache) remember(key [16]byte, expiry, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.seen[key]; ok && now.Before(e) {
		return ErrProofReplayed
	}
	for c.n > 0 && !now.Before(c.order[c.head].expiry) {
		old := c.order[c.head]
		if e, ok := c.seen[old.key]; ok && e.Equal(old.expiry) {
			delete(c.seen, old.key)
		}
		c.head = (c.head + 1) % len(c.order)
		c.n--
	}
	if c.n == c.max && !now.Before(c.nextCompact) {
		c.compact(now)
	}
	if c.n == c.max {
		return ErrReplayCacheFull
	}
	if c.n == len(c.order) { // grow the ring, oldest first
		grown := make([]replayEntry, 0, min(c.max, max(16, 2*len(c.order))))
		for i := 0; i < c.n; i++ {
			grown = append(grown, c.order[(c.head+i)%len(c.order)])
		}
		c.order, c.head = grown[:cap(grown)], 0
	}
	c.order[(c.head+c.n)%len(c.order)] = replayEntry{key, expiry}
	c.n++
	c.seen[key] = expiry
	return nil
}

// compact drops every expired entry from the ring, keeping the order of
// the rest, and sets nextCompact to the whole second at or after the
// earliest expiry among them.
// It costs a pass over the ring, which the caller makes only when the
// ring is full and nextCompact has come.
func (c *replayCache) compact(now time.Time) {
	kept := 0
	var first time.Time
	for i := 0; i < c.n; i++ {
		e := c.order[(c.head+i)%len(c.order)]
		if !now.Before(e.expiry) {
			if x, ok := c.seen[e.key]; ok && x.Equal(e.expiry) {
				delete(c.seen, e.key)
			}
			continue
		}
		if first.IsZero() || e.expiry.Before(first) {
			first = e.expiry
		}
		// kept <= i: the write never passes the read.
		c.order[(c.head+kept)%len(c.order)] = e
		kept++
	}
	c.n = kept
	// The whole second at or after it: every kept entry expires after
	// now, so however the expiries are spread, a full ring is passed over
	// at most once a second.
	c.nextCompact = first.Truncate(time.Second)
	if c.nextCompact.Before(first) {
		c.nextCompact = c.nextCompact.Add(time.Second)
	}
}

func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// nonceMaker makes and checks DPoP server nonces (RFC 9449 §9) without
// state: a nonce is the start of its time slot and a MAC of it, so every
// replica that holds the secret hands out, and accepts, the same nonces.
// A slot is half the lifetime, so the current and the previous slot's
// nonces are accepted.
type nonceMaker struct {
	secret   []byte
	lifetime time.Duration
}

const nonceContext = "mcpgate DPoP nonce v1\x00"

func newNonceMaker(secret []byte, lifetime time.Duration) (*nonceMaker, error) {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
	}
	return &nonceMaker{secret: secret, lifetime: lifetime}, nil
}

func (n *nonceMaker) slot(now time.Time) int64 {
	step := int64(n.lifetime/2) / int64(time.Second)
	if step < 1 {
		step = 1
	}
	s := now.Unix()
	return s - s%step
}

func (n *nonceMaker) mac(slot int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot))
	m := hmac.New(sha256.New, n.secret)
	m.Write([]byte(nonceContext))
	m.Write(b[:])
	return append(b[:], m.Sum(nil)[:16]...)
}

// current is the nonce to hand out now.
func (n *nonceMaker) current(now time.Time) string {
	return base64.RawURLEncoding.EncodeToString(n.mac(n.slot(now)))
}

// check reports whether nonce is one of this maker's and still good, and
// whether it is the current one (else a fresh one should be handed out).
func (n *nonceMaker) check(nonce string, now time.Time) (ok, current bool) {
	b, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(b) != 24 {
		return false, false
	}
	slot := int64(binary.BigEndian.Uint64(b[:8]))
	if !hmac.Equal(b, n.mac(slot)) {
		return false, false
	}
	age := now.Sub(time.Unix(slot, 0))
	if age < -5*time.Second || age >= n.lifetime {
		// A slot ahead of the clock by more than a replica's skew is not
		// one this secret's holders made.
		return false, false
	}
	return true, slot == n.slot(now)
}
