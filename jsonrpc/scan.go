package jsonrpc

// The byte scanner: what json.Valid reports, in one pass, and the members
// of an object read without decoding it (the common message's top level,
// and the one strict reader of a member, Member). Everything here works
// on the bytes of valid JSON, or checks that they are.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: json.Valid refuses deeper
// input, and so does valid.
const maxDepth = 10000

// stringStop marks the bytes that end a run of plain string content: the
// closing quote, a backslash and the control characters JSON forbids
// unescaped (RFC 8259 §7).
var stringStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// valid reports exactly what json.Valid reports (RFC 8259 syntax, no check
// of UTF-8, at most maxDepth levels of nesting), in one tight pass: the
// encoding/json scanner calls a function per byte, and a worker's answer
// can be hundreds of KiB. FuzzValid holds it to json.Valid.
func valid(data []byte) bool {
	ok, _ := validLines(data)
	return ok
}

// Valid is valid for other packages: what json.Valid reports, in one pass.
func Valid(data []byte) bool { return valid(data) }

// validLines is valid, and reports too whether data holds a line break (a
// CR or LF, which valid JSON holds only as whitespace between tokens), in
// the same pass.
func validLines(data []byte) (ok, breaks bool) {
	var stackBuf [32]byte
	stack := stackBuf[:0] // '{' or '[' per open level
	i := skipWS(data, &breaks, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false, breaks
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return false, breaks
			}
			i = skipWS(data, &breaks, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = validKey(data, i, &breaks); i < 0 {
					return false, breaks
				}
			}
			continue
		case '"':
			if i = validString(data, i); i < 0 {
				return false, breaks
			}
		case 't':
			if i = validLiteral(data, i, "true"); i < 0 {
				return false, breaks
			}
		case 'f':
			if i = validLiteral(data, i, "false"); i < 0 {
				return false, breaks
			}
		case 'n':
			if i = validLiteral(data, i, "null"); i < 0 {
				return false, breaks
			}
		default:
			if i = validNumber(data, i); i < 0 {
				return false, breaks
			}
		}
		// A value ended before i: close levels until another value is due.
		for {
			i = skipWS(data, &breaks, i)
			if len(stack) == 0 {
				return i == len(data), breaks
			}
			if i >= len(data) {
				return false, breaks
			}
			top := stack[len(stack)-1]
			if data[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if data[i] != ',' {
				return false, breaks
			}
			i = skipWS(data, &breaks, i+1)
			if top == '{' {
				if i = validKey(data, i, &breaks); i < 0 {
					return false, breaks
				}
			}
			break
		}
	}
}

// validKey checks a member's key and colon at data[i] and returns the index
// of its value, or -1.
func validKey(data []byte, i int, breaks *bool) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = validString(data, i); i < 0 {
		return -1
	}
	i = skipWS(data, breaks, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipWS(data, breaks, i+1)
}

// skipWS is skipSpace that sets *breaks when it skips a CR or LF.
func skipWS(data []byte, breaks *bool, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t':
			i++
		case '\r', '\n':
			*breaks = true
			i++
		default:
			return i
		}
	}
	return i
}

// validString checks the string starting at data[i] (a '"') and returns
// the index after it, or -1.
func validString(data []byte, i int) int {
	j := i + 1
	for {
		j = plainRun(data, j)
		if j >= len(data) {
			return -1
		}
		switch data[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(data) {
				return -1
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) {
					return -1
				}
				for _, h := range data[j+2 : j+6] {
					if !isHex(h) {
						return -1
					}
				}
				j += 6
			default:
				return -1
			}
		default:
			return -1 // a control character
		}
	}
}

// plainRun returns the index of the first byte at or after j that ends a
// run of plain string content (see stringStop), or len(data): 32, then 8
// bytes at a time while none of them does, a string's long runs being most
// of a large result.
func plainRun(data []byte, j int) int {
	for ; j+32 <= len(data); j += 32 {
		w := data[j : j+32]
		if stops(binary.LittleEndian.Uint64(w))|stops(binary.LittleEndian.Uint64(w[8:]))|
			stops(binary.LittleEndian.Uint64(w[16:]))|stops(binary.LittleEndian.Uint64(w[24:])) != 0 {
			break
		}
	}
	for ; j+8 <= len(data); j += 8 {
		if stops(binary.LittleEndian.Uint64(data[j:])) != 0 {
			break
		}
	}
	for j < len(data) && !stringStop[data[j]] {
		j++
	}
	return j
}

// stops is not 0 exactly when one of the eight bytes of w ends a run of
// plain string content: a byte < 0x20, '"' or '\\' (the "has a byte less
// than" and "has a zero byte" tests, which are exact about whether there is
// one).
func stops(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q, b := w^(lo*'"'), w^(lo*'\\')
	return ((w-lo*0x20)&^w | (q-lo)&^q | (b-lo)&^b) & hi
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validLiteral checks that lit is at data[i] and returns the index after it,
// or -1.
func validLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber checks the number at data[i] (RFC 8259 §6) and returns the
// index after it, or -1.
func validNumber(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// decodeFast reads the top level of data, which must be valid JSON (the
// scanning below relies on it), and reports false for anything but the
// common message described at Decode.
func decodeFast(data []byte) (*Message, bool) {
	m := &Message{plain: true}
	var seen uint8
	ok := eachMember(data, func(key, val []byte) bool {
		var bit uint8
		switch string(key) {
		case "jsonrpc":
			if string(val) != `"2.0"` {
				return false
			}
			bit, m.JSONRPC = 1, "2.0"
		case "id":
			bit, m.ID = 2, val
		case "method":
			if !plainString(val) {
				return false
			}
			bit, m.Method = 4, string(val[1:len(val)-1])
		case "params":
			bit, m.Params = 8, val
		case "result":
			bit, m.Result = 16, val
		case "error":
			bit, m.Error = 32, val
		default:
			// Another member, a key in another case or with escapes:
			// encoding/json decides, as it always has.
			return false
		}
		if seen&bit != 0 {
			return false // a duplicate: likewise
		}
		seen |= bit
		return true
	})
	return m, ok
}

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
