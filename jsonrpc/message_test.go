package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// decodeCases are messages Decode must read exactly as json.Unmarshal does:
// the fast path's, and the ones it must leave to encoding/json.
var decodeCases = []struct {
	name, in string
	plain    bool // read on the fast path
}{
	{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
	{"response", `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"x"}]}}`, true},
	{"error", `{"id":7,"jsonrpc":"2.0","error":{"code":-32601,"message":"no"}}`, true},
	{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}`, true},
	{"spaces", " \t{ \"jsonrpc\" : \"2.0\" , \"id\" : 1.5e3 , \"result\" : { \"a\" : [ 1 , 2 ] } } ", true},
	{"tricky strings", `{"jsonrpc":"2.0","id":"x\"}","result":{"t":"a\\\"b\\\\","u":"}{][,:\u0022","v":[{"w":"\\"}]}}`, true},
	{"null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, true},
	{"null params", `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, true},
	{"html", `{"jsonrpc":"2.0","id":1,"result":{"text":"<b>a & b</b>"}}`, true},
	{"empty method", `{"jsonrpc":"2.0","id":1,"method":"","result":{}}`, true},
	{"duplicate id", `{"jsonrpc":"2.0","id":1,"method":"m","id":2}`, false},
	{"duplicate params", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"},"params":{"name":"b"}}`, false},
	{"key in other case", `{"jsonrpc":"2.0","ID":1,"method":"m"}`, false},
	{"key with escape", `{"jsonrpc":"2.0","\u0069d":1,"method":"m"}`, false},
	{"key with unicode fold", `{"jsonrpc":"2.0","id":1,"method":"m","paramſ":{}}`, false},
	{"other member", `{"jsonrpc":"2.0","id":1,"method":"m","extra":true}`, false},
	{"version escaped", `{"jsonrpc":"2\u002e0","id":1,"method":"m"}`, false},
	{"version null", `{"jsonrpc":"2.0","jsonrpc":null,"id":1,"method":"m"}`, false},
	{"version number", `{"jsonrpc":2,"id":1,"method":"m"}`, false},
	{"method escaped", `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, false},
	{"method unicode", `{"jsonrpc":"2.0","id":1,"method":"tööls"}`, false},
	{"method number", `{"jsonrpc":"2.0","id":1,"method":5}`, false},
	{"method two-digit number", `{"jsonrpc":"2.0","id":1,"method":12}`, false},
	{"method true", `{"jsonrpc":"2.0","method":true}`, false},
	{"method null", `{"jsonrpc":"2.0","id":1,"method":null,"result":{}}`, false},
	{"method object", `{"jsonrpc":"2.0","id":1,"method":{"a":1}}`, false},
	{"line break", "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"m\"}", false},
	{"array", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, false},
	{"string", `"x"`, false},
	{"null", `null`, false},
	{"empty object", `{}`, true},
	{"not json", `{"jsonrpc":"2.0","id":1,"method":"m","params":{bad}}`, false},
	{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"m"}x`, false},
	{"truncated", `{"jsonrpc":"2.0","id":1,"method":"m"`, false},
}

func TestDecodeMatchesUnmarshal(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecode(t, []byte(tc.in))
			m, err := Decode([]byte(tc.in))
			if got := err == nil && m.plain; got != tc.plain {
				t.Errorf("got fast path %v, want %v", got, tc.plain)
			}
		})
	}
}

// checkDecode compares Decode with json.Unmarshal into a Message: the same
// error or none, the same members, and Encode writing what Marshal writes
// (up to the whitespace inside params, result and error, which Encode keeps).
func checkDecode(t *testing.T, in []byte) {
	t.Helper()
	var want Message
	wantErr := json.Unmarshal(in, &want)
	got, err := Decode(bytes.Clone(in))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("got error %v, want %v", err, wantErr)
	}
	if err != nil {
		if _, syntax := wantErr.(*json.SyntaxError); syntax {
			if _, ok := err.(*json.SyntaxError); !ok {
				t.Fatalf("got error %T, want a *json.SyntaxError", err)
			}
		}
		return
	}
	if got.JSONRPC != want.JSONRPC || got.Method != want.Method || !bytes.Equal(got.ID, want.ID) ||
		!bytes.Equal(got.Params, want.Params) || !bytes.Equal(got.Result, want.Result) || !bytes.Equal(got.Error, want.Error) {
		t.Fatalf("got %+v, want %+v", *got, want)
	}
	if (got.Validate() == nil) != (want.Validate() == nil) {
		t.Fatalf("got Validate %v, want %v", got.Validate(), want.Validate())
	}
	if want.Validate() != nil {
		return // never encoded
	}
	for _, id := range []json.RawMessage{nil, json.RawMessage(`42`), json.RawMessage(`"c-1"`)} {
		var enc, wantEnc []byte
		if id == nil {
			enc, err = got.Encode()
			wantEnc, _ = Marshal(&want)
		} else {
			enc, err = got.EncodeWithID(id)
			w := want
			w.ID = id
			wantEnc, _ = Marshal(&w)
		}
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, enc); err != nil {
			t.Fatalf("encode wrote %q, not JSON: %v", enc, err)
		}
		if !bytes.Equal(compact.Bytes(), wantEnc) {
			t.Fatalf("encode wrote %s, want %s", enc, wantEnc)
		}
		if bytes.ContainsAny(enc, "\r\n") {
			t.Fatalf("encode wrote a line break: %q", enc)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecode(t, in)
	})
}

