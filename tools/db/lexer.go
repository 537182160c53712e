package db

import "strings"

// Lexer reads SQL text as one engine's lexer does, as far as statement
// boundaries, comments and quotes go. A tool that checks a statement must
// read it as the engine that runs it will: where the engines differ, a
// reading that follows the other one lets a checked statement hide another
// (PostgreSQL's E'\' reading hides a DELETE after it on SQLite, and a flat
// reading of /* /* */ … */ a DROP after it on PostgreSQL). The zero value
// is SQLiteLexer.
type Lexer struct{ postgres bool }

var (
	// PostgresLexer follows PostgreSQL's scanner (src/backend/parser/scan.l):
	// E'…' escape strings, $tag$ dollar quotes, /* */ comments that nest,
	// and no backtick or bracket quotes.
	PostgresLexer = Lexer{postgres: true}

	// SQLiteLexer follows SQLite's tokenizer (tokenize.c, sqlite3GetToken):
	// '…', "…", `…` and […] quotes, Tcl-style variables that may hold a
	// parenthesised suffix ($a(…)), /* */ comments that do not nest, and no
	// escape strings or dollar quotes; and sqlite3_complete (complete.c) for
	// where a trigger body ends.
	SQLiteLexer = Lexer{}
)

// LexerFor returns the lexer of engine (SQLite or Postgres).
func LexerFor(engine string) Lexer {
	if engine == Postgres {
		return PostgresLexer
	}
	return SQLiteLexer
}

type token int

const (
	tokenOther   token = iota // a literal, a quoted name, an operator or one byte
	tokenWord                 // a keyword or unquoted identifier
	tokenComment              // -- … or /* … */
	tokenSpace                // white space
)

// next scans the token at sql[i] and returns the index just past it. An
// unterminated quote or comment runs to the end, as the engines' lexers
// read it (they then fail the statement).
func (l Lexer) next(sql string, i int) (int, token) {
	c := sql[i]
	switch {
	case isSpace(c):
		j := i + 1
		for j < len(sql) && isSpace(sql[j]) {
			j++
		}
		return j, tokenSpace
	case isWordByte(c):
		// A word may hold $ after its first character, as an identifier
		// may on both engines (x$a$ is a name, not a dollar quote); a
		// number does not.
		j := i + 1
		for j < len(sql) && (isWordByte(sql[j]) || sql[j] == '$' && !isDigit(c)) {
			j++
		}
		if l.postgres && j == i+1 && (c == 'E' || c == 'e') && j < len(sql) && sql[j] == '\'' {
			return min(skipEscaped(sql, j)+1, len(sql)), tokenOther
		}
		return j, tokenWord
	case c == '\'' || c == '"':
		return min(skipQuoted(sql, i, c)+1, len(sql)), tokenOther
	case c == '-' && strings.HasPrefix(sql[i:], "--"):
		if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
			return i + j, tokenComment
		}
		return len(sql), tokenComment
	case c == '/' && strings.HasPrefix(sql[i:], "/*"):
		if l.postgres {
			return skipNested(sql, i), tokenComment
		}
		if i+2 == len(sql) {
			break // sqlite3GetToken: "/*" at the very end is an operator
		}
		if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
			return i + j + 4, tokenComment
		}
		return len(sql), tokenComment
	case l.postgres && c == '$':
		if tag, ok := dollarTag(sql[i:]); ok {
			if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
				return i + len(tag) + j + len(tag), tokenOther
			}
			return len(sql), tokenOther
		}
	case !l.postgres && c == '`':
		return min(skipQuoted(sql, i, c)+1, len(sql)), tokenOther
	case !l.postgres && c == '[':
		if j := strings.IndexByte(sql[i:], ']'); j >= 0 {
			return i + j + 1, tokenOther
		}
		return len(sql), tokenOther
	case !l.postgres && (c == '$' || c == '@' || c == ':' || c == '#'):
		return skipVariable(sql, i), tokenOther
	}
	return i + 1, tokenOther
}

// skipNested returns the index just past the PostgreSQL comment that opens
// at s[i]: each /* inside opens a further level, each */ closes one.
func skipNested(s string, i int) int {
	depth := 0
	for j := i; j < len(s); {
		switch {
		case strings.HasPrefix(s[j:], "/*"):
			depth++
			j += 2
		case strings.HasPrefix(s[j:], "*/"):
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(s)
}

// skipVariable returns the index just past the SQLite variable that opens
// at s[i] ($, @, : or #), as sqlite3GetToken reads it: identifier bytes,
// "::" between them, and a suffix "(…)" that runs to the next ")" or white
// space, whatever it holds (quotes and semicolons too).
func skipVariable(s string, i int) int {
	n := 0
	j := i + 1
	for j < len(s) {
		switch c := s[j]; {
		case isWordByte(c) || c == '$':
			n++
			j++
			continue
		case c == '(' && n > 0:
			j++
			for j < len(s) && !isSpace(s[j]) && s[j] != ')' {
				j++
			}
			if j < len(s) && s[j] == ')' {
				j++
			}
			return j
		case c == ':' && j+1 < len(s) && s[j+1] == ':':
			j += 2
			continue
		}
		break
	}
	return j
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

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isSpace is white space to both engines: space, \t, \n, \v, \f, \r.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// liteState is sqlite3_complete's state (complete.c), which says where a
// statement ends: at a semicolon, except inside CREATE [TEMP] TRIGGER,
// whose body ends at "; END ;".
type liteState int

const (
	liteStart liteState = iota + 1
	liteNormal
	liteExplain
	liteCreate
	liteTrigger
	liteSemi
	liteEnd
)

// liteTrans is complete.c's trans table, indexed by state (from 1) and by
// token: semicolon, white space, other, EXPLAIN, CREATE, TEMP, TRIGGER, END.
var liteTrans = [8][8]liteState{
	1: {liteStart, liteStart, liteNormal, liteExplain, liteCreate, liteNormal, liteNormal, liteNormal},
	2: {liteStart, liteNormal, liteNormal, liteNormal, liteNormal, liteNormal, liteNormal, liteNormal},
	3: {liteStart, liteExplain, liteExplain, liteNormal, liteCreate, liteNormal, liteNormal, liteNormal},
	4: {liteStart, liteCreate, liteNormal, liteNormal, liteNormal, liteCreate, liteTrigger, liteNormal},
	5: {liteSemi, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger},
	6: {liteSemi, liteSemi, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteEnd},
	7: {liteStart, liteEnd, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger, liteTrigger},
}

// step moves the state over one token and reports whether it was a
// semicolon that ends the statement.
func (s *liteState) step(sql string, i, end int, tok token) bool {
	t := 2 // other
	switch {
	case sql[i] == ';':
		t = 0
	case tok == tokenSpace || tok == tokenComment:
		t = 1
	case tok == tokenWord:
		switch strings.ToUpper(sql[i:end]) {
		case "EXPLAIN":
			t = 3
		case "CREATE":
			t = 4
		case "TEMP", "TEMPORARY":
			t = 5
		case "TRIGGER":
			t = 6
		case "END":
			t = 7
		}
	}
	*s = liteTrans[*s][t]
	return t == 0 && *s == liteStart
}

// Tokens returns the tokens of sql as written, without white space and
// comments.
func (l Lexer) Tokens(sql string) []string {
	var out []string
	for i := 0; i < len(sql); {
		end, tok := l.next(sql, i)
		if tok != tokenSpace && tok != tokenComment {
			out = append(out, sql[i:end])
		}
		i = end
	}
	return out
}
