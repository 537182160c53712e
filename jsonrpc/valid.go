package jsonrpc

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
	var stackBuf [32]byte
	stack := stackBuf[:0] // '{' or '[' per open level
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return false
			}
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = validKey(data, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = validString(data, i); i < 0 {
				return false
			}
		case 't':
			if i = validLiteral(data, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = validLiteral(data, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = validLiteral(data, i, "null"); i < 0 {
				return false
			}
		default:
			if i = validNumber(data, i); i < 0 {
				return false
			}
		}
		// A value ended before i: close levels until another value is due.
		for {
			i = skipSpace(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			if data[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if data[i] != ',' {
				return false
			}
			i = skipSpace(data, i+1)
			if top == '{' {
				if i = validKey(data, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// validKey checks a member's key and colon at data[i] and returns the index
// of its value, or -1.
func validKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = validString(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// validString checks the string starting at data[i] (a '"') and returns
// the index after it, or -1.
func validString(data []byte, i int) int {
	j := i + 1
	for {
		for j < len(data) && !stringStop[data[j]] {
			j++
		}
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
