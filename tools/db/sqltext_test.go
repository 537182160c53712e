package db

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// lexers names both engines' lexers for table tests.
var lexers = map[string]Lexer{Postgres: PostgresLexer, SQLite: SQLiteLexer}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want []string
		only string // "" for both engines, else the one engine whose lexer reads it so
	}{
		{"one", "SELECT 1", []string{"SELECT 1"}, ""},
		{"trailing semicolon", "SELECT 1;  ", []string{"SELECT 1"}, ""},
		{"two", "SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}, ""},
		{"semicolon in string", "SELECT 'a;b'; SELECT 2", []string{"SELECT 'a;b'", "SELECT 2"}, ""},
		{"doubled quote", "SELECT 'it''s;'", []string{"SELECT 'it''s;'"}, ""},
		{"quoted identifier", `SELECT ";" FROM t`, []string{`SELECT ";" FROM t`}, ""},
		{"line comment", "SELECT 1 -- ; not a statement\n", []string{"SELECT 1 -- ; not a statement"}, ""},
		{"only a comment", "-- nothing;\n/* here; */", nil, ""},
		{"block comment", "SELECT /* ; */ 1", []string{"SELECT /* ; */ 1"}, ""},
		{"transaction begin is not nested", "BEGIN; SELECT 1; COMMIT", []string{"BEGIN", "SELECT 1", "COMMIT"}, ""},
		{"dollar inside an identifier", "SELECT 1 AS x$a$ WHERE 0; COMMIT; DELETE FROM t; -- $a$",
			[]string{"SELECT 1 AS x$a$ WHERE 0", "COMMIT", "DELETE FROM t"}, ""},
		{"column named begin in CREATE TABLE", "CREATE TABLE t1 (begin int); COMMIT; CREATE TABLE t2 (x int)",
			[]string{"CREATE TABLE t1 (begin int)", "COMMIT", "CREATE TABLE t2 (x int)"}, ""},
		{"CASE in CREATE VIEW", "CREATE VIEW v AS SELECT CASE WHEN true THEN 1 END; SELECT 2",
			[]string{"CREATE VIEW v AS SELECT CASE WHEN true THEN 1 END", "SELECT 2"}, ""},

		// PostgreSQL
		{"dollar quote", "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; SELECT 2", []string{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql", "SELECT 2"}, Postgres},
		{"tagged dollar quote", "SELECT $x$a;b$x$", []string{"SELECT $x$a;b$x$"}, Postgres},
		{"parameter is not a dollar quote", "SELECT $1; SELECT $2", []string{"SELECT $1", "SELECT $2"}, Postgres},
		{"escape string", `UPDATE t SET a = E'\''; COMMIT; CREATE TABLE x (y int) --'`,
			[]string{`UPDATE t SET a = E'\''`, "COMMIT", "CREATE TABLE x (y int) --'"}, Postgres},
		{"escape string with a doubled quote", `SELECT e'a''\\'; SELECT 2`, []string{`SELECT e'a''\\'`, "SELECT 2"}, Postgres},
		{"a word ending in e is no escape string", `SELECT date'2020\'; SELECT 2`, []string{`SELECT date'2020\'`, "SELECT 2"}, Postgres},
		{"BEGIN ATOMIC body", "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT 3",
			[]string{"CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END", "SELECT 3"}, Postgres},
		{"nested comment", "/* /* */ CREATE TABLE t (a int); */ DROP TABLE victim; SELECT 1",
			[]string{"/* /* */ CREATE TABLE t (a int); */ DROP TABLE victim", "SELECT 1"}, Postgres},
		{"brackets and backticks are no quotes", "SELECT a[1]; SELECT `; SELECT 2",
			[]string{"SELECT a[1]", "SELECT `", "SELECT 2"}, Postgres},

		// SQLite
		{"no escape string", `CREATE VIEW v1 AS SELECT E'\' FROM (SELECT 1 AS E); DELETE FROM order_items; --'`,
			[]string{`CREATE VIEW v1 AS SELECT E'\' FROM (SELECT 1 AS E)`, "DELETE FROM order_items"}, SQLite},
		{"no dollar quote", "SELECT $$; DELETE FROM t; $$", []string{"SELECT $$", "DELETE FROM t", "$$"}, SQLite},
		{"comments do not nest", "/* /* */ SELECT 1; */ SELECT 2", []string{"/* /* */ SELECT 1", "*/ SELECT 2"}, SQLite},
		{"brackets and backticks quote", "SELECT [a;b], `c;d`; SELECT 2", []string{"SELECT [a;b], `c;d`", "SELECT 2"}, SQLite},
		{"a variable's suffix hides a quote", "SELECT $a('); DELETE FROM t; --')",
			[]string{"SELECT $a(')", "DELETE FROM t"}, SQLite},
		{"trigger", "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET n = CASE WHEN 1 THEN 2 END; DELETE FROM c; END; SELECT 1",
			[]string{"CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET n = CASE WHEN 1 THEN 2 END; DELETE FROM c; END", "SELECT 1"}, SQLite},
		{"temp trigger with a column named begin", "CREATE TEMP TRIGGER t AFTER INSERT ON a WHEN new.begin BEGIN DELETE FROM c; END; SELECT 1",
			[]string{"CREATE TEMP TRIGGER t AFTER INSERT ON a WHEN new.begin BEGIN DELETE FROM c; END", "SELECT 1"}, SQLite},
		{"trigger ends at END after a semicolon only", "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END /* c */ ; SELECT 2",
			[]string{"CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END /* c */", "SELECT 2"}, SQLite},
	}
	for _, tt := range tests {
		for engine, l := range lexers {
			if tt.only != "" && tt.only != engine {
				continue
			}
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, l.Split(tt.sql))
			})
		}
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
		for engine, l := range lexers {
			t.Run(engine+"/"+tt.sql, func(t *testing.T) {
				assert.Equal(t, tt.want, l.Keywords(tt.sql, tt.n))
			})
		}
	}
	assert.Equal(t, []string{"COMMIT"}, PostgresLexer.Keywords("/* /* */ SELECT 1 */ COMMIT", 1))
	assert.Equal(t, []string{"SELECT"}, SQLiteLexer.Keywords("/* /* */ SELECT 1 */ COMMIT", 1))
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
	tests := []struct{ in, want, only string }{
		{"CREATE /* x */ TABLE t", "CREATE   TABLE t", ""},
		{"CREATE TABLE t -- note\n(x int)", "CREATE TABLE t  \n(x int)", ""},
		{"SELECT '/* not */', \"--id\"", "SELECT '/* not */', \"--id\"", ""},
		{"SELECT 1 /* open", "SELECT 1  ", ""},
		{"SELECT 'open", "SELECT 'open", ""},
		{"SELECT x$a$ -- gone $a$", "SELECT x$a$  ", ""},
		{"SELECT $$ -- kept $$", "SELECT $$ -- kept $$", Postgres},
		{"SELECT E'\\' -- in the string' -- gone", "SELECT E'\\' -- in the string'  ", Postgres},
		{"/* a /* b */ c */ DROP", "  DROP", Postgres},
		{"/* a /* b */ c */ DROP", "  c */ DROP", SQLite},
		{"SELECT E'\\' -- gone'", "SELECT E'\\'  ", SQLite},
		{"SELECT [--x], `/*y*/`", "SELECT [--x], `/*y*/`", SQLite},
	}
	for _, tt := range tests {
		for engine, l := range lexers {
			if tt.only != "" && tt.only != engine {
				continue
			}
			t.Run(engine+"/"+tt.in, func(t *testing.T) {
				assert.Equal(t, tt.want, l.StripComments(tt.in))
			})
		}
	}
}

