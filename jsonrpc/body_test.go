package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

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

func TestDecodeBody(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int   // messages
		batch    bool  // read as a batch
		err      error // nil, ErrParse, ErrInvalidMessage or ErrEmptyBatch
		id       string
	}{
		{"one", ` {"jsonrpc":"2.0","id":1,"method":"ping"} `, 1, false, nil, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 2, true, nil, ""},
		{"not json", `not json`, 0, false, ErrParse, ""},
		{"truncated", `{"jsonrpc":"2.0"`, 0, false, ErrParse, ""},
		{"empty", ``, 0, false, ErrParse, ""},
		{"truncated batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, true, ErrParse, ""},
		{"empty batch", `[]`, 0, true, ErrEmptyBatch, ""},
		{"number in a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]`, 0, true, ErrInvalidMessage, ""},
		{"no version", `{"id":"x","method":"ping"}`, 0, false, ErrInvalidMessage, `"x"`},
		{"old version in a batch", `[{"jsonrpc":"1.0","id":7,"method":"ping"}]`, 0, true, ErrInvalidMessage, `7`},
		{"string", `"a string"`, 0, false, ErrInvalidMessage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, batch, err := DecodeBody([]byte(tc.in))
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("got error %v, want %v", err, tc.err)
			}
			if len(msgs) != tc.n || batch != tc.batch {
				t.Errorf("got %d messages (batch %v), want %d (%v)", len(msgs), batch, tc.n, tc.batch)
			}
			var de *DecodeError
			if errors.As(err, &de) && string(de.ID) != tc.id {
				t.Errorf("got id %s, want %s", de.ID, tc.id)
			}
		})
	}
}

func TestKey(t *testing.T) {
	if Key(json.RawMessage(`{ "a" : 1 }`)) != `{"a":1}` || Key(json.RawMessage(`1`)) == Key(json.RawMessage(`"1"`)) {
		t.Error("Key must compact and keep 1 and \"1\" apart")
	}
}

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	m := Message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Result: json.RawMessage(`{"text":"<b>a & b</b>"}`)}
	b, err := Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"text":"<b>a & b</b>"}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestErrorResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   json.RawMessage
		e    ErrorObject
		want string
	}{
		{"null id", nil, ErrorObject{CodeParseError, "not <json>", nil}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not <json>"}}`},
		{"data", json.RawMessage(`"a"`), ErrorObject{CodeMethodNotFound, "m", map[string]string{"kind": "readOnly"}}, `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"m","data":{"kind":"readOnly"}}}`},
		{"unencodable data dropped", json.RawMessage(`1`), ErrorObject{CodeInternalError, "m", func() {}}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(ErrorResponse(tc.id, tc.e)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
