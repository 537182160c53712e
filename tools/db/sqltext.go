package db

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Split cuts SQL text into statements where the engine's lexer ends them:
// at semicolons outside quotes and comments, and for a body that may hold
// statements, where the engine reads its end. Statements of only white space
// and comments are dropped.
//
// On SQLite a CREATE [TEMP] TRIGGER ends at "; END" (sqlite3_complete). On
// PostgreSQL, only in a CREATE FUNCTION or PROCEDURE do BEGIN … END (a BEGIN
// ATOMIC body) and CASE … END nest, as psql reads them. The engines check
// the cut again: PostgreSQL runs each statement over the extended protocol,
// which refuses a string of several commands, and the SQLite engine
// prepares one statement and refuses a tail.
func (l Lexer) Split(sql string) []string {
	var out []string
	start := 0
	var pg pgState
	lite := liteStart
	flush := func(end int) {
		// Judged untrimmed: "/* " is a comment to SQLite, "/*" an operator.
		if strings.TrimSpace(l.StripComments(sql[start:end])) != "" {
			out = append(out, strings.TrimSpace(sql[start:end]))
		}
		start = end + 1
		pg, lite = pgState{}, liteStart
	}
	for i := 0; i < len(sql); {
		end, tok := l.next(sql, i)
		var ends bool
		if l.postgres {
			ends = pg.step(sql, i, end, tok)
		} else {
			ends = lite.step(sql, i, end, tok)
		}
		if ends {
			flush(i)
		}
		i = end
	}
	if start < len(sql) {
		flush(len(sql))
	}
	return out
}

// pgState follows a PostgreSQL statement's first words, so that a
// semicolon in a BEGIN ATOMIC body does not end it.
type pgState struct {
	first, kind string
	depth       int
}

// step moves the state over one token and reports whether it was a
// semicolon that ends the statement.
func (s *pgState) step(sql string, i, end int, tok token) bool {
	switch {
	case tok == tokenWord && i > 0 && sql[i-1] == '.':
		// t.end: a qualified column, not a keyword.
	case tok == tokenWord:
		w := strings.ToUpper(sql[i:end])
		switch {
		case s.first == "":
			s.first = w
		case s.first == "CREATE" && s.kind == "":
			if !slices.Contains(createModifiers, w) {
				s.kind = w
			}
		case s.first == "CREATE" && slices.Contains(bodyKinds, s.kind) && (w == "BEGIN" || w == "CASE"):
			s.depth++
		case w == "END" && s.depth > 0:
			s.depth--
		}
	case sql[i] == ';':
		return s.depth == 0
	}
	return false
}

// createModifiers may come between CREATE and the kind of object it
// creates; bodyKinds are the kinds whose body may hold statements.
var (
	createModifiers = []string{"OR", "REPLACE", "TEMP", "TEMPORARY", "CONSTRAINT"}
	bodyKinds       = []string{"FUNCTION", "PROCEDURE"}
)

// Keywords returns the first n words of a statement, upper-cased, after
// leading white space, comments and parentheses. Anything else (a quoted
// identifier, a dot) ends the scan.
func (l Lexer) Keywords(stmt string, n int) []string {
	var words []string
	for i := 0; i < len(stmt) && len(words) < n; {
		end, tok := l.next(stmt, i)
		switch {
		case tok == tokenWord:
			words = append(words, strings.ToUpper(stmt[i:end]))
		case tok == tokenSpace || tok == tokenComment || stmt[i] == '(':
		default:
			return words
		}
		i = end
	}
	return words
}

// StripComments replaces every comment outside quotes with a space, so
// that a parser of statement heads need not know comments.
func (l Lexer) StripComments(sql string) string {
	var b strings.Builder
	for i := 0; i < len(sql); {
		end, tok := l.next(sql, i)
		if tok == tokenComment {
			b.WriteByte(' ')
		} else {
			b.WriteString(sql[i:end])
		}
		i = end
	}
	return b.String()
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

// DDL is the head of a DDL statement as ParseDDL reads it. Names come back
// in stored spelling.
type DDL struct {
	Form   []string // the leading keywords, optional words removed: CREATE TABLE
	Target []string // the object created or altered; nil for an unnamed index
	On     []string // for CREATE INDEX, the table it is on
	Into   []string // for ALTER … SET SCHEMA, the schema the object moves into
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
func (l Lexer) ParseDDL(stmt string, fold func(string) string, forms [][]string) (DDL, bool) {
	var d DDL
	s := l.StripComments(stmt)
	var words []string
	for len(words) < 2 {
		kw := l.Keywords(s, 1)
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
		kw := l.Keywords(s, 1)
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
	if kw := l.Keywords(s, 1); words[0] == "ALTER" && len(kw) == 1 && kw[0] == "ALL" {
		// ALTER TABLE ALL IN TABLESPACE moves every table: no one object.
		return d, false
	}
	createIndex := words[0] == "CREATE" && words[1] == "INDEX"
	rest := s
	if kw := l.Keywords(s, 1); words[1] != "INDEX" || len(kw) != 1 || kw[0] != "ON" { // not an unnamed index
		d.Target, rest = name(s)
	}
	if createIndex {
		// ON must be the next word: a name ReadName cannot read ([ONx],
		// `x` on SQLite) must not make an ON inside it look like the real one.
		if kw := l.Keywords(rest, 1); len(kw) != 1 || kw[0] != "ON" {
			return d, false
		}
		rest = rest[strings.Index(strings.ToUpper(rest), "ON")+2:]
		if kw := l.Keywords(rest, 1); len(kw) == 1 && kw[0] == "ONLY" {
			rest = rest[strings.Index(strings.ToUpper(rest), "ONLY")+4:]
		}
		if d.On, _ = name(rest); len(d.On) == 0 {
			return d, false
		}
	}
	if words[0] == "ALTER" {
		d.Into = l.setSchema(rest, fold)
	}
	return d, createIndex || len(d.Target) > 0
}

// setSchema returns the schema named after SET SCHEMA in s (comments
// already stripped), outside quotes, in stored spelling; nil when there is
// no SET SCHEMA, empty when no name could be read after it. An ALTER that moves its object names a second schema, which a
// guard must check as well as the object.
func (l Lexer) setSchema(s string, fold func(string) string) []string {
	prev := ""
	for i := 0; i < len(s); {
		end, tok := l.next(s, i)
		switch {
		case tok == tokenSpace:
		case tok == tokenWord && prev == "SET" && strings.EqualFold(s[i:end], "SCHEMA"):
			parts, quoted, _ := ReadName(s[end:])
			if parts == nil {
				parts = []string{} // SET SCHEMA and no name read: not nil, so that it is refused
			}
			for j := range parts {
				if !quoted[j] {
					parts[j] = fold(parts[j])
				}
			}
			return parts
		case tok == tokenWord:
			prev = strings.ToUpper(s[i:end])
		default:
			prev = ""
		}
		i = end
	}
	return nil
}

// unicodeName matches the start of a PostgreSQL U&"…" identifier.
var unicodeName = regexp.MustCompile(`(?i)\bU&"`)

// HasUnicodeName reports whether a statement may spell a name as U&"…",
// outside comments: the server decodes its escapes
// (U&"information\005fschema", UESCAPE), which ParseDDL does not, so a
// guard would check another name than the one the statement uses. It
// ignores quotes, to fail closed.
func (l Lexer) HasUnicodeName(stmt string) bool {
	return unicodeName.MatchString(l.StripComments(stmt))
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
