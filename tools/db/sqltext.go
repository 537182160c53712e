package db

import (
	"strings"
	"unicode"
)

// Split cuts SQL text into statements at top-level semicolons, skipping
// quoted strings and identifiers, comments and PostgreSQL dollar quotes.
// Empty statements are dropped. It does not understand SQLite trigger
// bodies (BEGIN … END), which the tools that call it refuse anyway.
func Split(sql string) []string {
	var out []string
	start := 0
	// In a CREATE statement, BEGIN … END (an SQLite trigger body, a
	// PostgreSQL BEGIN ATOMIC body) and CASE … END nest, and a semicolon
	// inside them does not end the statement.
	first, depth := "", 0
	flush := func(end int) {
		if s := strings.TrimSpace(sql[start:end]); s != "" && Keywords(s, 1) != nil {
			out = append(out, s)
		}
		start = end + 1
		first, depth = "", 0
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			w := strings.ToUpper(sql[i:j])
			switch {
			case first == "":
				first = w
			case first == "CREATE" && (w == "BEGIN" || w == "CASE"):
				depth++
			case first == "CREATE" && w == "END" && depth > 0:
				depth--
			}
			i = j - 1
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i, c)
		case c == '[':
			if j := strings.IndexByte(sql[i:], ']'); j >= 0 {
				i += j
			} else {
				i = len(sql)
			}
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(sql)
			}
		case c == '$':
			if tag, ok := dollarTag(sql[i:]); ok {
				if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
					i += len(tag) + j + len(tag) - 1
				} else {
					i = len(sql)
				}
			}
		case c == ';' && depth == 0:
			flush(i)
		}
	}
	if start < len(sql) {
		flush(len(sql))
	}
	return out
}

func skipQuoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q { // a doubled quote
				j++
				continue
			}
			return j
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ opening s, if s opens a dollar quote.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := rune(s[j])
		if c == '$' {
			return s[:j+1], true
		}
		if !(c == '_' || unicode.IsLetter(c) || (j > 1 && unicode.IsDigit(c))) {
			return "", false
		}
	}
	return "", false
}

// Keywords returns the first n words of a statement, upper-cased, after
// leading whitespace, comments and parentheses. Quoted identifiers end the
// scan.
func Keywords(stmt string, n int) []string {
	var words []string
	s := stmt
	for len(words) < n {
		s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(s, "--"):
			if j := strings.IndexByte(s, '\n'); j >= 0 {
				s = s[j:]
				continue
			}
			return words
		case strings.HasPrefix(s, "/*"):
			if j := strings.Index(s, "*/"); j >= 0 {
				s = s[j+2:]
				continue
			}
			return words
		}
		end := strings.IndexFunc(s, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) })
		if end < 0 {
			end = len(s)
		}
		if end == 0 {
			return words
		}
		words = append(words, strings.ToUpper(s[:end]))
		s = s[end:]
	}
	return words
}

// Quote quotes an identifier for both engines: wrapped in double quotes,
// with inner double quotes doubled.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Qualify quotes schema.name, or just name when schema is empty.
func Qualify(schema, name string) string {
	if schema == "" {
		return Quote(name)
	}
	return Quote(schema) + "." + Quote(name)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// ReadName reads a possibly schema-qualified, possibly double-quoted name
// at the start of s (after white space) and returns its parts as written
// (quotes removed, doubled quotes undone) with whether each was quoted, and
// the rest of s.
func ReadName(s string) (parts []string, quoted []bool, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for {
		var part string
		q := false
		switch {
		case strings.HasPrefix(s, `"`):
			end := skipQuoted(s, 0, '"')
			if end >= len(s) {
				return nil, nil, s
			}
			part, s, q = strings.ReplaceAll(s[1:end], `""`, `"`), s[end+1:], true
		default:
			end := 0
			for end < len(s) && (isWordByte(s[end]) || s[end] == '$') {
				end++
			}
			if end == 0 {
				return parts, quoted, s
			}
			part, s = s[:end], s[end:]
		}
		parts, quoted = append(parts, part), append(quoted, q)
		// SQL allows white space around the dot of a qualified name.
		after := strings.TrimLeftFunc(s, unicode.IsSpace)
		if !strings.HasPrefix(after, ".") {
			return parts, quoted, s
		}
		s = strings.TrimLeftFunc(after[1:], unicode.IsSpace)
	}
}

// StripComments replaces every comment outside quotes with a space, so
// that a parser of statement heads need not know comments.
func StripComments(sql string) string {
	var b strings.Builder
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			j := min(skipQuoted(sql, i, c), len(sql)-1)
			b.WriteString(sql[i : j+1])
			i = j
		case c == '$':
			if tag, ok := dollarTag(sql[i:]); ok {
				end := len(sql)
				if k := strings.Index(sql[i+len(tag):], tag); k >= 0 {
					end = i + len(tag) + k + len(tag)
				}
				b.WriteString(sql[i:end])
				i = end - 1
				continue
			}
			b.WriteByte(c)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			b.WriteByte(' ')
			i += j - 1
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return b.String() + " "
			}
			b.WriteByte(' ')
			i += j + 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
