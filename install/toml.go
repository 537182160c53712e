package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The TOML editor, for Codex's config.toml. It works on lines: our entry
// is the table [mcp_servers.NAME] (with its sub-tables), and only the lines
// of that table change; every other line, comment and blank of the file
// stays as it was. The result is checked by a real TOML parser before it is
// written (see verify), so a file this scanner misreads is refused rather
// than damaged.

// tomlLine is one logical statement of the file: a header, a key = value
// (possibly spanning lines), a comment or a blank.
type tomlLine struct {
	start, end int      // bytes, end after the newline
	header     []string // the dotted name of a [table] header, else nil
	arrayTable bool     // [[table]]
	key        []string // the dotted key of a key = value, else nil
	valueStart int      // where the value begins (key = value)
}

func scanTOML(b []byte) ([]tomlLine, error) {
	var out []tomlLine
	for i := 0; i < len(b); {
		l := tomlLine{start: i}
		j := i
		for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
			j++
		}
		switch {
		case j < len(b) && b[j] == '[':
			end, err := statementEnd(b, j, false)
			if err != nil {
				return nil, err
			}
			l.end = end
			text := strings.TrimSpace(stripComment(string(b[j:end])))
			l.arrayTable = strings.HasPrefix(text, "[[")
			text = strings.Trim(text, "[]")
			l.header = splitDotted(text)
		case j >= len(b) || b[j] == '\n' || b[j] == '\r' || b[j] == '#':
			l.end = lineEnd(b, j)
		default:
			eq := indexOutsideQuotes(b[j:], '=')
			if eq < 0 {
				return nil, fmt.Errorf("%w: line %d: expected key = value", errSyntax, 1+bytes.Count(b[:j], []byte("\n")))
			}
			l.key = splitDotted(strings.TrimSpace(string(b[j : j+eq])))
			l.valueStart = j + eq + 1
			end, err := statementEnd(b, l.valueStart, true)
			if err != nil {
				return nil, err
			}
			l.end = end
		}
		out = append(out, l)
		i = l.end
	}
	return out, nil
}

func lineEnd(b []byte, i int) int {
	if n := bytes.IndexByte(b[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(b)
}

// statementEnd finds the end of a statement that starts at i: the newline
// after it, past multi-line strings and arrays or inline tables.
func statementEnd(b []byte, i int, value bool) (int, error) {
	depth := 0
	for i < len(b) {
		c := b[i]
		switch {
		case bytes.HasPrefix(b[i:], []byte(`"""`)) || bytes.HasPrefix(b[i:], []byte(`'''`)):
			q := b[i : i+3]
			k := i + 3
			for {
				n := bytes.Index(b[k:], q)
				if n < 0 {
					return 0, fmt.Errorf("%w: unterminated multi-line string", errSyntax)
				}
				k += n
				if q[0] == '"' && escaped(b, k) {
					k++
					continue
				}
				break
			}
			i = k + 3
			for i < len(b) && b[i] == q[0] { // """"" ends with quotes in the string
				i++
			}
		case c == '"' || c == '\'':
			k := i + 1
			for k < len(b) && b[k] != c && b[k] != '\n' {
				if c == '"' && b[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(b) || b[k] != c {
				return 0, fmt.Errorf("%w: unterminated string", errSyntax)
			}
			i = k + 1
		case c == '#':
			i = lineEnd(b, i) - 1
			if b[i] != '\n' {
				return len(b), nil
			}
		case value && (c == '[' || c == '{'):
			depth++
			i++
		case value && (c == ']' || c == '}'):
			depth--
			i++
		case c == '\n':
			if depth <= 0 {
				return i + 1, nil
			}
			i++
		default:
			i++
		}
	}
	return len(b), nil
}

func escaped(b []byte, k int) bool {
	n := 0
	for k-1-n >= 0 && b[k-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

func stripComment(s string) string {
	if i := indexOutsideQuotes([]byte(s), '#'); i >= 0 {
		return s[:i]
	}
	return s
}

func indexOutsideQuotes(b []byte, want byte) int {
	var q byte
	for i := 0; i < len(b) && b[i] != '\n'; i++ {
		switch c := b[i]; {
		case q != 0:
			if c == '\\' && q == '"' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == want:
			return i
		}
	}
	return -1
}

// splitDotted splits a TOML dotted key: a.b, "a.b".c, 'x'.
func splitDotted(s string) []string {
	var parts []string
	for s = strings.TrimSpace(s); s != ""; {
		var part string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return append(parts, s)
			}
			if json.Unmarshal([]byte(s[:end+1]), &part) != nil {
				part = s[1:end]
			}
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return append(parts, s)
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			end := strings.IndexByte(s, '.')
			if end < 0 {
				end = len(s)
			}
			part, s = strings.TrimSpace(s[:end]), s[end:]
		}
		parts = append(parts, part)
		s = strings.TrimSpace(s)
		s = strings.TrimPrefix(s, ".")
		s = strings.TrimSpace(s)
	}
	return parts
}

func hasPrefix(name, prefix []string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := range prefix {
		if name[i] != prefix[i] {
			return false
		}
	}
	return true
}

// tomlKey renders one part of a dotted key, bare when it can be.
func tomlKey(k string) string {
	bare := k != ""
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			bare = false
		}
	}
	if bare {
		return k
	}
	return tomlString(k)
}

// tomlString renders a TOML basic string; JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimRight(b.String(), "\n")
}

// tomlValue renders a string or a list of strings (all an entry holds).
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("install: no TOML form for %T", v))
}

