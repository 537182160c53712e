package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"a\x7fb\"", `"abc`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `+1`, `0x1`,
	`true`, `false`, `null`, `tru`, `nul`, `nulll`, `True`, `1 2`, `{} {}`, `[1 2]`, `{"a":1 "b":2}`,
	`[[[[]]]]`, `[[[[]]]`, `[}`, `{]`, `{"a":[1,{"b":null}],"c":"}"}`, " \t\r\n[1]\n", "\xff", `"\xff\xfe"`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
}

func TestValidMatchesJSONValid(t *testing.T) {
	for _, in := range validCases {
		if got, want := valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("valid(%.40q): got %v, want %v", in, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, in := range validCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := valid(in), json.Valid(in); got != want {
			t.Fatalf("valid(%q): got %v, want %v", in, got, want)
		}
	})
}
