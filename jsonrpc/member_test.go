package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeMember is what PlainMember stands in for, by encoding/json's
// tokenizer: the member named exactly name, nil when there is none; false
// when obj is not an object, or a key equal to name ignoring case appears
// twice or spelled otherwise.
func decodeMember(obj []byte, name string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var found []byte
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return nil, false
		}
		if !strings.EqualFold(k, name) {
			continue
		}
		if found != nil || k != name {
			return nil, false
		}
		found = raw
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return found, true
}

// checkPlainMember holds PlainMember to decodeMember: where the scan
// answers, it gives encoding/json's answer.
func checkPlainMember(t *testing.T, obj []byte, name string) {
	t.Helper()
	if !json.Valid(obj) {
		return // PlainMember's input is valid JSON (a member of a decoded message)
	}
	got, ok := PlainMember(obj, name, nil)
	if !ok {
		return // left to encoding/json
	}
	want, wantOK := decodeMember(obj, name)
	if !wantOK || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("PlainMember(%q, %q) = %s; encoding/json: %s %v", obj, name, got, want, wantOK)
	}
}

var memberCases = []string{
	`{"name":"echo"}`, `{"Name":"echo"}`, `{"name":"a","name":"b"}`, `{"n\u0061me":"a"}`,
	`{"name":"a","NAME":"b"}`, "{\"na\u212ae\":1}", "{\"\u017fame\":1}", `{"a":"}","name":{"b":[1,"]"]}}`,
	` { "name" : 1 } `, `{}`, `[]`, `"name"`, `null`, `{"a":"\\","name":"e"}`, `{"name":"x\"}"}`,
}

func TestPlainMemberMatchesDecoder(t *testing.T) {
	for _, in := range memberCases {
		for _, name := range []string{"name", "a", "ſame", "missing"} {
			checkPlainMember(t, []byte(in), name)
		}
	}
}

func FuzzPlainMember(f *testing.F) {
	for _, in := range memberCases {
		f.Add([]byte(in), "name")
	}
	f.Fuzz(func(t *testing.T, obj []byte, name string) {
		if !askable(name) {
			t.Skip()
		}
		checkPlainMember(t, obj, name)
	})
}

// askable reports whether name is one a caller can ask for: callers ask
// for constant member names, valid UTF-8 without U+FFFD. encoding/json
// reads invalid UTF-8 in a key as U+FFFD, so for any other name the
// decoder and a byte-exact reader disagree without either being wrong.
func askable(name string) bool {
	return utf8.ValidString(name) && !strings.ContainsRune(name, utf8.RuneError)
}
