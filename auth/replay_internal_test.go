package auth

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReplayCache: a proof is refused while it is remembered; the cache
// holds no more than its bound and, full of live entries, refuses a new
// proof rather than forget one; expired entries make room, in the order
// they came, through the ring's growth and wrap-around.
func TestReplayCache(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	c := newReplayCache(40)
	key := func(i int) [16]byte { return replayKey("jkt", fmt.Sprint(i)) }
	for i := range 40 {
		if err := c.remember(key(i), now.Add(time.Duration(i+1)*time.Second), now); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	if err := c.remember(key(3), now.Add(time.Hour), now); !errors.Is(err, ErrProofReplayed) {
		t.Fatalf("a remembered proof: got %v, want ErrProofReplayed", err)
	}
	if err := c.remember(key(40), now.Add(time.Hour), now); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("full of live entries: got %v, want ErrReplayCacheFull", err)
	}
	// Ten seconds on, the first ten have expired: ten new ones fit, and
	// an expired proof is no longer remembered (its iat is too old to
	// pass the lifetime check by then).
	later := now.Add(10 * time.Second)
	for i := 40; i < 50; i++ {
		if err := c.remember(key(i), later.Add(time.Minute), later); err != nil {
			t.Fatalf("proof %d after expiry: %v", i, err)
		}
	}
	if err := c.remember(key(50), later.Add(time.Minute), later); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("full again: got %v, want ErrReplayCacheFull", err)
	}
	for _, i := range []int{10, 39, 40, 49} {
		if err := c.remember(key(i), later.Add(time.Hour), later); !errors.Is(err, ErrProofReplayed) {
			t.Errorf("proof %d: got %v, want ErrProofReplayed", i, err)
		}
	}
	if n := c.len(); n != 40 {
		t.Errorf("got %d entries, want 40", n)
	}
	// Much later everything has expired and the ring starts over.
	end := later.Add(2 * time.Hour)
	for i := 100; i < 140; i++ {
		if err := c.remember(key(i), end.Add(time.Minute), end); err != nil {
			t.Fatalf("proof %d at the end: %v", i, err)
		}
	}
	if n := c.len(); n != 40 {
		t.Errorf("got %d entries, want 40", n)
	}
}

// TestNonceMaker: a nonce is good for its lifetime and no longer, only
// with the secret that made it, and a fresh one is due past half of it.
func TestNonceMaker(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	n, err := newNonceMaker([]byte("0123456789abcdef0123456789abcdef"), 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newNonceMaker(nil, 4*time.Minute)
	nonce := n.current(now)
	for _, tc := range []struct {
		name          string
		nonce         string
		at            time.Time
		ok, isCurrent bool
	}{
		{"at once", nonce, now, true, true},
		{"half its life on", nonce, now.Add(2*time.Minute + time.Second), true, false},
		{"at the end of its life", nonce, now.Add(4 * time.Minute), false, false},
		{"another secret's", other.current(now), now, false, false},
		{"from the future", n.current(now.Add(time.Hour)), now, false, false},
		{"not base64url", "!!", now, false, false},
		{"empty", "", now, false, false},
	} {
		ok, cur := n.check(tc.nonce, tc.at)
		if ok != tc.ok || cur != tc.isCurrent {
			t.Errorf("%s: got ok=%v current=%v, want %v %v", tc.name, ok, cur, tc.ok, tc.isCurrent)
		}
	}
}

// TestReplayCacheCompacts: a full ring whose oldest entry outlives those
// behind it (a proof made ahead of the clock) frees them once they have
// expired, across the ring's wrap-around, keeping every live entry and
// passing over the ring at most once a second.
func TestReplayCacheCompacts(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	c := newReplayCache(16)
	key := func(i int) [16]byte { return replayKey("jkt", fmt.Sprint(i)) }
	remember := func(i int, expiry, at time.Time) error { return c.remember(key(i), expiry, at) }
	// Move the head past the ring's start, so that what follows wraps.
	for i := range 16 {
		if err := remember(i, now.Add(time.Second), now); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Second)
	for i := 100; i < 116; i++ {
		expiry := now.Add(10 * time.Second)
		if i%4 == 0 {
			expiry = now.Add(time.Hour) // the blockers
		}
		if err := remember(i, expiry, now); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	if err := remember(200, now.Add(time.Hour), now); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("full of live entries: got %v", err)
	}
	now = now.Add(10 * time.Second)
	for i := 200; i < 212; i++ {
		if err := remember(i, now.Add(time.Minute), now); err != nil {
			t.Fatalf("proof %d once the others expired: %v", i, err)
		}
	}
	if err := remember(212, now.Add(time.Minute), now); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("full again: got %v", err)
	}
	for _, i := range []int{100, 104, 108, 112, 200, 211} {
		if err := remember(i, now.Add(time.Hour), now); !errors.Is(err, ErrProofReplayed) {
			t.Errorf("proof %d: got %v, want ErrProofReplayed", i, err)
		}
	}
	if n := c.len(); n != 16 {
		t.Errorf("got %d entries, want 16", n)
	}
	if !c.nextCompact.After(now) {
		t.Errorf("nextCompact %v is not after %v: a full ring would be passed over on every proof", c.nextCompact, now)
	}
}
