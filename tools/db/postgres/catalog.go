package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// The catalog's statements name every table, function, operator and type
// with its schema (pg_catalog.…, OPERATOR(pg_catalog.=)), and the ones that
// do not depend on the user's search_path run with it set to ownPath (own):
// a function that another user put in a schema on this user's search_path
// (public.col_description(oid, smallint), which matches an int2 argument
// better than pg_catalog's does) would otherwise run as this user.

// ownPath is the search_path of the tools' own statements: pg_catalog
// first, the session's temporary schema last (so a temporary table cannot
// stand in for a catalog), and no schema a user can create in. PostgreSQL
// never looks for functions or operators in pg_temp.
const ownPath = "pg_catalog, pg_temp"

// own runs fn with search_path set to ownPath and then sets the user's
// back, for the rest of the transaction (SET LOCAL): a setting the user
// made with SET still holds after COMMIT, and after ROLLBACK what held
// before it. When fn fails the call's savepoint is rolled back, which
// restores it too.
func own(ctx context.Context, q db.Querier, fn func() error) error {
	var saved string
	if err := q.QueryRowContext(ctx, "SELECT pg_catalog.current_setting('search_path')").Scan(&saved); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, "SELECT pg_catalog.set_config('search_path', $1, true)", ownPath); err != nil {
		return err
	}
	err := fn()
	if _, rerr := q.ExecContext(ctx, "SELECT pg_catalog.set_config('search_path', $1, true)", saved); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// ownRows runs a catalog query that yields T under own.
func ownRows[T any](ctx context.Context, q db.Querier, scan func(*sql.Rows) (T, error), query string, args ...any) (out []T, err error) {
	err = own(ctx, q, func() error {
		out, err = db.Select(ctx, q, scan, query, args...)
		return err
	})
	return out, err
}

// cutText is the SQL for the text expr cut in the server at
// db.MaxSourceChars characters, ending then in a note with its true
// length: the owner of a table can make its comments, column defaults,
// constraints and trigger conditions as large as the server allows, and
// another user's describe_table and get_table_ddl read them.
func cutText(expr string) string {
	n := strconv.Itoa(db.MaxSourceChars)
	return "CASE WHEN pg_catalog.length(" + expr + ") OPERATOR(pg_catalog.>) " + n + " THEN pg_catalog.substr(" + expr + ", 1, " + n +
		") OPERATOR(pg_catalog.||) '… [cut at " + n + " of ' OPERATOR(pg_catalog.||) pg_catalog.length(" + expr + ")::pg_catalog.text OPERATOR(pg_catalog.||) ' characters]' ELSE " + expr + " END"
}

// eq is PostgreSQL's equality operator, whatever search_path says.
const eq = " OPERATOR(pg_catalog.=) "

// userSchema is true for a namespace n that is not the system's.
const userSchema = `NOT (n.nspname OPERATOR(pg_catalog.=) ANY ('{pg_catalog,information_schema}'::pg_catalog.name[]) OR n.nspname OPERATOR(pg_catalog.~~) 'pg\_toast%' OR n.nspname OPERATOR(pg_catalog.~~) 'pg\_temp\_%')`

// DefaultSchema is current_schema(): where unqualified names are created,
// so by the user's search_path.
func (Engine) DefaultSchema(ctx context.Context, q db.Querier) (string, error) {
	var s *string
	if err := q.QueryRowContext(ctx, "SELECT pg_catalog.current_schema()").Scan(&s); err != nil {
		return "", err
	}
	if s == nil {
		return "", db.Errorf(db.KindNotFound, "postgres: no schema on search_path exists; name a schema explicitly")
	}
	return *s, nil
}

// Schemas lists the user's schemas.
func (Engine) Schemas(ctx context.Context, q db.Querier) (out []string, err error) {
	err = own(ctx, q, func() error {
		out, err = strs(ctx, q, "SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE "+userSchema+" ORDER BY n.nspname")
		return err
	})
	return out, err
}

// schema resolves "" to the default schema (by the user's search_path) and
// checks a named one exists.
func (e Engine) schema(ctx context.Context, q db.Querier, name string) (string, error) {
	if name == "" {
		return e.DefaultSchema(ctx, q)
	}
	var got string
	if err := q.QueryRowContext(ctx, "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname"+eq+"$1", name).Scan(&got); err != nil {
		return "", db.Errorf(db.KindNotFound, "postgres: no schema %q; list_schemas shows what there is", name)
	}
	return got, nil
}

