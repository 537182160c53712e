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

// userSchema is true for a namespace n that is not the system's.
const userSchema = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'`

// DefaultSchema is current_schema(): where unqualified names are created.
func (Engine) DefaultSchema(ctx context.Context, q db.Querier) (string, error) {
	var s *string
	if err := q.QueryRowContext(ctx, "SELECT current_schema()").Scan(&s); err != nil {
		return "", err
	}
	if s == nil {
		return "", db.Errorf(db.KindNotFound, "postgres: no schema on search_path exists; name a schema explicitly")
	}
	return *s, nil
}

// Schemas lists the user's schemas.
func (Engine) Schemas(ctx context.Context, q db.Querier) ([]string, error) {
	return strs(ctx, q, "SELECT n.nspname FROM pg_namespace n WHERE "+userSchema+" ORDER BY n.nspname")
}

// schema resolves "" to the default schema and checks a named one exists.
func (e Engine) schema(ctx context.Context, q db.Querier, name string) (string, error) {
	if name == "" {
		return e.DefaultSchema(ctx, q)
	}
	var got string
	if err := q.QueryRowContext(ctx, "SELECT nspname FROM pg_namespace WHERE nspname = $1", name).Scan(&got); err != nil {
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
		filter, args = "n.nspname = $1", []any{sc}
	}
	return db.Select(ctx, q, func(r *sql.Rows) (o db.Object, err error) {
		return o, r.Scan(&o.Schema, &o.Name, &o.Type, &o.Table)
	}, objectsQuery(filter), args...)
}

// objectsQuery lists every kind of schema entry in the namespaces n that
// pass filter.
func objectsQuery(filter string) string {
	return `
SELECT n.nspname, c.relname,
       CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                      WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' ELSE 'index' END,
       COALESCE((SELECT t.relname FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid WHERE i.indexrelid = c.oid), '')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'i', 'I') AND ` + filter + `
UNION ALL
SELECT n.nspname, t.tgname, 'trigger', c.relname
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT t.tgisinternal AND ` + filter + `
UNION ALL
SELECT n.nspname, p.proname, CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' ELSE 'function' END, ''
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE ` + filter + `
ORDER BY 1, 3, 2`
}

// relation resolves a table or view: exact spelling, else the one
// case-insensitive match.
func (e Engine) relation(ctx context.Context, q db.Querier, s, name string) (oid uint32, sc, canon, kind string, estimate float64, comment string, err error) {
	if sc, err = e.schema(ctx, q, s); err != nil {
		return
	}
	var com *string
	const find = `SELECT c.oid, c.relname, c.relkind, c.reltuples, obj_description(c.oid, 'pg_class')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND `
	err = q.QueryRowContext(ctx, find+"c.relname = $2", sc, name).Scan(&oid, &canon, &kind, &estimate, &com)
	if err != nil {
		rows, qerr := q.QueryContext(ctx, find+"lower(c.relname) = lower($2)", sc, name)
		if qerr != nil {
			return 0, "", "", "", 0, "", qerr
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
			return 0, "", "", "", 0, "", db.Errorf(db.KindNotFound, "postgres: no table or view %q in schema %q; list_tables shows what there is", name, sc)
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
func (e Engine) Table(ctx context.Context, q db.Querier, s, name string) (*db.Table, error) {
	oid, sc, canon, kind, estimate, comment, err := e.relation(ctx, q, s, name)
	if err != nil {
		return nil, err
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
		if err := q.QueryRowContext(ctx, "SELECT pg_relation_size($1) < 8 * 1024 * 1024", oid).Scan(&small); err != nil {
			return nil, err
		}
		if small {
			if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+db.Qualify(sc, canon)).Scan(&t.RowEstimate); err != nil {
				return nil, err
			}
		}
	}
	if t.PrimaryKey, err = strs(ctx, q, `SELECT a.attname FROM pg_constraint k, unnest(k.conkey) WITH ORDINALITY u(attnum, ord)
JOIN pg_attribute a ON a.attrelid = $1 AND a.attnum = u.attnum WHERE k.conrelid = $1 AND k.contype = 'p' ORDER BY u.ord`, oid); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid), COALESCE(col_description(a.attrelid, a.attnum), '')
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c db.Column
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default, &c.Comment); err != nil {
			rows.Close()
			return nil, err
		}
		for _, p := range t.PrimaryKey {
			c.PrimaryKey = c.PrimaryKey || p == c.Name
		}
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	idx, err := q.QueryContext(ctx, `SELECT c.relname, i.indisunique, pg_get_indexdef(i.indexrelid),
       COALESCE((SELECT string_agg(COALESCE(a.attname, 'expr'), ',' ORDER BY u.ord) FROM unnest(i.indkey) WITH ORDINALITY u(attnum, ord)
                 LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum), '')
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1 ORDER BY c.relname`, oid)
	if err != nil {
		return nil, err
	}
	for idx.Next() {
		var ix db.Index
		var cols string
		if err := idx.Scan(&ix.Name, &ix.Unique, &ix.Definition, &cols); err != nil {
			idx.Close()
			return nil, err
		}
		ix.Columns = strings.Split(cols, ",")
		t.Indexes = append(t.Indexes, ix)
	}
	idx.Close()
	if t.ForeignKeys, err = foreignKeys(ctx, q, "k.conrelid = $1", oid); err != nil {
		return nil, err
	}
	return t, nil
}

