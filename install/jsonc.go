package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The JSON editor. MCP clients keep their settings in JSON files that people
// also edit by hand, and VS Code's and Gemini CLI's allow comments and
// trailing commas (JSONC). encoding/json would drop both and reorder keys,
// so the editor parses the file only far enough to know the byte range of
// each object member, and changes exactly the bytes of the member it owns;
// every other byte of the file stays as it was.

// errSyntax marks a file the editor cannot read; the message says where.
var errSyntax = errors.New("the file cannot be parsed")

// jsonValue is one value of a parsed document: its byte range and, for an
// object, its members.
type jsonValue struct {
	kind       byte // '{', '[', '"' or 'v' (number, true, false, null)
	start, end int  // the value's bytes are doc[start:end]
	members    []jsonMember
}

// jsonMember is one member of an object.
type jsonMember struct {
	key      string
	keyStart int
	value    *jsonValue
	comma    int // offset of the comma after the value, or -1
}

func (v *jsonValue) member(key string) (int, *jsonMember) {
	for i := range v.members {
		if v.members[i].key == key {
			return i, &v.members[i]
		}
	}
	return -1, nil
}

type jsonParser struct {
	b []byte
	i int
}

// parseJSONC parses a JSON document that may hold // and /* */ comments and
// trailing commas. An empty (or blank) document is nil, nil.
func parseJSONC(b []byte) (*jsonValue, error) {
	p := &jsonParser{b: b}
	if err := p.skip(); err != nil {
		return nil, err
	}
	if p.i == len(b) {
		return nil, nil
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.skip(); err != nil {
		return nil, err
	}
	if p.i != len(b) {
		return nil, p.errorf("unexpected %q after the document", b[p.i])
	}
	return v, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	line := 1 + bytes.Count(p.b[:min(p.i, len(p.b))], []byte("\n"))
	return fmt.Errorf("%w: line %d: %s", errSyntax, line, fmt.Sprintf(format, args...))
}

// skip passes whitespace and comments.
func (p *jsonParser) skip() error {
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '/':
			for p.i < len(p.b) && p.b[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '*':
			end := bytes.Index(p.b[p.i+2:], []byte("*/"))
			if end < 0 {
				return p.errorf("unterminated comment")
			}
			p.i += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

const maxDepth = 200

func (p *jsonParser) value(depth int) (*jsonValue, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end of file")
	}
	start := p.i
	switch c := p.b[p.i]; c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		if _, err := p.str(); err != nil {
			return nil, err
		}
		return &jsonValue{kind: '"', start: start, end: p.i}, nil
	default:
		for p.i < len(p.b) && strings.IndexByte("+-.0123456789eEtruefalsn", p.b[p.i]) >= 0 {
			p.i++
		}
		var x any
		if p.i == start || json.Unmarshal(p.b[start:p.i], &x) != nil {
			return nil, p.errorf("unexpected %q", c)
		}
		return &jsonValue{kind: 'v', start: start, end: p.i}, nil
	}
}

func (p *jsonParser) str() (string, error) {
	start := p.i
	p.i++
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
				return "", p.errorf("bad string")
			}
			return s, nil
		case '\n':
			return "", p.errorf("newline in a string")
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) object(depth int) (*jsonValue, error) {
	v := &jsonValue{kind: '{', start: p.i}
	p.i++
	for {
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			v.end = p.i
			return v, nil
		}
		if len(v.members) > 0 && v.members[len(v.members)-1].comma < 0 {
			return nil, p.errorf("expected , or }")
		}
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errorf("expected a member name")
		}
		m := jsonMember{keyStart: p.i, comma: -1}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		m.key = key
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf("expected : after %q", key)
		}
		p.i++
		if err := p.skip(); err != nil {
			return nil, err
		}
		if m.value, err = p.value(depth + 1); err != nil {
			return nil, err
		}
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ',' {
			m.comma = p.i
			p.i++
		}
		v.members = append(v.members, m)
	}
}

