package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"a\x7fb\"", `"abc`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `+1`, `0x1`,
	`true`, `false`, `null`, `tru`, `nul`, `nulll`, `True`, `1 2`, `{} {}`, `[1 2]`, `{"a":1 "b":2}`,
	`"0123456789abcdef0123456789abcdef"`, `"0123456789abcd\"f01234567\\9ab"`, "\"0123456789a\x01cdef0123\"",
	"\"0123456789abcde\x1f\"", "\"01234567\xc3\xa9abcdef\x80\xff\"", "{\"a\":\r\n\"01234567012345670123\"}",
	`[[[[]]]]`, `[[[[]]]`, `[}`, `{]`, `{"a":[1,{"b":null}],"c":"}"}`, " \t\r\n[1]\n", "\xff", `"\xff\xfe"`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
}

func TestValidMatchesJSONValid(t *testing.T) {
	for _, in := range validCases {
		checkValid(t, []byte(in))
	}
	// Strings of every length up to 80 with one byte that ends a plain
	// run (or an escape, or a byte above 0x7f) at every place: the 32- and
	// 8-byte steps of plainRun must stop exactly there.
	for n := range 80 {
		for at := range n {
			for _, c := range []string{`"`, `\`, `\n`, "\x00", "\x1f", "\n", "\x7f", "\xc3\xa9", " "} {
				s := strings.Repeat("a", at) + c + strings.Repeat("b", n-at)
				checkValid(t, []byte(`"`+s+`"`))
				checkValid(t, []byte(`{"k":"`+s+`","l":1}`))
			}
		}
	}
}

// checkValid holds validLines to json.Valid, and its line breaks to the
// input's.
func checkValid(t *testing.T, in []byte) {
	t.Helper()
	ok, breaks := validLines(in)
	if want := json.Valid(in); ok != want {
		t.Fatalf("valid(%.40q): got %v, want %v", in, ok, want)
	}
	if want := bytes.ContainsAny(in, "\r\n"); ok && breaks != want {
		t.Fatalf("validLines(%.40q): got line breaks %v, want %v", in, breaks, want)
	}
}

func FuzzValid(f *testing.F) {
	for _, in := range validCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkValid(t, in)
	})
}