// foreignKeys lists the foreign keys matching a condition on pg_constraint k.
func foreignKeys(ctx context.Context, q db.Querier, cond string, oid uint32) ([]db.ForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT k.conname, cn.nspname, c.relname, pn.nspname, p.relname,
       (SELECT string_agg(a.attname, ',' ORDER BY u.ord) FROM unnest(k.conkey) WITH ORDINALITY u(attnum, ord) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum),
       (SELECT string_agg(a.attname, ',' ORDER BY u.ord) FROM unnest(k.confkey) WITH ORDINALITY u(attnum, ord) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum),
       CASE k.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace cn ON cn.oid = c.relnamespace
JOIN pg_class p ON p.oid = k.confrelid JOIN pg_namespace pn ON pn.oid = p.relnamespace
WHERE k.contype = 'f' AND `+cond+` ORDER BY cn.nspname, c.relname, k.conname`, oid)
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
func (e Engine) Children(ctx context.Context, q db.Querier, s, name string) ([]db.ForeignKey, error) {
	oid, _, _, _, _, _, err := e.relation(ctx, q, s, name)
	if err != nil {
		return nil, err
	}
	return foreignKeys(ctx, q, "k.confrelid = $1", oid)
}

// TableDDL rebuilds CREATE TABLE from the catalog: columns, constraints
// (pg_get_constraintdef), other indexes (pg_get_indexdef), triggers and
// comments.
func (e Engine) TableDDL(ctx context.Context, q db.Querier, s, name string) (string, error) {
	t, err := e.Table(ctx, q, s, name)
	if err != nil {
		return "", err
	}
	if t.Type != "table" {
		return "", db.Errorf(db.KindInvalidParams, "postgres: %q is a view; get_view_definition shows its SQL", t.Name)
	}
	oid, _, _, _, _, _, err := e.relation(ctx, q, t.Schema, t.Name)
	if err != nil {
		return "", err
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
	cons, err := strs(ctx, q, `SELECT 'CONSTRAINT ' || quote_ident(conname) || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = $1 AND contype IN ('p', 'u', 'c', 'f', 'x') ORDER BY array_position(ARRAY['p', 'u', 'c', 'f', 'x']::"char"[], contype), conname`, oid)
	if err != nil {
		return "", err
	}
	for _, c := range cons {
		parts = append(parts, "    "+c)
	}
	ddl := "CREATE TABLE " + db.Qualify(t.Schema, t.Name) + " (\n" + strings.Join(parts, ",\n") + "\n);\n"
	more, err := strs(ctx, q, `SELECT pg_get_indexdef(i.indexrelid) || ';' FROM pg_index i
WHERE i.indrelid = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = $1)
UNION ALL SELECT pg_get_triggerdef(oid) || ';' FROM pg_trigger WHERE tgrelid = $1 AND NOT tgisinternal`, oid)
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
// (pg_get_functiondef) in the user's schemas.
func (Engine) Definitions(ctx context.Context, q db.Querier) ([]db.Definition, error) {
	return db.Select(ctx, q, func(r *sql.Rows) (d db.Definition, err error) {
		return d, r.Scan(&d.Schema, &d.Name, &d.Type, &d.Table, &d.Signature, &d.Source)
	}, `
SELECT n.nspname, c.relname, 'view', '', '', pg_get_viewdef(c.oid, true)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('v', 'm') AND `+userSchema+`
UNION ALL
SELECT n.nspname, t.tgname, 'trigger', c.relname, '', pg_get_triggerdef(t.oid, true)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND `+userSchema+`
UNION ALL
SELECT n.nspname, p.proname, CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END, '', pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.prokind IN ('f', 'p') AND `+userSchema+`
ORDER BY 1, 3, 2`)
}

// Columns lists every column of every table and view in the user's schemas.
func (Engine) Columns(ctx context.Context, q db.Querier) ([]db.ColumnRef, error) {
	return db.Select(ctx, q, func(r *sql.Rows) (c db.ColumnRef, err error) {
		return c, r.Scan(&c.Schema, &c.Table, &c.Column, &c.Type)
	}, `SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped AND `+userSchema+`
ORDER BY 1, 2, a.attnum`)
}

// systemNamespace is true for the namespace whose oid is $1 when it is the
// system's: compared by oid with pg_catalog, information_schema and
// pg_toast, plus the per-session temp and toast-temp schemas.
const systemNamespace = `(SELECT n.oid IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
        OR n.nspname LIKE 'pg\_toast\_temp\_%' OR n.nspname LIKE 'pg\_temp\_%' FROM pg_namespace n WHERE n.oid = $1)`

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
	err := q.QueryRowContext(ctx, "SELECT "+strings.ReplaceAll(systemNamespace, "$1", "(SELECT oid FROM pg_namespace WHERE nspname = $1)"), schema).Scan(&sys)
	return sys != nil && *sys, err
}

// SystemRelation resolves the name as PostgreSQL would (to_regclass, so an
// unqualified name follows search_path, which always begins with
// pg_catalog) and tests the schema it lands in.
func (Engine) SystemRelation(ctx context.Context, q db.Querier, schema, name string) (bool, error) {
	var sys *bool
	err := q.QueryRowContext(ctx, "SELECT "+strings.ReplaceAll(systemNamespace, "$1", "(SELECT relnamespace FROM pg_class WHERE oid = to_regclass($1))"), db.Qualify(schema, name)).Scan(&sys)
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
		return "'" + strconv.FormatFloat(f, 'g', -1, 64) + "'::float8"
	}
	lit := db.Literal(v, func(b bool) string {
		if b {
			return "TRUE"
		}
		return "FALSE"
	}, func(b []byte) string { return "decode('" + hex.EncodeToString(b) + "', 'hex')" })
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