func TestParseDDL(t *testing.T) {
	tests := []struct {
		sql        string
		ok         bool
		form       string
		target, on []string
	}{
		{"CREATE TABLE t (x int)", true, "CREATE TABLE", []string{"t"}, nil},
		{"create table if not exists S.T (x int)", true, "CREATE TABLE", []string{"s", "t"}, nil},
		{`CREATE TEMP TABLE "My"."T" (x int)`, true, "CREATE TABLE", []string{"My", "T"}, nil},
		{"CREATE TABLE pg_catalog . t (x int)", true, "CREATE TABLE", []string{"pg_catalog", "t"}, nil},
		{"CREATE /* hide */ TABLE /* me */ pg_catalog./**/t (x int)", true, "CREATE TABLE", []string{"pg_catalog", "t"}, nil},
		{"CREATE OR REPLACE VIEW v AS SELECT 1", true, "CREATE VIEW", []string{"v"}, nil},
		{"CREATE MATERIALIZED VIEW mv AS SELECT 1", true, "CREATE VIEW", []string{"mv"}, nil},
		{"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON ONLY s.t (x)", true, "CREATE INDEX", []string{"i"}, []string{"s", "t"}},
		{"CREATE INDEX ON pg_catalog.pg_type (typname)", true, "CREATE INDEX", nil, []string{"pg_catalog", "pg_type"}},
		{"ALTER TABLE IF EXISTS ONLY t ADD COLUMN y int", true, "ALTER TABLE", []string{"t"}, nil},
		{"ALTER INDEX i RENAME TO j", true, "ALTER INDEX", []string{"i"}, nil},
		{"ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE t2", false, "ALTER TABLE", nil, nil},
		{"CREATE INDEX [ONx] ON t (a)", false, "CREATE INDEX", nil, nil},
		{"CREATE INDEX i USING x ON t (a)", false, "CREATE INDEX", nil, nil},
		{"alter index all in tablespace a set tablespace b", false, "ALTER INDEX", nil, nil},
		{`ALTER TABLE "all" ADD COLUMN y int`, true, "ALTER TABLE", []string{"all"}, nil},
		{"DROP TABLE t", false, "DROP TABLE", nil, nil},
		{"CREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END", false, "CREATE TRIGGER", nil, nil},
		{"INSERT INTO t VALUES (1)", false, "INSERT INTO", nil, nil},
		{"CREATE TABLE (x int)", false, "CREATE TABLE", nil, nil},
		{"/* /* */ CREATE TABLE public.t (a int) */ DROP TABLE public.victim", false, "DROP TABLE", nil, nil},
		{"/* /* */ CREATE TABLE public.t (a int) */ CREATE TABLE information_schema.x (a int)", true, "CREATE TABLE", []string{"information_schema", "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			d, ok := PostgresLexer.ParseDDL(tt.sql, strings.ToLower, DDLForms)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.form, strings.Join(d.Form, " "))
			if tt.ok {
				assert.Equal(t, tt.target, d.Target)
				assert.Equal(t, tt.on, d.On)
			}
		})
	}
}

