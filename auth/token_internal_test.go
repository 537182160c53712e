package auth

import (
	"encoding/json"
	"testing"
)

// TestStringOrArrayAgreesWithEncodingJSON: the fast path for a plain
// string must read exactly what encoding/json reads, or a check and the
// principal could disagree about aud or scope.
func TestStringOrArrayAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`"https://mcp.example.test/mcp"`, `""`, `"mcp:use mcp:write"`, `"a\"b"`, `"\u0041"`,
		`"caf\u00e9"`, `"café"`, "\"\xff\xfe\"", `"a\\b"`, `"\/"`, `["a","b"]`, `[]`, `null`,
	} {
		s, isString, a, err := stringOrArray([]byte(in))
		if isString {
			var want string
			werr := json.Unmarshal([]byte(in), &want)
			if s != want || (err == nil) != (werr == nil) {
				t.Errorf("%s: got %q (%v), want %q (%v)", in, s, err, want, werr)
			}
			continue
		}
		var want []string
		werr := json.Unmarshal([]byte(in), &want)
		if len(a) != len(want) || (err == nil) != (werr == nil) {
			t.Errorf("%s: got %q (%v), want %q (%v)", in, a, err, want, werr)
		}
	}
}

// TestNullDatesAreAbsent: a null exp, nbf or iat reads as absent, as it
// did when they were pointers: a null exp is a token without expiry.
func TestNullDatesAreAbsent(t *testing.T) {
	var c claims
	if err := json.Unmarshal([]byte(`{"exp":1700000000,"nbf":null,"iat":1.5}`), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Exp.set || c.Nbf.set || !c.Iat.set || c.Exp.Unix() != 1700000000 {
		t.Errorf("got exp %v/%v nbf %v iat %v", c.Exp.set, c.Exp.Time, c.Nbf.set, c.Iat.set)
	}
	if err := json.Unmarshal([]byte(`{"exp":1700000000,"exp":null}`), &c); err != nil || c.Exp.set {
		t.Errorf("a later null exp: got set %v, err %v", c.Exp.set, err)
	}
}