// Objects lists tables, views, indexes, sequences, triggers and routines.
func (e Engine) Objects(ctx context.Context, q db.Querier, s string) ([]db.Object, error) {
	filter, args := userSchema, []any{}
	if s != "*" {
		sc, err := e.schema(ctx, q, s)
		if err != nil {
			return nil, err
		}
		filter, args = "n.nspname"+eq+"$1", []any{sc}
	}
	return ownRows(ctx, q, func(r *sql.Rows) (o db.Object, err error) {
		return o, r.Scan(&o.Schema, &o.Name, &o.Type, &o.Table)
	}, objectsQuery(filter), args...)
}

// objectsQuery lists every kind of schema entry in the namespaces n that
// pass filter.
func objectsQuery(filter string) string {
	return `
SELECT n.nspname, c.relname,
       CASE WHEN c.relkind` + eq + `ANY ('{r,p}') THEN 'table' WHEN c.relkind` + eq + `'v' THEN 'view' WHEN c.relkind` + eq + `'m' THEN 'materialized view'
            WHEN c.relkind` + eq + `'S' THEN 'sequence' WHEN c.relkind` + eq + `'f' THEN 'foreign table' ELSE 'index' END,
       COALESCE((SELECT t.relname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class t ON t.oid` + eq + `i.indrelid WHERE i.indexrelid` + eq + `c.oid), '')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid` + eq + `c.relnamespace
WHERE c.relkind` + eq + `ANY ('{r,p,v,m,S,f,i,I}') AND ` + filter + `
UNION ALL
SELECT n.nspname, t.tgname, 'trigger', c.relname
FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid` + eq + `t.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid` + eq + `c.relnamespace
WHERE NOT t.tgisinternal AND ` + filter + `
UNION ALL
SELECT n.nspname, p.proname, CASE WHEN p.prokind` + eq + `'p' THEN 'procedure' WHEN p.prokind` + eq + `'a' THEN 'aggregate' ELSE 'function' END, ''
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid` + eq + `p.pronamespace
WHERE ` + filter + `
ORDER BY 1, 3, 2`
}

// relation resolves a table or view in the schema sc (resolved already):
// exact spelling, else the one case-insensitive match. It runs under own.
func relation(ctx context.Context, q db.Querier, sc, name string) (oid uint32, canon, kind string, estimate float64, comment string, err error) {
	var com *string
	find := `SELECT c.oid, c.relname, c.relkind, c.reltuples, ` + cutText("pg_catalog.obj_description(c.oid, 'pg_class')") + `
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid` + eq + `c.relnamespace
WHERE n.nspname` + eq + `$1 AND c.relkind` + eq + `ANY ('{r,p,v,m,f}') AND `
	err = q.QueryRowContext(ctx, find+"c.relname"+eq+"$2", sc, name).Scan(&oid, &canon, &kind, &estimate, &com)
	if err != nil {
		rows, qerr := q.QueryContext(ctx, find+"pg_catalog.lower(c.relname::pg_catalog.text)"+eq+"pg_catalog.lower($2::pg_catalog.text)", sc, name)
		if qerr != nil {
			return 0, "", "", 0, "", qerr
		}
		n := 0
		for rows.Next() {
			n++
			if err = rows.Scan(&oid, &canon, &kind, &estimate, &com); err != nil {
				rows.Close()
				return
			}
		}
		rows.Close()
		if n != 1 {
			return 0, "", "", 0, "", db.Errorf(db.KindNotFound, "postgres: no table or view %q in schema %q; list_tables shows what there is", name, sc)
		}
		err = nil
	}
	if com != nil {
		comment = *com
	}
	switch kind {
	case "v", "m":
		kind = "view"
	default:
		kind = "table"
	}
	return
}

// Table describes a table or view from pg_attribute, pg_constraint and
// pg_index; the row estimate is the planner's (reltuples), or a count of a
// small table never analysed.
func (e Engine) Table(ctx context.Context, q db.Querier, s, name string) (t *db.Table, err error) {
	sc, err := e.schema(ctx, q, s)
	if err != nil {
		return nil, err
	}
	err = own(ctx, q, func() error {
		t, _, err = table(ctx, q, sc, name)
		return err
	})
	return t, err
}