// TestParseDDLSetSchema: an ALTER that moves its object names the schema it
// moves into, which the guard checks too; a SET SCHEMA inside a string or
// comment is not one.
func TestParseDDLSetSchema(t *testing.T) {
	tests := []struct {
		sql  string
		into []string
	}{
		{"ALTER TABLE public.t SET SCHEMA pg_catalog", []string{"pg_catalog"}},
		{`alter view v set /* c */ schema "Pg_Catalog"`, []string{"Pg_Catalog"}},
		{"ALTER TABLE t SET SCHEMA INFORMATION_SCHEMA", []string{"information_schema"}},
		{"ALTER TABLE t SET SCHEMA", []string{}},
		{"ALTER TABLE t SET SCHEMA a.b", []string{"a", "b"}},
		{"ALTER TABLE t ALTER COLUMN c SET DEFAULT 'SET SCHEMA pg_catalog'", nil},
		{"ALTER TABLE t SET (fillfactor = 50) -- SET SCHEMA pg_catalog", nil},
		{"CREATE TABLE t (\"SET\" int, schema int)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			d, ok := PostgresLexer.ParseDDL(tt.sql, strings.ToLower, DDLForms)
			assert.True(t, ok)
			assert.Equal(t, tt.into, d.Into)
		})
	}
}

func TestHasUnicodeName(t *testing.T) {
	tests := []struct {
		sql     string
		refused bool
	}{
		{`CREATE TABLE U&"information\005fschema".mine (a int)`, true},
		{`create table s.u&"x" (a int)`, true},
		{`CREATE TABLE t (a int DEFAULT 1) -- U&"in a comment"`, false},
		{`CREATE TABLE menu&"x" (a int)`, false}, // not a name: menu & "x"
		{`CREATE TABLE "U&" (a int)`, true},      // fail-closed: the match ignores quotes
	}
	for _, tt := range tests {
		assert.Equal(t, tt.refused, PostgresLexer.HasUnicodeName(tt.sql), tt.sql)
	}
}
