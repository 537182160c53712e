package db

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want []string
	}{
		{"one", "SELECT 1", []string{"SELECT 1"}},
		{"trailing semicolon", "SELECT 1;  ", []string{"SELECT 1"}},
		{"two", "SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon in string", "SELECT 'a;b'; SELECT 2", []string{"SELECT 'a;b'", "SELECT 2"}},
		{"doubled quote", "SELECT 'it''s;'", []string{"SELECT 'it''s;'"}},
		{"quoted identifier", `SELECT ";" FROM t`, []string{`SELECT ";" FROM t`}},
		{"line comment", "SELECT 1 -- ; not a statement\n", []string{"SELECT 1 -- ; not a statement"}},
		{"only a comment", "-- nothing;\n/* here; */", nil},
		{"block comment", "SELECT /* ; */ 1", []string{"SELECT /* ; */ 1"}},
		{"dollar quote", "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; SELECT 2", []string{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql", "SELECT 2"}},
		{"tagged dollar quote", "SELECT $x$a;b$x$", []string{"SELECT $x$a;b$x$"}},
		{"sqlite trigger", "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET n = CASE WHEN 1 THEN 2 END; DELETE FROM c; END; SELECT 1",
			[]string{"CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET n = CASE WHEN 1 THEN 2 END; DELETE FROM c; END", "SELECT 1"}},
		{"transaction begin is not nested", "BEGIN; SELECT 1; COMMIT", []string{"BEGIN", "SELECT 1", "COMMIT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Split(tt.sql))
		})
	}
}

func TestKeywords(t *testing.T) {
	tests := []struct {
		sql  string
		n    int
		want []string
	}{
		{"  select * from t", 1, []string{"SELECT"}},
		{"-- c\n/* d */ (with x as (select 1) select 2)", 2, []string{"WITH", "X"}},
		{"create unique index i on t(a)", 3, []string{"CREATE", "UNIQUE", "INDEX"}},
		{`"quoted"`, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			assert.Equal(t, tt.want, Keywords(tt.sql, tt.n))
		})
	}
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"a""b"`, Quote(`a"b`))
	assert.Equal(t, `"s"."t"`, Qualify("s", "t"))
	assert.Equal(t, `"t"`, Qualify("", "t"))
}

func TestReadName(t *testing.T) {
	tests := []struct {
		in     string
		parts  []string
		quoted []bool
		rest   string
	}{
		{" t (a int)", []string{"t"}, []bool{false}, " (a int)"},
		{`public."My ""T"""(a)`, []string{"public", `My "T"`}, []bool{false, true}, "(a)"},
		{`"pg_catalog".pg_class`, []string{"pg_catalog", "pg_class"}, []bool{true, false}, ""},
		{"(x)", nil, nil, "(x)"},
		{"pg_catalog . t (x int)", []string{"pg_catalog", "t"}, []bool{false, false}, " (x int)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			parts, quoted, rest := ReadName(tt.in)
			assert.Equal(t, tt.parts, parts)
			assert.Equal(t, tt.quoted, quoted)
			assert.Equal(t, tt.rest, rest)
		})
	}
}

func TestStripComments(t *testing.T) {
	tests := []struct{ in, want string }{
		{"CREATE /* x */ TABLE t", "CREATE   TABLE t"},
		{"CREATE TABLE t -- note\n(x int)", "CREATE TABLE t  \n(x int)"},
		{"SELECT '/* not */', \"--id\"", "SELECT '/* not */', \"--id\""},
		{"SELECT $$ -- kept $$", "SELECT $$ -- kept $$"},
		{"SELECT 1 /* open", "SELECT 1  "},
		{"SELECT 'open", "SELECT 'open"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, StripComments(tt.in))
		})
	}
}
