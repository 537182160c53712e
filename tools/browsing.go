package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// browsingToolset shows how a table, view or routine is made.
func browsingToolset() *Toolset {
	viewParam := Param{Name: "view", Type: String, Required: true, Description: "View name, as stored."}
	routineParam := Param{Name: "routine", Type: String, Required: true, Description: "Function or procedure name, as stored."}
	return &Toolset{
		Name:        "browsing",
		Description: "Describe tables, views and routines: columns, keys, DDL, relations, data.",
		Tools: dbTools([]Tool{
			{
				Name:        "describe_table",
				Description: "Describe a table or view: columns (type, nullability, default), primary key, indexes, foreign keys and a row estimate.",
				Params:      []Param{tableParam, schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: describeTable,
			},
			{
				Name:        "get_table_ddl",
				Description: "The statements that recreate a table with its indexes (and, on SQLite, its triggers).",
				Params:      []Param{tableParam, schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: getTableDDL,
			},
			{
				Name:        "get_table_relations",
				Description: "A table's foreign-key parents (tables it references) and children (tables that reference it).",
				Params:      []Param{tableParam, schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: getTableRelations,
			},
			{
				Name:        "export_table",
				Description: "A table's DDL followed by INSERT statements for its rows, capped with the true row count.",
				Params:      []Param{tableParam, schemaParam, limitParam},
				Safe:        true, ReadOnly: true,
				Handler: exportTable,
			},
			{
				Name:        "get_view_definition",
				Description: "The SQL that defines a view.",
				Params:      []Param{viewParam, schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: getViewDefinition,
			},
			{
				Name:        "get_routine_source",
				Description: "The source of a function or procedure (every overload of the name). PostgreSQL only.",
				Params:      []Param{routineParam, schemaParam},
				Safe:        true, ReadOnly: true,
				Engines: []string{db.Postgres},
				Handler: getRoutineSource,
			},
		}),
	}
}

func describeTable(ctx context.Context, env *Env, a Args) (*Result, error) {
	var t *db.Table
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (err error) {
		t, err = cat.Table(ctx, q, a.String("schema"), a.String("table"))
		return err
	})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s.%s", t.Type, t.Schema, t.Name)
	if t.Comment != "" {
		fmt.Fprintf(&b, " -- %s", t.Comment)
	}
	b.WriteString("\ncolumns:\n")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "  %s %s", c.Name, c.Type)
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
		if c.Default != nil {
			fmt.Fprintf(&b, " DEFAULT %s", *c.Default)
		}
		if c.PrimaryKey {
			b.WriteString(" (primary key)")
		}
		if c.Comment != "" {
			fmt.Fprintf(&b, " -- %s", c.Comment)
		}
		b.WriteByte('\n')
	}
	if len(t.PrimaryKey) > 0 {
		fmt.Fprintf(&b, "primary key: (%s)\n", strings.Join(t.PrimaryKey, ", "))
	}
	for _, ix := range t.Indexes {
		u := ""
		if ix.Unique {
			u = "unique "
		}
		fmt.Fprintf(&b, "%sindex %s (%s)\n", u, ix.Name, strings.Join(ix.Columns, ", "))
	}
	for _, fk := range t.ForeignKeys {
		fmt.Fprintf(&b, "foreign key (%s) references %s.%s (%s)\n", strings.Join(fk.Columns, ", "), fk.ParentSchema, fk.ParentTable, strings.Join(fk.ParentColumns, ", "))
	}
	if t.RowEstimate >= 0 {
		fmt.Fprintf(&b, "rows (estimate): %d\n", t.RowEstimate)
	}
	return &Result{Text: b.String(), Structured: t}, nil
}

func getTableDDL(ctx context.Context, env *Env, a Args) (*Result, error) {
	var ddl string
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (err error) {
		ddl, err = cat.TableDDL(ctx, q, a.String("schema"), a.String("table"))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Result{Text: ddl, Structured: map[string]any{"ddl": ddl}}, nil
}

func getTableRelations(ctx context.Context, env *Env, a Args) (*Result, error) {
	var t *db.Table
	var children []db.ForeignKey
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (err error) {
		if t, err = cat.Table(ctx, q, a.String("schema"), a.String("table")); err != nil {
			return err
		}
		children, err = cat.Children(ctx, q, t.Schema, t.Name)
		return err
	})
	if err != nil {
		return nil, err
	}
	ls := []string{fmt.Sprintf("parents of %s.%s (%d):", t.Schema, t.Name, len(t.ForeignKeys))}
	for _, fk := range t.ForeignKeys {
		ls = append(ls, fmt.Sprintf("  (%s) -> %s.%s (%s)", strings.Join(fk.Columns, ", "), fk.ParentSchema, fk.ParentTable, strings.Join(fk.ParentColumns, ", ")))
	}
	ls = append(ls, fmt.Sprintf("children (%d):", len(children)))
	for _, fk := range children {
		ls = append(ls, fmt.Sprintf("  %s.%s (%s) -> (%s)", fk.Schema, fk.Table, strings.Join(fk.Columns, ", "), strings.Join(fk.ParentColumns, ", ")))
	}
	return &Result{Text: lines(ls), Structured: map[string]any{"schema": t.Schema, "table": t.Name, "parents": t.ForeignKeys, "children": children}}, nil
}

func exportTable(ctx context.Context, env *Env, a Args) (*Result, error) {
	limit := rowLimit(env, a)
	var ddl string
	var page *db.Page[string]
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		t, err := cat.Table(ctx, q, a.String("schema"), a.String("table"))
		if err != nil {
			return err
		}
		if ddl, err = cat.TableDDL(ctx, q, t.Schema, t.Name); err != nil {
			return err
		}
		target := db.Qualify(t.Schema, t.Name)
		rows, err := q.QueryContext(ctx, "SELECT * FROM "+target)
		if err != nil {
			return err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return err
		}
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = db.Quote(c)
		}
		head := "INSERT INTO " + target + " (" + strings.Join(quoted, ", ") + ") VALUES ("
		page, err = db.Scan(rows, limit, db.MaxBytes, func(vals []any) (string, int) {
			// Size the INSERT before building it: a row over the cap is
			// left out, not rendered (a cut INSERT would load wrong data).
			n := len(head) + 2
			for _, v := range vals {
				switch x := v.(type) {
				case db.Long:
					return "", db.MaxBytes + 1
				case []byte:
					n += 2*len(x) + 5
				case string:
					n += len(x) + strings.Count(x, "'") + strings.Count(x, `\`) + 4
				default:
					n += 24
				}
			}
			if n > db.MaxBytes {
				return "", n
			}
			lits := make([]string, len(vals))
			for i, v := range vals {
				lits[i] = cat.Literal(v)
			}
			ins := head + strings.Join(lits, ", ") + ");"
			return ins, len(ins)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("-- %d row(s)", page.Total)
	switch {
	case page.TotalAtLeast:
		note = fmt.Sprintf("-- showing %d of more than %d rows", len(page.Items), page.Total)
	case page.Truncated:
		note = fmt.Sprintf("-- showing %d of %d rows", len(page.Items), page.Total)
	}
	if page.Oversize > 0 {
		note += fmt.Sprintf("; %d row(s) left out: each one's INSERT is over the %d-byte result cap (query shows them, with long values cut)", page.Oversize, db.MaxBytes)
	}
	if page.RowTooLarge {
		note += fmt.Sprintf("; the export stops at the next row, which is over the %d MiB row bound", db.MaxRowBytes>>20)
	}
	text := ddl + "\n" + strings.Join(page.Items, "\n") + "\n" + note + "\n"
	return &Result{Text: text, Structured: map[string]any{"ddl": ddl, "inserts": page.Items, "total": page.Total, "truncated": page.Truncated, "oversize": page.Oversize, "rowTooLarge": page.RowTooLarge}}, nil
}

// definition finds the definitions of one type ("view", or "routine" for
// functions and procedures) named name in schema ("" for the default):
// exact spelling first, else the one case-insensitive match.
func definition(ctx context.Context, env *Env, typ, schema, name string) ([]db.Definition, error) {
	var found []db.Definition
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		if schema == "" {
			var err error
			if schema, err = cat.DefaultSchema(ctx, q); err != nil {
				return err
			}
		}
		defs, err := cat.Definitions(ctx, q, db.DefinitionFilter{Schema: schema, Name: name})
		if err != nil {
			return err
		}
		var exact, folded []db.Definition
		for _, d := range defs {
			if !(d.Type == typ || typ == "routine" && (d.Type == "function" || d.Type == "procedure")) || d.Schema != schema {
				continue
			}
			if d.Name == name {
				exact = append(exact, d)
			} else if strings.EqualFold(d.Name, name) {
				folded = append(folded, d)
			}
		}
		found = exact
		if len(found) == 0 && len(folded) > 0 && allSameName(folded) {
			found = folded
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, Errorf(KindNotFound, "no %s %q in schema %q; list_schema_entries shows what there is", typ, name, schema)
	}
	return found, nil
}

func allSameName(ds []db.Definition) bool {
	for _, d := range ds {
		if d.Name != ds[0].Name {
			return false
		}
	}
	return true
}

func getViewDefinition(ctx context.Context, env *Env, a Args) (*Result, error) {
	defs, err := definition(ctx, env, "view", a.String("schema"), a.String("view"))
	if err != nil {
		return nil, err
	}
	d := defs[0]
	return &Result{Text: sourceText(d), Structured: d}, nil
}

// sourceText is a definition's source, with a note when the database cut
// it (db.MaxSourceChars).
func sourceText(d db.Definition) string {
	if !d.Truncated() {
		return d.Source
	}
	return fmt.Sprintf("%s\n… [source cut at %d of %d characters]", d.Source, db.MaxSourceChars, d.Length)
}

func getRoutineSource(ctx context.Context, env *Env, a Args) (*Result, error) {
	defs, err := definition(ctx, env, "routine", a.String("schema"), a.String("routine"))
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = sourceText(d)
	}
	return &Result{Text: strings.Join(parts, "\n\n"), Structured: map[string]any{"routines": defs}}, nil
}