// table is Table under own, with the relation's oid.
func table(ctx context.Context, q db.Querier, sc, name string) (*db.Table, uint32, error) {
	oid, canon, kind, estimate, comment, err := relation(ctx, q, sc, name)
	if err != nil {
		return nil, 0, err
	}
	t := &db.Table{Schema: sc, Name: canon, Type: kind, Comment: comment, Columns: []db.Column{}, PrimaryKey: []string{}, Indexes: []db.Index{}, ForeignKeys: []db.ForeignKey{}, RowEstimate: -1}
	switch {
	case kind != "table":
	case estimate >= 0:
		t.RowEstimate = int64(estimate)
	default:
		// Never analysed (reltuples = -1 since PostgreSQL 14): a small
		// table is counted, a large one stays unknown.
		var small bool
		if err := q.QueryRowContext(ctx, "SELECT pg_catalog.pg_relation_size($1) OPERATOR(pg_catalog.<) 8388608", oid).Scan(&small); err != nil {
			return nil, 0, err
		}
		if small {
			if err := q.QueryRowContext(ctx, "SELECT pg_catalog.count(*) FROM "+db.Qualify(sc, canon)).Scan(&t.RowEstimate); err != nil {
				return nil, 0, err
			}
		}
	}
	if t.PrimaryKey, err = strs(ctx, q, `SELECT a.attname FROM pg_catalog.pg_constraint k, pg_catalog.unnest(k.conkey) WITH ORDINALITY u(attnum, ord)
JOIN pg_catalog.pg_attribute a ON a.attrelid`+eq+`$1 AND a.attnum`+eq+`u.attnum WHERE k.conrelid`+eq+`$1 AND k.contype`+eq+`'p' ORDER BY u.ord`, oid); err != nil {
		return nil, 0, err
	}
	rows, err := q.QueryContext(ctx, `SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, `+cutText("pg_catalog.pg_get_expr(d.adbin, d.adrelid)")+`, COALESCE(`+cutText("pg_catalog.col_description(a.attrelid, a.attnum)")+`, '')
FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid`+eq+`a.attrelid AND d.adnum`+eq+`a.attnum
WHERE a.attrelid`+eq+`$1 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var c db.Column
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default, &c.Comment); err != nil {
			rows.Close()
			return nil, 0, err
		}
		for _, p := range t.PrimaryKey {
			c.PrimaryKey = c.PrimaryKey || p == c.Name
		}
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	idx, err := q.QueryContext(ctx, `SELECT c.relname, i.indisunique, `+cutText("pg_catalog.pg_get_indexdef(i.indexrelid)")+`,
       COALESCE((SELECT pg_catalog.string_agg(COALESCE(a.attname, 'expr'), ',' ORDER BY u.ord) FROM pg_catalog.unnest(i.indkey) WITH ORDINALITY u(attnum, ord)
                 LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid`+eq+`i.indrelid AND a.attnum`+eq+`u.attnum), '')
FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid`+eq+`i.indexrelid WHERE i.indrelid`+eq+`$1 ORDER BY c.relname`, oid)
	if err != nil {
		return nil, 0, err
	}
	for idx.Next() {
		var ix db.Index
		var cols string
		if err := idx.Scan(&ix.Name, &ix.Unique, &ix.Definition, &cols); err != nil {
			idx.Close()
			return nil, 0, err
		}
		ix.Columns = strings.Split(cols, ",")
		t.Indexes = append(t.Indexes, ix)
	}
	idx.Close()
	if t.ForeignKeys, err = foreignKeys(ctx, q, "k.conrelid"+eq+"$1", oid); err != nil {
		return nil, 0, err
	}
	return t, oid, nil
}

// foreignKeys lists the foreign keys matching a condition on pg_constraint
// k. It runs under own.
func foreignKeys(ctx context.Context, q db.Querier, cond string, oid uint32) ([]db.ForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT k.conname, cn.nspname, c.relname, pn.nspname, p.relname,
       (SELECT pg_catalog.string_agg(a.attname, ',' ORDER BY u.ord) FROM pg_catalog.unnest(k.conkey) WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid`+eq+`k.conrelid AND a.attnum`+eq+`u.attnum),
       (SELECT pg_catalog.string_agg(a.attname, ',' ORDER BY u.ord) FROM pg_catalog.unnest(k.confkey) WITH ORDINALITY u(attnum, ord) JOIN pg_catalog.pg_attribute a ON a.attrelid`+eq+`k.confrelid AND a.attnum`+eq+`u.attnum),
       CASE WHEN k.confdeltype`+eq+`'c' THEN 'CASCADE' WHEN k.confdeltype`+eq+`'n' THEN 'SET NULL' WHEN k.confdeltype`+eq+`'d' THEN 'SET DEFAULT' WHEN k.confdeltype`+eq+`'r' THEN 'RESTRICT' ELSE 'NO ACTION' END
FROM pg_catalog.pg_constraint k
JOIN pg_catalog.pg_class c ON c.oid`+eq+`k.conrelid JOIN pg_catalog.pg_namespace cn ON cn.oid`+eq+`c.relnamespace
JOIN pg_catalog.pg_class p ON p.oid`+eq+`k.confrelid JOIN pg_catalog.pg_namespace pn ON pn.oid`+eq+`p.relnamespace
WHERE k.contype`+eq+`'f' AND `+cond+` ORDER BY cn.nspname, c.relname, k.conname`, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []db.ForeignKey{}
	for rows.Next() {
		var fk db.ForeignKey
		var cols, pcols string
		if err := rows.Scan(&fk.Name, &fk.Schema, &fk.Table, &fk.ParentSchema, &fk.ParentTable, &cols, &pcols, &fk.OnDelete); err != nil {
			return nil, err
		}
		fk.Columns, fk.ParentColumns = strings.Split(cols, ","), strings.Split(pcols, ",")
		out = append(out, fk)
	}
	return out, rows.Err()
}

// Children lists the foreign keys that reference the table.
func (e Engine) Children(ctx context.Context, q db.Querier, s, name string) (out []db.ForeignKey, err error) {
	sc, err := e.schema(ctx, q, s)
	if err != nil {
		return nil, err
	}
	err = own(ctx, q, func() error {
		oid, _, _, _, _, err := relation(ctx, q, sc, name)
		if err != nil {
			return err
		}
		out, err = foreignKeys(ctx, q, "k.confrelid"+eq+"$1", oid)
		return err
	})
	return out, err
}

// TableDDL rebuilds CREATE TABLE from the catalog: columns, constraints
// (pg_get_constraintdef), other indexes (pg_get_indexdef), triggers and
// comments. Names outside pg_catalog come out schema-qualified (the
// statement runs under own), so the DDL means the same whatever
// search_path it runs with.
func (e Engine) TableDDL(ctx context.Context, q db.Querier, s, name string) (ddl string, err error) {
	sc, err := e.schema(ctx, q, s)
	if err != nil {
		return "", err
	}
	err = own(ctx, q, func() error {
		ddl, err = e.tableDDL(ctx, q, sc, name)
		return err
	})
	return ddl, err
}

func (e Engine) tableDDL(ctx context.Context, q db.Querier, sc, name string) (string, error) {
	t, oid, err := table(ctx, q, sc, name)
	if err != nil {
		return "", err
	}
	if t.Type != "table" {
		return "", db.Errorf(db.KindInvalidParams, "postgres: %q is a view; get_view_definition shows its SQL", t.Name)
	}
	var parts []string
	for _, c := range t.Columns {
		p := "    " + db.Quote(c.Name) + " " + c.Type
		if !c.Nullable {
			p += " NOT NULL"
		}
		if c.Default != nil {
			p += " DEFAULT " + *c.Default
		}
		parts = append(parts, p)
	}
	cons, err := strs(ctx, q, `SELECT 'CONSTRAINT ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(conname) OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) `+cutText("pg_catalog.pg_get_constraintdef(oid)")+` FROM pg_catalog.pg_constraint
WHERE conrelid`+eq+`$1 AND contype`+eq+`ANY ('{p,u,c,f,x}') ORDER BY pg_catalog.array_position('{p,u,c,f,x}'::pg_catalog."char"[], contype), conname`, oid)
	if err != nil {
		return "", err
	}
	for _, c := range cons {
		parts = append(parts, "    "+c)
	}
	ddl := "CREATE TABLE " + db.Qualify(t.Schema, t.Name) + " (\n" + strings.Join(parts, ",\n") + "\n);\n"
	more, err := strs(ctx, q, `SELECT `+cutText("pg_catalog.pg_get_indexdef(i.indexrelid)")+` OPERATOR(pg_catalog.||) ';' FROM pg_catalog.pg_index i
WHERE i.indrelid`+eq+`$1 AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid`+eq+`i.indexrelid AND k.conrelid`+eq+`$1)
UNION ALL SELECT `+cutText("pg_catalog.pg_get_triggerdef(oid)")+` OPERATOR(pg_catalog.||) ';' FROM pg_catalog.pg_trigger WHERE tgrelid`+eq+`$1 AND NOT tgisinternal`, oid)
	if err != nil {
		return "", err
	}
	for _, m := range more {
		ddl += m + "\n"
	}
	if t.Comment != "" {
		ddl += "COMMENT ON TABLE " + db.Qualify(t.Schema, t.Name) + " IS " + e.Literal(t.Comment) + ";\n"
	}
	for _, c := range t.Columns {
		if c.Comment != "" {
			ddl += "COMMENT ON COLUMN " + db.Qualify(t.Schema, t.Name) + "." + db.Quote(c.Name) + " IS " + e.Literal(c.Comment) + ";\n"
		}
	}
	return ddl, nil
}

// Definitions lists views (their SELECT), triggers and routines
// (pg_get_functiondef) in the user's schemas that pass f. The search and
// the cuts run in the server (strpos, substr), so that a planted routine
// with a source of many MB never crosses the wire whole: a row over the
// worker's row bound would fail the tool for everyone, and every source
// read at once would take the worker's memory.
func (Engine) Definitions(ctx context.Context, q db.Querier, f db.DefinitionFilter) ([]db.Definition, error) {
	return ownRows(ctx, q, func(r *sql.Rows) (d db.Definition, err error) {
		return d, r.Scan(&d.Schema, &d.Name, &d.Type, &d.Table, &d.Signature, &d.Source, &d.Length, &d.Excerpt)
	}, `
SELECT s, name, typ, tbl, sig, substr(src, 1, $1::int4), length(src),
       CASE WHEN $2::text`+eq+`'' THEN '' ELSE substr(src, greatest(1, p OPERATOR(pg_catalog.-) $3::int4), 2 OPERATOR(pg_catalog.*) $3::int4 OPERATOR(pg_catalog.+) length($2::text)) END
FROM (SELECT d.*, CASE WHEN $2::text`+eq+`'' THEN 0 ELSE strpos(lower(d.src), lower($2::text)) END AS p FROM (
  SELECT n.nspname::text AS s, c.relname::text AS name, 'view'::text AS typ, ''::text AS tbl, ''::text AS sig, pg_get_viewdef(c.oid, true) AS src
  FROM pg_class c JOIN pg_namespace n ON n.oid`+eq+`c.relnamespace WHERE c.relkind`+eq+`ANY ('{v,m}') AND `+userSchema+`
  UNION ALL
  SELECT n.nspname::text, t.tgname::text, 'trigger', c.relname::text, '', pg_get_triggerdef(t.oid, true)
  FROM pg_trigger t JOIN pg_class c ON c.oid`+eq+`t.tgrelid JOIN pg_namespace n ON n.oid`+eq+`c.relnamespace WHERE NOT t.tgisinternal AND `+userSchema+`
  UNION ALL
  SELECT n.nspname::text, p.proname::text, CASE WHEN p.prokind`+eq+`'p' THEN 'procedure' ELSE 'function' END, '', pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
  FROM pg_proc p JOIN pg_namespace n ON n.oid`+eq+`p.pronamespace WHERE p.prokind`+eq+`ANY ('{f,p}') AND `+userSchema+`
) d WHERE ($4::text`+eq+`'' OR d.s`+eq+`$4::text) AND ($5::text`+eq+`'' OR lower(d.name)`+eq+`lower($5::text))) x
WHERE $2::text`+eq+`'' OR p OPERATOR(pg_catalog.>) 0
ORDER BY 1, 3, 2`, db.MaxSourceChars, f.Contains, db.ExcerptChars, f.Schema, f.Name)
}

// Columns lists every column of every table and view in the user's schemas.
func (Engine) Columns(ctx context.Context, q db.Querier) ([]db.ColumnRef, error) {
	return ownRows(ctx, q, func(r *sql.Rows) (c db.ColumnRef, err error) {
		return c, r.Scan(&c.Schema, &c.Table, &c.Column, &c.Type)
	}, `SELECT n.nspname, c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)
FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid`+eq+`a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid`+eq+`c.relnamespace
WHERE c.relkind`+eq+`ANY ('{r,p,v,m,f}') AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND `+userSchema+`
ORDER BY 1, 2, a.attnum`)
}

// systemNamespace is true for the namespace whose oid is $1 when it is the
// system's: compared by oid with pg_catalog, information_schema and
// pg_toast, plus the per-session temp and toast-temp schemas.
const systemNamespace = `(SELECT n.oid` + eq + `ANY (ARRAY['pg_catalog'::pg_catalog.regnamespace, 'information_schema'::pg_catalog.regnamespace, 'pg_toast'::pg_catalog.regnamespace]::pg_catalog.oid[])
        OR n.nspname OPERATOR(pg_catalog.~~) 'pg\_toast\_temp\_%' OR n.nspname OPERATOR(pg_catalog.~~) 'pg\_temp\_%' FROM pg_catalog.pg_namespace n WHERE n.oid` + eq + `$1)`

// SystemSchema resolves the schema by name to its oid and compares that.
// A name that begins with pg_ is the system's whether or not it resolves:
// PostgreSQL reserves the prefix for schemas (CREATE SCHEMA refuses it), and
// pg_temp names the session's temp schema (pg_temp_N), which pg_namespace
// lists only under its real name.
func (Engine) SystemSchema(ctx context.Context, q db.Querier, schema string) (bool, error) {
	if strings.HasPrefix(schema, "pg_") {
		return true, nil
	}
	var sys *bool
	err := q.QueryRowContext(ctx, "SELECT "+strings.ReplaceAll(systemNamespace, "$1", "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname"+eq+"$1)"), schema).Scan(&sys)
	return sys != nil && *sys, err
}

// SystemRelation resolves the name as PostgreSQL would (to_regclass, so an
// unqualified name follows the user's search_path, as the user's statement
// will; pg_catalog comes first unless the user named it later) and tests
// the schema it lands in.
func (Engine) SystemRelation(ctx context.Context, q db.Querier, schema, name string) (bool, error) {
	var sys *bool
	err := q.QueryRowContext(ctx, "SELECT "+strings.ReplaceAll(systemNamespace, "$1", "(SELECT relnamespace FROM pg_catalog.pg_class WHERE oid"+eq+"pg_catalog.to_regclass($1))"), db.Qualify(schema, name)).Scan(&sys)
	return sys != nil && *sys, err
}

// Fold lower-cases an unquoted identifier, as PostgreSQL does.
func (Engine) Fold(ident string) string { return strings.ToLower(ident) }

// Literal renders v as a PostgreSQL literal: bytes as bytea, non-finite
// floats cast, and strings as escape strings (E'…', backslashes and quotes
// doubled), which read the same whatever standard_conforming_strings says:
// in a plain '…' a backslash escapes the quote when it is off, which a
// session can do with SET.
func (Engine) Literal(v any) string {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return "'" + strconv.FormatFloat(f, 'g', -1, 64) + "'::pg_catalog.float8"
	}
	lit := db.Literal(v, func(b bool) string {
		if b {
			return "TRUE"
		}
		return "FALSE"
	}, func(b []byte) string { return "pg_catalog.decode('" + hex.EncodeToString(b) + "', 'hex')" })
	if strings.HasPrefix(lit, "'") { // db.StringLiteral: quotes are doubled already
		return "E" + strings.ReplaceAll(lit, `\`, `\\`)
	}
	return lit
}

// Features: PostgreSQL has them all.
func (Engine) Features() db.Features {
	return db.Features{Schemas: true, Routines: true, Comments: true, Cascade: true}
}

// strs runs a query that yields one text column.
var strs = db.Strings
