package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// notInternal filters out SQLite's own objects (sqlite_schema,
// sqlite_sequence, sqlite_autoindex_*, sqlite_stat*).
const notInternal = `name NOT LIKE 'sqlite\_%' ESCAPE '\'`

// DefaultSchema is main.
func (Engine) DefaultSchema(context.Context, db.Querier) (string, error) { return "main", nil }

// database is a row of PRAGMA database_list.
type database struct{ name, file string }

// databases lists the connection's databases in their order. PRAGMA
// database_list is refused to clients (guard.go), so the catalog's read of
// it is marked; and it is the PRAGMA statement, not a read of
// pragma_database_list: a client may create a table or view of that name
// (CREATE TEMP VIEW pragma_database_list ...), which would shadow the
// eponymous table in a marked read allowed to see the files.
func databases(ctx context.Context, q db.Querier) ([]database, error) {
	rows, err := q.QueryContext(catalogRead(ctx), "PRAGMA database_list")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []database
	for rows.Next() {
		var seq int64
		var name, file sql.NullString
		if err := rows.Scan(&seq, &name, &file); err != nil {
			return nil, err
		}
		out = append(out, database{name.String, file.String})
	}
	return out, rows.Err()
}

// Schemas lists main and any attached database (temp is per connection).
func (Engine) Schemas(ctx context.Context, q db.Querier) ([]string, error) {
	ds, err := databases(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, d := range ds {
		if d.name != "temp" {
			out = append(out, d.name)
		}
	}
	return out, nil
}

// schema resolves a schema name ("" is main) to its canonical spelling.
func schema(ctx context.Context, q db.Querier, name string) (string, error) {
	if name == "" {
		return "main", nil
	}
	ds, err := databases(ctx, q)
	if err != nil {
		return "", err
	}
	for _, d := range ds {
		if d.name != "temp" && strings.EqualFold(d.name, name) {
			return d.name, nil
		}
	}
	return "", db.Errorf(db.KindNotFound, "sqlite: no schema %q; list_schemas shows what there is", name)
}

// Objects lists tables, views, indexes and triggers.
func (e Engine) Objects(ctx context.Context, q db.Querier, s string) ([]db.Object, error) {
	var schemas []string
	if s == "*" {
		var err error
		if schemas, err = e.Schemas(ctx, q); err != nil {
			return nil, err
		}
	} else {
		got, err := schema(ctx, q, s)
		if err != nil {
			return nil, err
		}
		schemas = []string{got}
	}
	out := []db.Object{}
	for _, sc := range schemas {
		objs, err := db.Select(ctx, q, func(r *sql.Rows) (o db.Object, err error) {
			o.Schema = sc
			err = r.Scan(&o.Type, &o.Name, &o.Table)
			if o.Type == "table" || o.Type == "view" {
				o.Table = ""
			}
			return o, err
		}, "SELECT type, name, tbl_name FROM "+db.Quote(sc)+".sqlite_schema WHERE "+notInternal+" ORDER BY type, name")
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// relation resolves a table or view to its schema, canonical name, type and
// source.
func relation(ctx context.Context, q db.Querier, s, name string) (sc, canon, typ, sql string, err error) {
	if sc, err = schema(ctx, q, s); err != nil {
		return
	}
	var src *string
	err = q.QueryRowContext(ctx, "SELECT name, type, sql FROM "+db.Quote(sc)+".sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE", name).Scan(&canon, &typ, &src)
	if err != nil {
		return "", "", "", "", db.Errorf(db.KindNotFound, "sqlite: no table or view %q in schema %q; list_tables shows what there is", name, sc)
	}
	if src != nil {
		sql = *src
	}
	return
}

// Table describes a table or view from the table_info, index_list and
// foreign_key_list pragmas; the row estimate is an exact count.
func (Engine) Table(ctx context.Context, q db.Querier, s, name string) (*db.Table, error) {
	sc, canon, typ, _, err := relation(ctx, q, s, name)
	if err != nil {
		return nil, err
	}
	t := &db.Table{Schema: sc, Name: canon, Type: typ, Columns: []db.Column{}, PrimaryKey: []string{}, Indexes: []db.Index{}, ForeignKeys: []db.ForeignKey{}, RowEstimate: -1}
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?, ?) ORDER BY cid`, canon, sc)
	if err != nil {
		return nil, err
	}
	type pkcol struct {
		name string
		pos  int
	}
	var pks []pkcol
	for rows.Next() {
		var c db.Column
		var notNull, pk int
		if err := rows.Scan(&c.Name, &c.Type, &notNull, &c.Default, &pk); err != nil {
			rows.Close()
			return nil, err
		}
		c.Nullable = notNull == 0 && pk == 0
		c.PrimaryKey = pk > 0
		if pk > 0 {
			pks = append(pks, pkcol{c.Name, pk})
		}
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	for i := 1; i <= len(pks); i++ {
		for _, p := range pks {
			if p.pos == i {
				t.PrimaryKey = append(t.PrimaryKey, p.name)
			}
		}
	}
	if typ == "view" {
		return t, rows.Err()
	}
	idx, err := q.QueryContext(ctx, `SELECT l.name, l."unique", COALESCE(`+cutSQL("m.sql")+`, ''), (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(l.name, ?) ORDER BY seqno))
		FROM pragma_index_list(?, ?) l LEFT JOIN `+db.Quote(sc)+`.sqlite_schema m ON m.name = l.name ORDER BY l.name`, sc, canon, sc)
	if err != nil {
		return nil, err
	}
	for idx.Next() {
		var ix db.Index
		var cols *string
		if err := idx.Scan(&ix.Name, &ix.Unique, &ix.Definition, &cols); err != nil {
			idx.Close()
			return nil, err
		}
		if cols != nil {
			ix.Columns = strings.Split(*cols, ",")
		}
		t.Indexes = append(t.Indexes, ix)
	}
	idx.Close()
	fks, err := foreignKeys(ctx, q, sc, `SELECT ?, f.id, f."table", f."from", f."to", f.on_delete FROM pragma_foreign_key_list(?, ?) f ORDER BY f.id, f.seq`, canon, canon, sc)
	if err != nil {
		return nil, err
	}
	t.ForeignKeys = fks
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+db.Qualify(sc, canon)).Scan(&t.RowEstimate); err != nil {
		return nil, err
	}
	return t, nil
}

// foreignKeys runs a query yielding (child, id, parent, from, to, on_delete)
// ordered by child, id, seq and groups it into keys. A NULL "to" means the
// parent's primary key.
func foreignKeys(ctx context.Context, q db.Querier, sc, query string, args ...any) ([]db.ForeignKey, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out := []db.ForeignKey{}
	lastChild, lastID := "", -1
	for rows.Next() {
		var child, parent, from, onDelete string
		var to *string
		var id int
		if err := rows.Scan(&child, &id, &parent, &from, &to, &onDelete); err != nil {
			rows.Close()
			return nil, err
		}
		if child != lastChild || id != lastID {
			out = append(out, db.ForeignKey{Schema: sc, Table: child, ParentSchema: sc, ParentTable: parent, OnDelete: onDelete})
			lastChild, lastID = child, id
		}
		fk := &out[len(out)-1]
		fk.Columns = append(fk.Columns, from)
		if to != nil {
			fk.ParentColumns = append(fk.ParentColumns, *to)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if len(out[i].ParentColumns) == 0 {
			pk, err := strs(ctx, q, "SELECT name FROM pragma_table_info(?, ?) WHERE pk > 0 ORDER BY pk", out[i].ParentTable, sc)
			if err != nil {
				return nil, err
			}
			out[i].ParentColumns = pk
		}
	}
	return out, nil
}

// Children lists the foreign keys of every table of the schema that point
// at the table.
func (Engine) Children(ctx context.Context, q db.Querier, s, name string) ([]db.ForeignKey, error) {
	sc, canon, _, _, err := relation(ctx, q, s, name)
	if err != nil {
		return nil, err
	}
	return foreignKeys(ctx, q, sc, `SELECT m.name, f.id, f."table", f."from", f."to", f.on_delete
		FROM `+db.Quote(sc)+`.sqlite_schema m, pragma_foreign_key_list(m.name, ?) f
		WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE ORDER BY m.name, f.id, f.seq`, sc, canon)
}

// cutSQL is the SQL for the text expr cut in SQLite at db.MaxSourceChars
// characters, ending then in a note with its true length: a user can plant
// any number of indexes and triggers on a shared table, each as long as a
// request allows, and another user's describe_table and get_table_ddl read
// them all.
func cutSQL(expr string) string {
	n := strconv.Itoa(db.MaxSourceChars)
	return "CASE WHEN length(" + expr + ") > " + n + " THEN substr(" + expr + ", 1, " + n + ") || '… [cut at " + n + " of ' || length(" + expr + ") || ' characters]' ELSE " + expr + " END"
}

// TableDDL returns the table's CREATE statement as SQLite keeps it, then
// its indexes' and triggers', each cut at db.MaxSourceChars (cutSQL).
func (Engine) TableDDL(ctx context.Context, q db.Querier, s, name string) (string, error) {
	sc, canon, typ, src, err := relation(ctx, q, s, name)
	if err != nil {
		return "", err
	}
	if typ != "table" {
		return "", db.Errorf(db.KindInvalidParams, "sqlite: %q is a view; get_view_definition shows its SQL", canon)
	}
	rest, err := strs(ctx, q, "SELECT "+cutSQL("sql")+" FROM "+db.Quote(sc)+".sqlite_schema WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name", canon)
	if err != nil {
		return "", err
	}
	return strings.Join(append([]string{src}, rest...), ";\n") + ";\n", nil
}

// Definitions lists the views and triggers that pass f. The search and
// the cuts run in SQLite (instr, substr), one row at a time, so that a
// planted view with a huge source (a comment of many MB) costs its one row
// and never makes the tool's result, or a sort of every source, exceed the
// heap bound.
func (e Engine) Definitions(ctx context.Context, q db.Querier, f db.DefinitionFilter) ([]db.Definition, error) {
	schemas, err := e.Schemas(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []db.Definition{}
	for _, sc := range schemas {
		if f.Schema != "" && sc != f.Schema {
			continue
		}
		defs, err := db.Select(ctx, q, func(r *sql.Rows) (d db.Definition, err error) {
			d.Schema = sc
			err = r.Scan(&d.Type, &d.Name, &d.Table, &d.Source, &d.Length, &d.Excerpt)
			if d.Type == "view" {
				d.Table = ""
			}
			return d, err
		}, `SELECT type, name, tbl_name, substr(sql, 1, ?1), length(sql),
       CASE WHEN ?2 = '' THEN '' ELSE substr(sql, max(1, p - ?3), 2 * ?3 + length(?2)) END
FROM (SELECT type, name, tbl_name, sql, instr(lower(sql), lower(?2)) AS p FROM `+db.Quote(sc)+`.sqlite_schema
      WHERE type IN ('view', 'trigger') AND sql IS NOT NULL AND `+notInternal+` AND (?4 = '' OR name = ?4 COLLATE NOCASE))
WHERE ?2 = '' OR p > 0 ORDER BY type, name`, db.MaxSourceChars, f.Contains, db.ExcerptChars, f.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	return out, nil
}

// Columns lists every column of every table and view.
func (e Engine) Columns(ctx context.Context, q db.Querier) ([]db.ColumnRef, error) {
	schemas, err := e.Schemas(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []db.ColumnRef{}
	for _, sc := range schemas {
		cols, err := db.Select(ctx, q, func(r *sql.Rows) (c db.ColumnRef, err error) {
			c.Schema = sc
			return c, r.Scan(&c.Table, &c.Column, &c.Type)
		}, "SELECT m.name, p.name, p.type FROM "+db.Quote(sc)+".sqlite_schema m, pragma_table_info(m.name, ?) p WHERE m.type IN ('table', 'view') AND m."+notInternal+" ORDER BY m.name, p.cid", sc)
		if err != nil {
			return nil, err
		}
		out = append(out, cols...)
	}
	return out, nil
}

// SystemSchema is false: SQLite's schemas (main, temp, attached files)
// hold the user's objects; its own objects are told apart by name.
func (Engine) SystemSchema(context.Context, db.Querier, string) (bool, error) { return false, nil }

// SystemRelation reports whether name is one of SQLite's internal objects.
// SQLite reserves the sqlite_ prefix (in any case) for them and refuses to
// create a user object so named, so on SQLite the name is the identity.
func (Engine) SystemRelation(_ context.Context, _ db.Querier, _, name string) (bool, error) {
	return strings.HasPrefix(strings.ToLower(name), "sqlite_"), nil
}

// Literal renders v as an SQLite literal: booleans as 1 and 0, bytes as a
// blob literal.
func (Engine) Literal(v any) string {
	return db.Literal(v, func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}, func(b []byte) string { return "X'" + hex.EncodeToString(b) + "'" })
}

// Features: SQLite has no schemas to create, no stored routines, no
// comments and no DROP … CASCADE.
func (Engine) Features() db.Features { return db.Features{} }

// strs runs a query that yields one text column.
var strs = db.Strings

// Fold keeps an identifier as written: SQLite matches names
// case-insensitively.
func (Engine) Fold(ident string) string { return ident }
