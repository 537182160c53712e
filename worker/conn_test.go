package worker

import (
	"encoding/json"
	"testing"
)

// connWith builds a Conn without a process, holding calls on the given
// streams (gateway ids 1, 2, …), for testing the router alone.
func connWith(streams ...*Stream) *Conn {
	c := &Conn{calls: map[int64]*call{}, progress: map[string]int64{}}
	for _, s := range streams {
		c.nextID++
		c.calls[c.nextID] = &call{stream: s, token: "t" + string(rune('0'+c.nextID))}
		c.progress["t"+string(rune('0'+c.nextID))] = c.nextID
	}
	return c
}

func TestRoute(t *testing.T) {
	a, b, get := NewStream(true), NewStream(true), NewStream(true)
	jsonOnly := NewStream(false)
	gone := NewStream(true)
	gone.Detach()
	for _, tc := range []struct {
		name       string
		calls      []*Stream
		standalone *Stream
		token      string
		want       *Stream
	}{
		{"progress token names its request", []*Stream{a, b}, get, "t2", b},
		{"only request in flight", []*Stream{a}, get, "", a},
		{"unknown token, only request", []*Stream{a}, nil, "t9", a},
		{"two in flight: the standalone stream", []*Stream{a, b}, get, "", get},
		{"two in flight, no standalone: the oldest", []*Stream{a, b}, nil, "", a},
		{"oldest cannot carry it: the next oldest", []*Stream{jsonOnly, b}, nil, "", b},
		{"only request cannot carry it: the standalone", []*Stream{jsonOnly}, get, "", get},
		{"client gone: the standalone", []*Stream{gone}, get, "", get},
		{"token's stream gone: the rules", []*Stream{gone, b}, nil, "t1", b},
		{"nothing at all", nil, nil, "", nil},
		{"nothing that can carry it", []*Stream{jsonOnly}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connWith(tc.calls...)
			c.standalone = tc.standalone
			if got := c.routeLocked(tc.token); got != tc.want {
				t.Errorf("got stream %p, want %p", got, tc.want)
			}
		})
	}
}

func TestStreamQueueBound(t *testing.T) {
	s := NewStream(true)
	s.Expect(1)
	big := make([]byte, MaxQueuedBytes/2+1)
	if !s.push(Outgoing{Data: big}) {
		t.Fatal("first notification: got dropped, want queued")
	}
	if s.push(Outgoing{Data: big}) {
		t.Error("notification over the bound: got queued, want dropped")
	}
	s.Answer(json.RawMessage(`1`), big) // an answer always queues
	msgs, finished := s.Take(false)
	if len(msgs) != 2 || !finished {
		t.Errorf("got %d messages (finished %v), want 2 (true)", len(msgs), finished)
	}
	if !s.push(Outgoing{Data: big}) {
		t.Error("after Take: got dropped, want queued")
	}
}
