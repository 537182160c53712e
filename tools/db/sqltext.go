package db

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Split cuts SQL text into statements at top-level semicolons, skipping
// quoted strings and identifiers, PostgreSQL escape strings (E'…') and
// dollar quotes, and comments. Empty statements are dropped. Only in a
// CREATE FUNCTION, PROCEDURE or TRIGGER do BEGIN … END (an SQLite trigger
// body, a PostgreSQL BEGIN ATOMIC body) and CASE … END nest, so that a
// semicolon inside them does not end the statement.
//
// Where the two engines' lexers differ (E'…' and $…$ are PostgreSQL's),
// Split follows PostgreSQL. It is a convenience, not a guard: PostgreSQL
// runs each statement over the extended protocol, which refuses a string of
// several commands, so a wrong cut fails rather than runs unchecked SQL.
func Split(sql string) []string {
	var out []string
	start := 0
	first, kind, depth := "", "", 0
	flush := func(end int) {
		if s := strings.TrimSpace(sql[start:end]); s != "" && Keywords(s, 1) != nil {
			out = append(out, s)
		}
		start = end + 1
		first, kind, depth = "", "", 0
	}
	for i := 0; i < len(sql); {
		end, tok := nextToken(sql, i)
		switch {
		case tok == tokenWord && i > 0 && sql[i-1] == '.':
			// new.begin, t.end: a qualified column, not a keyword.
		case tok == tokenWord:
			w := strings.ToUpper(sql[i:end])
			switch {
			case first == "":
				first = w
			case first == "CREATE" && kind == "":
				if !slices.Contains(createModifiers, w) {
					kind = w
				}
			case first == "CREATE" && slices.Contains(bodyKinds, kind) && (w == "BEGIN" || w == "CASE"):
				depth++
			case w == "END" && depth > 0:
				depth--
			}
		case sql[i] == ';' && depth == 0:
			flush(i)
		}
		i = end
	}
	if start < len(sql) {
		flush(len(sql))
	}
	return out
}

// createModifiers may come between CREATE and the kind of object it
// creates; bodyKinds are the kinds whose body may hold statements.
var (
	createModifiers = []string{"OR", "REPLACE", "TEMP", "TEMPORARY", "CONSTRAINT"}
	bodyKinds       = []string{"FUNCTION", "PROCEDURE", "TRIGGER"}
)

type token int

const (
	tokenOther   token = iota // a literal, a quoted name, or one byte
	tokenWord                 // a keyword or unquoted identifier
	tokenComment              // -- … or /* … */
)

// nextToken scans the token at sql[i] and returns the index just past it.
// A word may hold $ after its first character, as an identifier may on
// both engines (x$a$ is a name, not a dollar quote). An unterminated quote
// or comment runs to the end.
func nextToken(sql string, i int) (int, token) {
	c := sql[i]
	switch {
	case isWordByte(c):
		j := i + 1
		for j < len(sql) && (isWordByte(sql[j]) || sql[j] == '$' && !isDigit(c)) {
			j++
		}
		if j == i+1 && (c == 'E' || c == 'e') && j < len(sql) && sql[j] == '\'' {
			return min(skipEscaped(sql, j)+1, len(sql)), tokenOther
		}
		return j, tokenWord
	case c == '\'' || c == '"' || c == '`':
		return min(skipQuoted(sql, i, c)+1, len(sql)), tokenOther
	case c == '[':
		if j := strings.IndexByte(sql[i:], ']'); j >= 0 {
			return i + j + 1, tokenOther
		}
		return len(sql), tokenOther
	case c == '-' && strings.HasPrefix(sql[i:], "--"):
		if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
			return i + j, tokenComment
		}
		return len(sql), tokenComment
	case c == '/' && strings.HasPrefix(sql[i:], "/*"):
		if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
			return i + j + 4, tokenComment
		}
		return len(sql), tokenComment
	case c == '$':
		if tag, ok := dollarTag(sql[i:]); ok {
			if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
				return i + len(tag) + j + len(tag), tokenOther
			}
			return len(sql), tokenOther
		}
	}
	return i + 1, tokenOther
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

// skipEscaped returns the index of the quote that closes the PostgreSQL
// escape string whose opening quote is s[i]: a backslash escapes the next
// byte, and a doubled quote is a quote.
func skipEscaped(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\':
			j++
		case s[j] == '\'' && j+1 < len(s) && s[j+1] == '\'':
			j++
		case s[j] == '\'':
			return j
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ opening s, if s opens a dollar quote: the tag
// is letters, digits (not first), underscores and non-ASCII bytes, as in
// PostgreSQL's lexer.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return s[:j+1], true
		}
		if !isWordByte(c) || j == 1 && isDigit(c) {
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
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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
	for i := 0; i < len(sql); {
		end, tok := nextToken(sql, i)
		if tok == tokenComment {
			b.WriteByte(' ')
		} else {
			b.WriteString(sql[i:end])
		}
		i = end
	}
	return b.String()
}