// BenchmarkAnswer measures what the gateway does to a worker's answer on
// its way to the client — read it, restore the client's id, write it — for
// a small, a 64 KiB and a 1 MiB result: "encoding/json" is json.Unmarshal
// into a Message and Marshal (the way before Decode), "decode" is Decode and
// EncodeWithID.
func BenchmarkAnswer(b *testing.B) {
	for _, size := range []int{16, 64 << 10, 1 << 20} {
		text := bytes.Repeat([]byte("x"), size)
		line := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"` + string(text) +
			`"}],"structuredContent":{"text":"` + string(text) + `"}}}`)
		clientID := json.RawMessage(`"client-7"`)
		b.Run(fmt.Sprintf("%dB/encoding-json", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				var m Message
				if json.Unmarshal(line, &m) != nil || m.Validate() != nil {
					b.Fatal("not a message")
				}
				m.ID = clientID
				if _, err := Marshal(&m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dB/decode", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				m, err := Decode(line)
				if err != nil || m.Validate() != nil || !m.plain {
					b.Fatal("not a message on the fast path")
				}
				if _, err := m.EncodeWithID(clientID); err != nil {
					b.Fatal(err)
				}
			}
		})
		// "in-place" is Decode and AnswerInPlace, as the worker's reader
		// does for a line longer than its buffer (the copy into the line's
		// own buffer is the reader's, outside this figure).
		own := make([]byte, 256+len(line))
		b.Run(fmt.Sprintf("%dB/in-place", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				copy(own[256:], line) // AnswerInPlace overwrites the head
				m, err := Decode(own[256:])
				if err != nil || m.Validate() != nil {
					b.Fatal("not a message")
				}
				if _, ok := m.AnswerInPlace(own, clientID); !ok {
					b.Fatal("not answered in place")
				}
			}
		})
	}
}

// checkAnswerInPlace holds AnswerInPlace to EncodeWithID: when it writes
// in place, it writes the same bytes, for any line and any room before it.
func checkAnswerInPlace(t *testing.T, in []byte, room int, id json.RawMessage) bool {
	t.Helper()
	m, err := Decode(bytes.Clone(in))
	if err != nil {
		return false
	}
	want, err := m.EncodeWithID(id)
	if err != nil {
		return false
	}
	own := append(bytes.Repeat([]byte{'#'}, room), in...)
	m, _ = Decode(bytes.TrimRight(own[room:], "\r\n")) // as the worker's reader hands it over
	got, ok := m.AnswerInPlace(own, id)
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("in place %q, want %q", got, want)
	}
	return ok
}

func TestAnswerInPlace(t *testing.T) {
	for _, tc := range decodeCases {
		for _, room := range []int{0, 256} {
			checkAnswerInPlace(t, []byte(tc.in), room, json.RawMessage(`"client-7"`))
		}
	}
	for _, tc := range []struct {
		in   string
		room int
		id   string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":17,"result":{"a":"b"}}`, 0, `3`, true},
		{`{"jsonrpc":"2.0","id":17,"result":{"a":"b"}}`, 0, `"client-7"`, false}, // no room for the longer id
		{`{"jsonrpc":"2.0","id":17,"result":{"a":"b"}}`, 256, `"client-7"`, true},
		{`{"jsonrpc":"2.0","id":17,"result":{"a":"b"} }` + "\r\n", 256, `"client-7"`, true},
		{`{"jsonrpc":"2.0","result":{"a":"b"},"id":17}`, 256, `"c"`, false}, // the id after the result
		{`{"jsonrpc":"2.0","id":1,"result":{},"id":17}`, 256, `"c"`, false}, // a duplicate: encoding/json's
		{`{"jsonrpc":"2.0","id":17,"error":{"code":1,"message":"x"}}`, 256, `"c"`, false},
		{`{"jsonrpc":"2.0","id":17,"method":"m","params":{}}`, 256, `"c"`, false},
	} {
		if got := checkAnswerInPlace(t, []byte(tc.in), tc.room, json.RawMessage(tc.id)); got != tc.want {
			t.Errorf("%s with room %d: in place %v, want %v", tc.in, tc.room, got, tc.want)
		}
	}
}

func FuzzAnswerInPlace(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in), 8)
	}
	f.Fuzz(func(t *testing.T, in []byte, room int) {
		checkAnswerInPlace(t, in, room&1023, json.RawMessage(`"c"`))
	})
}
