package jsonrpc

// The byte scanner: what json.Valid reports, in one pass, and the fast
// decoding of the common message (its members are read in member.go).
// Everything here works on the bytes of valid JSON, or checks that they
// are.

import "encoding/binary"

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