// tomlTable locates table's header and the statements of its body (up to
// the next header); sub-tables are table.X headers after it.
type tomlTable struct {
	header int // index into lines, -1 when absent
	body   []int
	subEnd int // index of the first line after the table and its sub-tables
}

func findTable(lines []tomlLine, table []string) tomlTable {
	t := tomlTable{header: -1}
	for i, l := range lines {
		if l.header != nil && !l.arrayTable && len(l.header) == len(table) && hasPrefix(l.header, table) {
			t.header = i
			break
		}
	}
	if t.header < 0 {
		return t
	}
	i := t.header + 1
	for ; i < len(lines) && lines[i].header == nil; i++ {
		t.body = append(t.body, i)
	}
	for i < len(lines) && lines[i].header != nil && hasPrefix(lines[i].header, table) {
		i++
		for i < len(lines) && lines[i].header == nil {
			i++
		}
	}
	t.subEnd = i
	return t
}

// setTOMLTable makes table hold the keys of entry (owned keys absent from
// entry are removed; other keys of the table stay). It returns the new
// document.
func setTOMLTable(doc []byte, table []string, entry map[string]any, owned []string) ([]byte, error) {
	lines, err := scanTOML(doc)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(entry))
	for k := range entry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nl := "\n" // new lines end as the file's do
	if bytes.Contains(doc, []byte("\r\n")) {
		nl = "\r\n"
	}
	t := findTable(lines, table)
	if t.header < 0 {
		var b bytes.Buffer
		b.Write(doc)
		if len(doc) > 0 && doc[len(doc)-1] != '\n' {
			b.WriteString(nl)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			b.WriteString(nl)
		}
		parts := make([]string, len(table))
		for i, p := range table {
			parts[i] = tomlKey(p)
		}
		fmt.Fprintf(&b, "[%s]%s", strings.Join(parts, "."), nl)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s%s", tomlKey(k), tomlValue(entry[k]), nl)
		}
		return b.Bytes(), nil
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	seen := map[string]bool{}
	insertAt := lines[t.header].end
	for _, i := range t.body {
		l := lines[i]
		if l.key == nil {
			continue
		}
		insertAt = l.end
		if len(l.key) != 1 {
			continue
		}
		k := l.key[0]
		want, mine := entry[k]
		switch {
		case mine:
			seen[k] = true
			old := strings.TrimSpace(stripTrailingComment(string(doc[l.valueStart:l.end])))
			if old != tomlValue(want) {
				edits = append(edits, edit{l.valueStart, l.end, " " + tomlValue(want) + nl})
			}
		case contains(owned, k):
			edits = append(edits, edit{l.start, l.end, ""})
		}
	}
	var add strings.Builder
	for _, k := range keys {
		if !seen[k] {
			fmt.Fprintf(&add, "%s = %s%s", tomlKey(k), tomlValue(entry[k]), nl)
		}
	}
	if add.Len() > 0 {
		prefix := ""
		if insertAt > 0 && doc[insertAt-1] != '\n' {
			prefix = nl
		}
		edits = append(edits, edit{insertAt, insertAt, prefix + add.String()})
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), doc...)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out, nil
}

// stripTrailingComment drops a # comment from a one-line value.
func stripTrailingComment(s string) string {
	if strings.Contains(s, "\n") && strings.Count(s, "\n") > 1 {
		return s
	}
	return stripComment(s)
}

// removeTOMLTable deletes table and its sub-tables, with the blank line
// the insertion put before it.
func removeTOMLTable(doc []byte, table []string) ([]byte, bool, error) {
	lines, err := scanTOML(doc)
	if err != nil {
		return nil, false, err
	}
	t := findTable(lines, table)
	if t.header < 0 {
		return doc, false, nil
	}
	start := lines[t.header].start
	end := len(doc)
	if t.subEnd < len(lines) {
		end = lines[t.subEnd].start // the blank before our header now separates the next one
	} else if t.header > 0 && isBlank(doc, lines[t.header-1]) {
		start = lines[t.header-1].start
	}
	out := append(append([]byte(nil), doc[:start]...), doc[end:]...)
	return out, true, nil
}

func isBlank(doc []byte, l tomlLine) bool {
	return l.header == nil && l.key == nil && len(bytes.TrimSpace(doc[l.start:l.end])) == 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