func (p *jsonParser) array(depth int) (*jsonValue, error) {
	v := &jsonValue{kind: '[', start: p.i}
	p.i++
	comma := true
	for {
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			v.end = p.i
			return v, nil
		}
		if !comma {
			return nil, p.errorf("expected , or ]")
		}
		if _, err := p.value(depth + 1); err != nil {
			return nil, err
		}
		if err := p.skip(); err != nil {
			return nil, err
		}
		comma = p.i < len(p.b) && p.b[p.i] == ','
		if comma {
			p.i++
		}
	}
}

// decodeJSONC decodes a JSONC value (comments and trailing commas allowed)
// into plain Go values, to compare documents by meaning.
func decodeJSONC(b []byte) (any, error) {
	var out bytes.Buffer
	p := &jsonParser{b: b}
	last := 0
	// Blank out comments and drop trailing commas, keeping everything else.
	for p.i < len(b) {
		switch c := b[p.i]; {
		case c == '"':
			if _, err := p.str(); err != nil {
				return nil, err
			}
		case c == '/':
			out.Write(b[last:p.i])
			if err := p.skip(); err != nil {
				return nil, err
			}
			out.WriteByte(' ')
			last = p.i
		case c == ',':
			out.Write(b[last:p.i])
			p.i++
			last = p.i
			q := &jsonParser{b: b, i: p.i}
			if err := q.skip(); err != nil {
				return nil, err
			}
			if q.i >= len(b) || (b[q.i] != '}' && b[q.i] != ']') {
				out.WriteByte(',')
			}
		default:
			p.i++
		}
	}
	out.Write(b[last:])
	if len(bytes.TrimSpace(out.Bytes())) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	return v, nil
}

// jsonEdit is a document being edited.
type jsonEdit struct {
	doc    []byte
	indent string // one level of indentation, detected from the file
}

func newJSONEdit(doc []byte) *jsonEdit {
	return &jsonEdit{doc: doc, indent: detectIndent(doc)}
}

// detectIndent is the file's indentation unit: the leading whitespace of
// the first indented line, two spaces when there is none.
func detectIndent(doc []byte) string {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) > 0 && len(trimmed) < len(line) && trimmed[0] == '"' {
			return string(line[:len(line)-len(trimmed)])
		}
	}
	return "  "
}

func (e *jsonEdit) root() (*jsonValue, error) {
	v, err := parseJSONC(e.doc)
	if err != nil {
		return nil, err
	}
	if v == nil {
		e.doc = append(e.doc[:len(bytes.TrimRight(e.doc, " \t\r\n"))], []byte("{}\n")...)
		return parseJSONC(e.doc)
	}
	if v.kind != '{' {
		return nil, fmt.Errorf("%w: the document is not an object", errSyntax)
	}
	return v, nil
}

// lookup follows path from the root; nil when a member is missing.
func (e *jsonEdit) lookup(path []string) (*jsonValue, error) {
	v, err := e.root()
	if err != nil {
		return nil, err
	}
	for _, k := range path {
		if v.kind != '{' {
			return nil, fmt.Errorf("install: %q is not an object; fix the file by hand", k)
		}
		_, m := v.member(k)
		if m == nil {
			return nil, nil
		}
		v = m.value
	}
	return v, nil
}

// lineIndent is the leading whitespace of the line holding offset i.
func (e *jsonEdit) lineIndent(i int) string {
	ls := bytes.LastIndexByte(e.doc[:i], '\n') + 1
	j := ls
	for j < len(e.doc) && (e.doc[j] == ' ' || e.doc[j] == '\t') {
		j++
	}
	return string(e.doc[ls:j])
}

// memberIndent is the indentation of obj's members.
func (e *jsonEdit) memberIndent(obj *jsonValue) string {
	if len(obj.members) > 0 {
		return e.lineIndent(obj.members[0].keyStart)
	}
	return e.lineIndent(obj.start) + e.indent
}

// marshal renders v for a place indented by prefix.
func (e *jsonEdit) marshal(v any, prefix string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, e.indent)
	enc.Encode(v) // plain maps, slices and strings: cannot fail
	return bytes.TrimRight(b.Bytes(), "\n")
}

func (e *jsonEdit) splice(start, end int, with []byte) {
	e.doc = append(e.doc[:start:start], append(with, e.doc[end:]...)...)
}