// DDL is the head of a DDL statement as ParseDDL reads it. Names come back
// in stored spelling.
type DDL struct {
	Form   []string // the leading keywords, optional words removed: CREATE TABLE
	Target []string // the object created or altered; nil for an unnamed index
	On     []string // for CREATE INDEX, the table it is on
}

// DDLForms are the statements apply_ddl runs; RoutineForms those
// create_or_replace_routine runs. Each is its leading keywords, optional
// words removed.
var (
	DDLForms = [][]string{
		{"CREATE", "TABLE"}, {"CREATE", "VIEW"}, {"CREATE", "INDEX"},
		{"ALTER", "TABLE"}, {"ALTER", "VIEW"}, {"ALTER", "INDEX"},
	}
	RoutineForms = [][]string{{"CREATE", "FUNCTION"}, {"CREATE", "PROCEDURE"}}
)

// optionalWords may appear between the keywords of a DDL statement or
// before its name.
var optionalWords = []string{"OR", "REPLACE", "TEMP", "TEMPORARY", "UNLOGGED", "GLOBAL", "LOCAL", "RECURSIVE", "UNIQUE", "CONCURRENTLY", "IF", "NOT", "EXISTS", "ONLY", "MATERIALIZED"}

// ParseDDL reads a DDL statement's form (e.g. CREATE TABLE), the object it
// creates or alters, and for CREATE INDEX the table it is on; fold gives an
// unquoted name its stored spelling (Catalog.Fold). It reports false when
// the statement is not one of forms or names no object; Form is set
// whenever two keywords were read, so that a refusal can say what it was.
func ParseDDL(stmt string, fold func(string) string, forms [][]string) (DDL, bool) {
	var d DDL
	s := StripComments(stmt)
	var words []string
	for len(words) < 2 {
		kw := Keywords(s, 1)
		if len(kw) == 0 {
			return d, false
		}
		idx := strings.Index(strings.ToUpper(s), kw[0])
		s = s[idx+len(kw[0]):]
		if len(words) == 1 && slices.Contains(optionalWords, kw[0]) {
			continue
		}
		words = append(words, kw[0])
	}
	d.Form = words
	if !slices.ContainsFunc(forms, func(f []string) bool { return slices.Equal(f, words) }) {
		return d, false
	}
	// Skip IF NOT EXISTS, CONCURRENTLY, ONLY … before the name.
	for {
		kw := Keywords(s, 1)
		if len(kw) == 0 || !slices.Contains(optionalWords, kw[0]) {
			break
		}
		idx := strings.Index(strings.ToUpper(s), kw[0])
		s = s[idx+len(kw[0]):]
	}
	name := func(s string) ([]string, string) {
		parts, quoted, rest := ReadName(s)
		for i := range parts {
			if !quoted[i] {
				parts[i] = fold(parts[i])
			}
		}
		return parts, rest
	}
	createIndex := words[0] == "CREATE" && words[1] == "INDEX"
	rest := s
	if kw := Keywords(s, 1); words[1] != "INDEX" || len(kw) != 1 || kw[0] != "ON" { // not an unnamed index
		d.Target, rest = name(s)
	}
	if createIndex {
		i := strings.Index(strings.ToUpper(rest), "ON")
		if i < 0 {
			return d, false
		}
		rest = rest[i+2:]
		if kw := Keywords(rest, 1); len(kw) == 1 && kw[0] == "ONLY" {
			rest = rest[strings.Index(strings.ToUpper(rest), "ONLY")+4:]
		}
		if d.On, _ = name(rest); len(d.On) == 0 {
			return d, false
		}
	}
	return d, createIndex || len(d.Target) > 0
}

// unicodeName matches the start of a PostgreSQL U&"…" identifier.
var unicodeName = regexp.MustCompile(`(?i)\bU&"`)

// HasUnicodeName reports whether a statement may spell a name as U&"…",
// outside comments: the server decodes its escapes
// (U&"information\005fschema", UESCAPE), which ParseDDL does not, so a
// guard would check another name than the one the statement uses. It
// ignores quotes, to fail closed.
func HasUnicodeName(stmt string) bool {
	return unicodeName.MatchString(StripComments(stmt))
}

// SplitName splits a parsed name into schema ("" when unqualified) and name.
func SplitName(parts []string) (schema, name string) {
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	default:
		return parts[len(parts)-2], parts[len(parts)-1]
	}
}
