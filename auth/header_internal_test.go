package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzHeaderMembers: the JOSE header's reader, which passes over values
// rather than walking them, must read exactly the members encoding/json
// reads, and refuse only what it says it refuses: a top-level name twice
// (which the full scan finds too) or more than maxHeaderMembers members.
func FuzzHeaderMembers(f *testing.F) {
	for _, seed := range []string{
		`{"alg":"RS256","typ":"at+jwt","kid":"k1"}`, `{"alg":"HS256","alg":"none"}`,
		`{"alg":"HS256","\u0061lg":"none"}`, `{"x":{"a":1,"a":2},"alg":"RS256"}`,
		`{"crit":null}`, `{"alg":"RS256"} {}`, `{"alg":"RS256"}x`, `[1]`, `{"a":[{"b":[]}],"c":"\ud800"}`,
		"{\"a\xff\":1,\"a\xfe\":2}", ` { "alg" : "RS256" } `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := headerMembers(data)
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(data, &want)
		if err == nil {
			if wantErr != nil {
				t.Fatalf("read %q, which encoding/json refuses (%v)", data, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("%q: %d members, encoding/json reads %d", data, len(got), len(want))
			}
			for name, v := range want {
				if !bytes.Equal(got[name], v) {
					t.Fatalf("%q: member %q is %q, encoding/json reads %q", data, name, got[name], v)
				}
			}
			return
		}
		switch {
		case errors.Is(err, errDuplicateMember):
			if uniqueMembers(data) == nil {
				t.Fatalf("%q: refused as a duplicate the full scan does not find", data)
			}
		case errors.Is(err, errHeaderMembers):
			if wantErr != nil || (len(want) <= maxHeaderMembers && uniqueMembers(data) == nil) {
				t.Fatalf("%q: refused for its members, encoding/json reads %d (%v)", data, len(want), wantErr)
			}
		case wantErr == nil && want != nil: // not JSON null, which is no object
			t.Fatalf("%q: refused (%v), encoding/json reads it", data, err)
		}
	})
}
