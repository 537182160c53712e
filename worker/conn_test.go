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

func TestMessageShapes(t *testing.T) {
	for _, tc := range []struct {
		in    string
		valid bool
		kind  string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, true, "request"},
		{`{"jsonrpc":"2.0","id":"x","method":"ping"}`, true, "request"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, "notification"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true, "response"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, true, "response"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, false, ""},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, false, ""},
		{`{"jsonrpc":"2.0","id":1}`, false, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, false, ""},
		{`{"jsonrpc":"2.0","method":"x","result":{}}`, false, ""},
		{`{"id":1,"method":"ping"}`, false, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var m Message
			if err := json.Unmarshal([]byte(tc.in), &m); err != nil {
				t.Fatal(err)
			}
			if got := m.Validate() == nil; got != tc.valid {
				t.Fatalf("valid: got %v, want %v", got, tc.valid)
			}
			if !tc.valid {
				return
			}
			kind := map[bool]string{true: "request"}[m.IsRequest()] + map[bool]string{true: "notification"}[m.IsNotification()] + map[bool]string{true: "response"}[m.IsResponse()]
			if kind != tc.kind {
				t.Errorf("got %s, want %s", kind, tc.kind)
			}
		})
	}
}

func TestParamsInfo(t *testing.T) {
	for _, tc := range []struct{ params, name, token string }{
		{`{"name":"echo","_meta":{"progressToken":"a b"}}`, "echo", `"a b"`},
		{`{"name":"echo","_meta":{"progressToken": 7}}`, "echo", `7`},
		{`{"_meta":{"progressToken":null}}`, "", ""},
		{`[1]`, "", ""},
		{``, "", ""},
	} {
		name, token := ParamsInfo(json.RawMessage(tc.params))
		if name != tc.name || token != tc.token {
			t.Errorf("ParamsInfo(%s): got %q %q, want %q %q", tc.params, name, token, tc.name, tc.token)
		}
	}
}

func TestKey(t *testing.T) {
	if Key(json.RawMessage(`{ "a" : 1 }`)) != `{"a":1}` || Key(json.RawMessage(`1`)) == Key(json.RawMessage(`"1"`)) {
		t.Error("Key must compact and keep 1 and \"1\" apart")
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

func TestEncodeKeepsHTMLCharacters(t *testing.T) {
	m := Message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Result: json.RawMessage(`{"text":"<b>a & b</b>"}`)}
	b, err := Encode(&m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"text":"<b>a & b</b>"}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct {
		params string
		name   string
		ok     bool
	}{
		{`{"name":"echo","arguments":{"name":"x"}}`, "echo", true},
		{`{"arguments":{},"name":"echo"}`, "echo", true},
		{`{"n\u0061me":"echo"}`, "echo", true},
		{`{"name":"write","Name":"echo"}`, "", false},
		{`{"Name":"echo"}`, "", false},
		{`{"name":"echo","name":"write"}`, "", false},
		{`{"name":7}`, "", false},
		{`{"arguments":{}}`, "", false},
		{`["name","echo"]`, "", false},
		{`{"name":"echo"`, "", false},
		{``, "", false},
	} {
		name, ok := ToolName(json.RawMessage(tc.params))
		if ok != tc.ok || (ok && name != tc.name) {
			t.Errorf("ToolName(%s): got %q %v, want %q %v", tc.params, name, ok, tc.name, tc.ok)
		}
	}
}
