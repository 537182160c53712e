package web

import (
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// DefaultRingSize is how many recent events, and as many recent refusals,
// a Ring keeps.
const DefaultRingSize = 200

// Event is what the operator view shows of one audit event: never the
// arguments.
type Event struct {
	Time     time.Time
	User     string
	ClientID string
	Method   string
	Tool     string
	ReadOnly bool
	Decision string
	Outcome  string
	Status   int
	Duration time.Duration
}

// Refused reports whether the event is a refusal: a decision other than
// allowed, or an answer refused at the edge.
func (e Event) Refused() bool {
	return e.Decision != gateway.DecisionAllowed || e.Outcome == gateway.OutcomeRefused
}

// Ring is a gateway.Observer that keeps the most recent audit events and,
// apart, the most recent refusals, each in a bounded ring: memory stays
// fixed however many calls there are. It holds this replica's events
// only.
type Ring struct {
	gateway.NopObserver
	mu       sync.Mutex
	events   ring
	refusals ring
}

type ring struct {
	buf  []Event
	next int
	full bool
}

func (r *ring) add(e Event) {
	r.buf[r.next] = e
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// newest returns up to n events, newest first.
func (r *ring) newest(n int) []Event {
	size := r.next
	if r.full {
		size = len(r.buf)
	}
	n = min(n, size)
	out := make([]Event, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// NewRing returns a Ring of size events (and size refusals); size <= 0
// means DefaultRingSize.
func NewRing(size int) *Ring {
	if size <= 0 {
		size = DefaultRingSize
	}
	return &Ring{events: ring{buf: make([]Event, size)}, refusals: ring{buf: make([]Event, size)}}
}

// Call keeps e.
func (r *Ring) Call(e *gateway.CallEvent) {
	ev := Event{
		Time: e.Time, User: e.User, ClientID: e.ClientID, Method: e.Method, Tool: e.Tool, ReadOnly: e.ReadOnly,
		Decision: e.Decision, Outcome: e.Outcome, Status: e.Status, Duration: e.Duration,
	}
	r.mu.Lock()
	r.events.add(ev)
	if ev.Refused() {
		r.refusals.add(ev)
	}
	r.mu.Unlock()
}

// Recent returns up to n of the newest events and of the newest
// refusals, newest first.
func (r *Ring) Recent(n int) (events, refusals []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events.newest(n), r.refusals.newest(n)
}
