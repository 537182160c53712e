package gateway

import (
	"fmt"
	"sync/atomic"
)

// budget is one level of the bytes the gateway holds for clients that read
// slowly or not at all: the answers and notifications
// queued on a response and not yet written. The levels chain: a response's
// budget under its session's, under its user's, under the gateway's total
// (which has no limit and is what BufferedBytes reports). A charge is taken
// at every level or at none.
type budget struct {
	what   string // "one response", for the refusal
	key    string // the limit's configuration key, for the refusal
	limit  int64  // 0: none
	used   atomic.Int64
	peak   atomic.Int64 // the most used at once
	parent *budget
}

func newBudget(what, key string, limit int64, parent *budget) *budget {
	return &budget{what: what, key: key, limit: limit, parent: parent}
}

// Take charges n bytes on b and every level above it, or, when a level's
// limit would be passed, on none, and says which limit refused.
func (b *budget) Take(n int) error {
	for l := b; l != nil; l = l.parent {
		used := l.used.Add(int64(n))
		if l.limit > 0 && used > l.limit {
			for r := b; ; r = r.parent {
				r.used.Add(-int64(n))
				if r == l {
					break
				}
			}
			return fmt.Errorf("gateway: this answer (%d bytes) was dropped: it does not fit in the %d bytes the gateway holds for %s not yet read (%s); read responses as they come, or ask for less at once",
				n, l.limit, l.what, l.key)
		}
		for p := l.peak.Load(); used > p && !l.peak.CompareAndSwap(p, used); p = l.peak.Load() {
		}
	}
	return nil
}

// Give returns n bytes taken earlier, at every level.
func (b *budget) Give(n int) {
	for l := b; l != nil; l = l.parent {
		l.used.Add(-int64(n))
	}
}

// BufferedBytes returns the bytes the gateway holds for clients that have
// not read them yet, across every response: the figure the buffer limits
// (Options.MaxStreamBufferBytes and the rest) bound.
func (g *Gateway) BufferedBytes() int64 { return g.acct.buffered.used.Load() }
