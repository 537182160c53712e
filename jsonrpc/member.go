package jsonrpc

// The members of an object read without decoding it: the common
// message's top level (eachMember) and the one strict reader of a member
// (Member), on the bytes of valid JSON.

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// eachMember calls fn with the raw key (between its quotes, escapes not
// undone) and the raw value of each member of the object obj, in order,
// until fn returns false. obj must be valid JSON; eachMember reports false
// when it is not an object or fn stopped it.
func eachMember(obj []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		ke := stringEnd(obj, i)
		key := obj[i+1 : max(ke-1, i+1)]
		i = skipSpace(obj, ke) // at ':'
		vs := skipSpace(obj, i+1)
		if vs >= len(obj) {
			return false
		}
		ve := valueEnd(obj, vs)
		if !fn(key, obj[vs:ve]) {
			return false
		}
		i = ve
	}
}

// PlainMember returns the value of the member of the object obj (valid
// JSON, such as a member of a decoded Message) named exactly name, nil when
// there is none, by a scan that decodes nothing. It reports false, leaving
// the answer to encoding/json, when obj is not an object, a key holds an
// escape, a key other than name equals it ignoring case (encoding/json's
// rule), name appears twice, or check (when not nil) refuses some member.
func PlainMember(obj []byte, name string, check func(key, val []byte) bool) ([]byte, bool) {
	var found []byte
	ok := eachMember(obj, func(key, val []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 || (check != nil && !check(key, val)) {
			return false
		}
		if string(key) == name {
			if found != nil {
				return false
			}
			found = val
			return true
		}
		return !bytes.EqualFold(key, []byte(name))
	})
	return found, ok
}

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

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the string that starts at data[i]
// (a '"'). In valid JSON a quote ends the string unless an odd number of
// backslashes precedes it.
func stringEnd(data []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return len(data)
		}
		j += q
		n := 0
		for k := j - 1; k > i && data[k] == '\\'; k-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// valueEnd returns the index after the JSON value that starts at data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = stringEnd(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// plainString reports whether the JSON value s is a string that holds
// printable ASCII only, with no escapes: its bytes are then exactly what
// encoding/json would write. Any other value (true, null, 12) is not a
// string at all: encoding/json refuses it for a string field, and so must
// the fast path, rather than read it without its first and last byte.
func plainString(s []byte) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for _, c := range s[1 : len(s)-1] {
		if c < 0x20 || c > 0x7e || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}
