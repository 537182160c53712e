package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

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

// memberCorpus: objects as clients send them and as an attacker would,
// for holding Member's scan to encoding/json's tokenizer (docs/design.md,
// Two readers).
var memberCorpus = []string{
	`{"name":"echo","arguments":{"name":"x"}}`,
	`{"arguments":{"Name":"x","name":"y"},"name":"echo"}`,
	` { "name" : "echo" , "_meta" : { "progressToken" : 1 } } `,
	`{"n\u0061me":"echo"}`,
	`{"name":"echo","n\u0061me":"write"}`,
	`{"name":"write","Name":"echo"}`,
	`{"Name":"echo"}`,
	`{"NAME":"echo","name":"write"}`,
	`{"name":"echo","name":"write"}`,
	`{"name":"echo","name":"echo"}`,
	`{"nam\u0065":"write","name":"echo"}`,
	"{\"na\u212ae\":\"write\"}",                       // Kelvin sign: folds to k, so not to "name" (a near miss)
	"{\"argument\u017f\":{\"x\":1},\"arguments\":{}}", // long s: folds to s, so equal to "arguments" ignoring case
	"{\"\u212a\":1,\"k\":2}",                          // Kelvin sign: folds to k
	"{\"name\":\"wr\\u0069te\"}",
	"{\"name\":\"\xff\"}", // invalid UTF-8 in the value
	`{"name":7}`, `{"name":null}`, `{"name":{"name":"x"}}`, `{"name":["echo"]}`, `{"name":""}`,
	`{"arguments":{}}`, `{}`, `[]`, `["name","echo"]`, `"name"`, `null`, `7`,
	`{"name":"echo"`, `{"name":"echo"}x`, `{"name":"echo",}`, `{"name" "echo"}`, ``, ` `,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"status"}`,
	`{"a":"}","name":"x\"}"}`, `{"a":"\\","name":"e"}`, `{"a":[{"name":"x"}],"b":1.5e3,"name":"e"}`,
}

// decodeMemberString is MemberString by encoding/json alone.
func decodeMemberString(obj []byte, name string) (string, bool) {
	raw, ok := decodeMember(obj, name)
	if !ok || raw == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// checkMember holds Member and MemberString to encoding/json's tokenizer.
func checkMember(t *testing.T, obj []byte, name string) {
	t.Helper()
	v, ok := Member(obj, name)
	wantV, wantOK := decodeMember(obj, name)
	if ok != wantOK || !bytes.Equal(v, wantV) || (v == nil) != (wantV == nil) {
		t.Fatalf("Member(%q, %q) = %s %v; encoding/json: %s %v", obj, name, v, ok, wantV, wantOK)
	}
	s, ok := MemberString(obj, name)
	wantS, wantOK := decodeMemberString(obj, name)
	if ok != wantOK || s != wantS {
		t.Fatalf("MemberString(%q, %q) = %q %v; encoding/json: %q %v", obj, name, s, ok, wantS, wantOK)
	}
}

// TestMemberMatchesDecoder: Member's scan gives encoding/json's answer on
// every input of the corpus, for several names.
func TestMemberMatchesDecoder(t *testing.T) {
	for _, in := range append(memberCorpus, memberCases...) {
		for _, name := range []string{"name", "arguments", "_meta", "a", "k", "missing", "ſame"} {
			checkMember(t, []byte(in), name)
		}
	}
}

// TestMemberRefusesFoldedKeys: a key that matches only ignoring case is
// never read as the member, alone or beside the exact one: encoding/json
// would fold it, a server would not.
func TestMemberRefusesFoldedKeys(t *testing.T) {
	for _, in := range []string{
		`{"Name":"write"}`, `{"name":"echo","Name":"write"}`, `{"NAME":"write","name":"echo"}`,
		`{"N\u0061me":"write"}`, `{"n\u0061me":"write","name":"echo"}`,
	} {
		v, ok := Member([]byte(in), "name")
		if ok {
			t.Errorf("Member(%s, name) = %s, true; want a refusal", in, v)
		}
	}
	for _, in := range []string{"{\"\u017fame\":\"write\"}", "{\"na\u212ae\":\"write\"}"} {
		// Long s and the Kelvin sign fold to s and k: these keys are not
		// "name" ignoring case, and so are simply other members.
		if v, ok := Member([]byte(in), "name"); !ok || v != nil {
			t.Errorf("Member(%s, name) = %s, %v; want no member", in, v, ok)
		}
	}
}

// BenchmarkMember: a 2026-07-28 request's _meta, read on every POST, by
// the scan and by encoding/json's tokenizer.
func BenchmarkMember(b *testing.B) {
	params := []byte(`{"name":"status","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	for _, f := range []struct {
		name string
		fn   func([]byte, string) ([]byte, bool)
	}{{"scan", Member}, {"decoder", decodeMember}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, ok := f.fn(params, "_meta"); !ok || v == nil {
					b.Fatal(string(v), ok)
				}
			}
		})
	}
}

// FuzzMember holds Member and MemberString to encoding/json's tokenizer
// on any input and any name a caller can ask for.
func FuzzMember(f *testing.F) {
	for _, in := range memberCorpus {
		f.Add([]byte(in), "name")
		f.Add([]byte(in), "_meta")
	}
	f.Fuzz(func(t *testing.T, obj []byte, name string) {
		if !askable(name) {
			t.Skip()
		}
		checkMember(t, obj, name)
	})
}