// restOfLineBlank says whether doc[i:] up to the end of its line holds only
// whitespace or a line comment, and returns where that line ends.
func (e *jsonEdit) restOfLineBlank(i int) (bool, int) {
	nl := bytes.IndexByte(e.doc[i:], '\n')
	end := len(e.doc)
	if nl >= 0 {
		end = i + nl
		if end > i && e.doc[end-1] == '\r' {
			end--
		}
	}
	rest := bytes.TrimSpace(e.doc[i:end])
	return len(rest) == 0 || bytes.HasPrefix(rest, []byte("//")), end
}

// set makes obj[key] equal v: the member's value is replaced when it
// differs in meaning, or the member is added after the last one.
func (e *jsonEdit) set(obj *jsonValue, key string, v any) error {
	ind := e.memberIndent(obj)
	raw := e.marshal(v, ind)
	if _, m := obj.member(key); m != nil {
		old, err := decodeJSONC(e.doc[m.value.start:m.value.end])
		if err != nil {
			return err
		}
		if equalJSON(old, v) {
			return nil
		}
		e.splice(m.value.start, m.value.end, raw)
		return nil
	}
	k, _ := json.Marshal(key)
	nl := "\n"
	if bytes.Contains(e.doc, []byte("\r\n")) { // keep a Windows file's line ends
		nl = "\r\n"
		raw = bytes.ReplaceAll(raw, []byte("\n"), []byte(nl))
	}
	line := []byte(nl + ind + string(k) + ": " + string(raw))
	if len(obj.members) == 0 {
		inner := e.doc[obj.start+1 : obj.end-1]
		if len(bytes.TrimSpace(inner)) == 0 {
			e.splice(obj.start+1, obj.end-1, append(line, nl+e.lineIndent(obj.start)...))
		} else { // only comments inside: keep them after the new member
			e.splice(obj.start+1, obj.start+1, line)
		}
		return nil
	}
	last := obj.members[len(obj.members)-1]
	after := last.value.end
	if last.comma >= 0 {
		after = last.comma + 1
		line = append(line, ',') // keep the file's trailing-comma style
	}
	if blank, eol := e.restOfLineBlank(after); blank && bytes.IndexByte(e.doc[last.keyStart:after], '\n') < 0 {
		// "last": 1 // note  →  the new member goes on the next line,
		// the note stays with its member.
		e.splice(eol, eol, line)
		if last.comma < 0 {
			e.splice(after, after, []byte(","))
		}
		return nil
	}
	if last.comma < 0 {
		line = append([]byte(","), line...)
	}
	e.splice(after, after, line)
	return nil
}

// remove deletes obj[key] with its line, the inverse of set's insertion.
func (e *jsonEdit) remove(obj *jsonValue, key string) bool {
	i, m := obj.member(key)
	if m == nil {
		return false
	}
	end := m.value.end
	if m.comma >= 0 {
		end = m.comma + 1
	}
	if blank, eol := e.restOfLineBlank(end); blank {
		end = eol
	}
	start := m.keyStart
	ownLine := strings.TrimSpace(string(e.doc[bytes.LastIndexByte(e.doc[:start], '\n')+1:start])) == ""
	if ownLine {
		start = bytes.LastIndexByte(e.doc[:start], '\n') // take the newline before
		if start > 0 && e.doc[start-1] == '\r' {
			start--
		}
	}
	if i == len(obj.members)-1 && m.comma < 0 && i > 0 {
		prev := obj.members[i-1]
		if !ownLine {
			start = prev.comma
		} else if prev.comma >= 0 {
			// Drop the comma the insertion added, keeping a note after it.
			e.splice(start, end, nil)
			e.splice(prev.comma, prev.comma+1, nil)
			return true
		}
	} else if !ownLine && i+1 < len(obj.members) {
		end = obj.members[i+1].keyStart
	}
	e.splice(start, end, nil)
	if len(obj.members) == 1 {
		// An object left blank collapses to {}.
		inner := e.doc[obj.start+1 : obj.end-1-(end-start)]
		if len(bytes.TrimSpace(inner)) == 0 {
			e.splice(obj.start+1, obj.end-1-(end-start), nil)
		}
	}
	return true
}

// equalJSON compares two decoded values by meaning.
func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	json.Unmarshal(ja, &x)
	json.Unmarshal(jb, &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
