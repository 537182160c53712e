package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Member returns the value of the member of the JSON object obj whose key
// is exactly name, nil when there is none: the strict reader of one member
// that every check in this module uses, so that a check and a server read
// the same member. ok is false when obj is not an object, or when a key
// equal to name ignoring case appears twice or spelled otherwise:
// encoding/json matches keys without regard to case and keeps the last
// duplicate, while the SDKs match exactly, so the two would read different
// members and the caller must refuse to decide on either.
//
// A plain object (valid JSON, no escaped keys: what clients send) is read
// by PlainMember's scan, which decodes nothing; anything else by
// encoding/json's tokenizer, which decides the odd cases (FuzzMember holds
// the two to one answer).
func Member(obj []byte, name string) (val []byte, ok bool) {
	if v, plain := PlainMember(obj, name, nil); plain && valid(obj) {
		return v, true
	}
	return decodeMember(obj, name)
}

// MemberString is Member for a string member; ok is false when the member
// is absent, ambiguous or not a string (null reads as "").
func MemberString(obj []byte, name string) (string, bool) {
	raw, ok := Member(obj, name)
	if !ok || raw == nil {
		return "", false
	}
	if raw[0] == '"' { // valid JSON: a whole string, quotes included
		// Without escapes and in valid UTF-8 it is what encoding/json
		// would decode, without its decoder.
		if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
			return string(s), true
		}
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeMember is Member by encoding/json's tokenizer.
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
