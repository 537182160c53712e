package worker

import (
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/jsonrpc"
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
	for _, s := range []*Stream{a, b, jsonOnly, gone} {
		s.Expect(1) // its request awaits its answer
	}
	// parked's request was answered by the gateway (input_required)
	// while the worker's call waits for the client's retry.
	parked, parked2 := NewStream(false), NewStream(false)
	parked.OnRequest = func(*jsonrpc.Message, string) bool { return true }
	parked2.OnRequest = parked.OnRequest
	for _, tc := range []struct {
		name       string
		calls      []*Stream
		standalone *Stream
		token      string
		marked     int64
		want       *Stream
	}{
		{"progress token names its request", []*Stream{a, b}, get, "t2", 0, b},
		{"marker names its request", []*Stream{a, b}, get, "", 2, b},
		{"only request in flight", []*Stream{a}, get, "", 0, a},
		{"unknown token: no request, not even the only one", []*Stream{a}, get, "t9", 0, nil},
		{"marker of no request in flight", []*Stream{a}, get, "", 9, nil},
		{"marker the gateway did not give", []*Stream{a}, get, "", -1, nil},
		{"two in flight: the standalone stream", []*Stream{a, b}, get, "", 0, get},
		{"two in flight, no standalone: dropped, not the oldest", []*Stream{a, b}, nil, "", 0, nil},
		{"one cannot carry it: still dropped", []*Stream{jsonOnly, b}, nil, "", 0, nil},
		{"only request cannot carry it: the standalone", []*Stream{jsonOnly}, get, "", 0, get},
		{"client gone: the standalone", []*Stream{gone}, get, "", 0, get},
		{"token's stream gone: that stream, which drops it", []*Stream{gone, b}, nil, "t1", 0, gone},
		{"a call waiting for its retry and one running: the running one", []*Stream{parked, b}, nil, "", 0, b},
		{"only a call waiting for its retry: that one (a late question)", []*Stream{parked}, nil, "", 0, parked},
		{"two calls waiting for their retries: dropped", []*Stream{parked, parked2}, nil, "", 0, nil},
		{"nothing at all", nil, nil, "", 0, nil},
		{"nothing that can carry it", []*Stream{jsonOnly}, nil, "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connWith(tc.calls...)
			c.standalone = tc.standalone
			if got := c.routeLocked(tc.token, tc.marked); got != tc.want {
				t.Errorf("got stream %p, want %p", got, tc.want)
			}
		})
	}
}

func TestTakeMarker(t *testing.T) {
	for _, tc := range []struct {
		params, want string
		gid          int64
	}{
		{`{"level":"info","data":"x"}`, `{"level":"info","data":"x"}`, 0},
		{`{"level":"info","_meta":{"io.mcpgate/requestId":7}}`, `{"level":"info"}`, 7},
		{`{"_meta":{"io.mcpgate/requestId":7,"k":1},"data":"x"}`, `{"_meta":{"k":1},"data":"x"}`, 7},
		{`{"_meta":{"io.mcpgate/requestId":"7"}}`, `{}`, -1},
		{`{"data":"io.mcpgate/requestId"}`, `{"data":"io.mcpgate/requestId"}`, 0},
		// The same member with a JSON escape in its name: every decoder
		// reads it as the marker, so it is one.
		{`{"_meta":{"io.mcpgate\/requestId":7}}`, `{}`, 7},
		{`{"_meta":{"io.mcpgate\u002frequestId":"7"}}`, `{}`, -1},
		{`{"data":"a\"b"}`, `{"data":"a\"b"}`, 0},
	} {
		m, gid := takeMarker(&jsonrpc.Message{JSONRPC: "2.0", Method: "notifications/message", Params: json.RawMessage(tc.params)})
		if gid != tc.gid || string(m.Params) != tc.want {
			t.Errorf("takeMarker(%s) = %s, %d; want %s, %d", tc.params, m.Params, gid, tc.want, tc.gid)
		}
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
