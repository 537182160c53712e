package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// mutationToolset changes the schema. Every tool is gated and commits: a
// schema change left in the session's open transaction would hold its
// locks (PostgreSQL's ACCESS EXCLUSIVE, SQLite's one writer) and stall
// every other session until this one ended it. None touches a system object.
func mutationToolset() *Toolset {
	schemaReq := Param{Name: "schema", Type: String, Required: true, Description: "Schema name, as stored."}
	cascade := Param{Name: "cascade", Type: Boolean, Description: "Also drop what depends on it (PostgreSQL); default false."}
	pgOnly := []string{db.Postgres}
	return &Toolset{
		Name:        "mutation",
		Description: "Change the schema: each tool commits the session's transaction.",
		Tools: dbTools([]Tool{
			{
				Name:        "create_schema",
				Description: "Create a schema and commit. PostgreSQL only.",
				Params:      []Param{schemaReq},
				Engines:     pgOnly,
				Handler:     createSchema,
			},
			{
				Name:        "drop_schema",
				Description: "Drop a schema and commit (destructive). Refused for system schemas. PostgreSQL only.",
				Params:      []Param{schemaReq, cascade},
				Destructive: true,
				Engines:     pgOnly,
				Handler:     dropSchema,
			},
			{
				Name: "apply_ddl",
				Description: "Run one CREATE or ALTER of a table, view or index and commit. Any other statement is refused: use execute_sql (then commit) for it. " +
					"System objects are refused.",
				Params:      []Param{{Name: "sql", Type: String, Required: true, Description: "One CREATE TABLE, CREATE VIEW, CREATE INDEX, ALTER TABLE, ALTER VIEW or ALTER INDEX statement."}},
				Destructive: true, // ALTER can drop columns
				Handler:     applyDDL,
			},
			{
				Name:        "drop_table",
				Description: "Drop a table and commit (destructive). Refused for system tables.",
				Params:      []Param{tableParam, schemaParam, cascade},
				Destructive: true,
				Handler:     dropTable,
			},
			{
				Name:        "create_or_replace_routine",
				Description: "Run one CREATE [OR REPLACE] FUNCTION or PROCEDURE statement and commit. PostgreSQL only.",
				Params:      []Param{{Name: "sql", Type: String, Required: true, Description: "One CREATE [OR REPLACE] FUNCTION or PROCEDURE statement."}},
				Destructive: true, // OR REPLACE overwrites
				Engines:     pgOnly,
				Handler:     createOrReplaceRoutine,
			},
			{
				Name:        "drop_routine",
				Description: "Drop a function or procedure and commit (destructive). When the name is overloaded, give the argument types. PostgreSQL only.",
				Params: []Param{{Name: "routine", Type: String, Required: true, Description: "Function or procedure name, as stored."}, schemaParam,
					{Name: "arguments", Type: String, Description: "Argument types as get_routine_source shows them, e.g. \"integer, text\"; needed when the name is overloaded."}},
				Destructive: true,
				Engines:     pgOnly,
				Handler:     dropRoutine,
			},
			{
				Name:        "set_comment",
				Description: "Set (or, with an empty comment, remove) the comment of a table, view or column and commit. PostgreSQL only.",
				Params:      []Param{tableParam, {Name: "column", Type: String, Description: "Comment this column instead of the table."}, schemaParam, {Name: "comment", Type: String, Required: true}},
				Destructive: true, // replaces the previous comment
				Idempotent:  true,
				Engines:     pgOnly,
				Handler:     setComment,
			},
		}),
	}
}

// commitStatement runs one statement after guard and commits.
func commitStatement(ctx context.Context, env *Env, guard func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error)) error {
	return env.DB.CommitAfter(ctx, func(ctx context.Context, q db.Querier) error {
		stmt, err := guard(ctx, q, env.DB.Catalog())
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, stmt)
		return err
	})
}

func committed(what string) *Result {
	return &Result{Text: what + "; committed", Structured: map[string]any{"done": what, "committed": true}}
}

func createSchema(ctx context.Context, env *Env, a Args) (*Result, error) {
	name := a.String("schema")
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		if strings.HasPrefix(strings.ToLower(name), "pg_") {
			return "", Errorf(KindRefused, "schema names starting with pg_ are reserved for the system; choose another name")
		}
		return "CREATE SCHEMA " + db.Quote(name), nil
	})
	if err != nil {
		return nil, err
	}
	return committed(fmt.Sprintf("created schema %q", name)), nil
}

func dropSchema(ctx context.Context, env *Env, a Args) (*Result, error) {
	name := a.String("schema")
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		if err := guardSchema(ctx, q, cat, name); err != nil {
			return "", err
		}
		return "DROP SCHEMA " + db.Quote(name) + cascadeClause(a), nil
	})
	if err != nil {
		return nil, err
	}
	return committed(fmt.Sprintf("dropped schema %q", name)), nil
}

func cascadeClause(a Args) string {
	if a.Bool("cascade", false) {
		return " CASCADE"
	}
	return ""
}

// refuseUnicodeNames refuses a statement that spells a name as U&"…"
// (db.Lexer.HasUnicodeName), which the guards could not check.
func refuseUnicodeNames(lx db.Lexer, tool, stmt string) error {
	if lx.HasUnicodeName(stmt) {
		return Errorf(KindRefused, "%s does not take U&\"…\" (Unicode-escaped) names, which it cannot check against the system objects; write the name plainly or in \"…\", or use execute_sql (then commit)", tool)
	}
	return nil
}

func applyDDL(ctx context.Context, env *Env, a Args) (*Result, error) {
	lx := db.LexerFor(env.DB.Engine())
	stmts := lx.Split(a.String("sql"))
	if len(stmts) != 1 {
		return nil, Errorf(KindInvalidParams, "apply_ddl runs exactly one statement, and \"sql\" holds %d; use execute_sql (then commit) for a script", len(stmts))
	}
	stmt := stmts[0]
	var what string
	if err := refuseUnicodeNames(lx, "apply_ddl", stmt); err != nil {
		return nil, err
	}
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		ddl, ok := lx.ParseDDL(stmt, cat.Fold, db.DDLForms)
		if !ok {
			return "", Errorf(KindRefused, "apply_ddl runs one CREATE or ALTER of a table, view or index, and this is %s; use execute_sql (then commit) for it", strings.Join(ddl.Form, " "))
		}
		schema, name := db.SplitName(ddl.Target)
		if ddl.Form[0] == "CREATE" {
			if err := guardCreate(ctx, q, cat, schema, name); err != nil {
				return "", err
			}
		} else if err := guardRelation(ctx, q, cat, schema, name); err != nil {
			return "", err
		}
		if ddl.On != nil {
			s, n := db.SplitName(ddl.On)
			if err := guardRelation(ctx, q, cat, s, n); err != nil {
				return "", err
			}
		}
		if ddl.Into != nil {
			// SET SCHEMA: the schema the object moves into is changed too.
			if len(ddl.Into) != 1 {
				return "", Errorf(KindRefused, "apply_ddl could not read the schema after SET SCHEMA; write it plainly or in \"…\"")
			}
			if err := guardSchema(ctx, q, cat, ddl.Into[0]); err != nil {
				return "", err
			}
		}
		what = strings.ToLower(strings.Join(ddl.Form, " "))
		if name != "" {
			what += " " + qualified(schema, name)
		}
		return stmt, nil
	})
	if err != nil {
		return nil, err
	}
	return committed("ran " + what), nil
}

// guardCreate refuses to create an object in a system schema, or under a
// system name.
func guardCreate(ctx context.Context, q db.Querier, cat db.Catalog, schema, name string) error {
	in := schema
	if in == "" {
		var err error
		if in, err = cat.DefaultSchema(ctx, q); err != nil {
			return err
		}
	}
	if err := guardSchema(ctx, q, cat, in); err != nil {
		return err
	}
	return guardRelation(ctx, q, cat, schema, name)
}

func dropTable(ctx context.Context, env *Env, a Args) (*Result, error) {
	var what string
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		schema, name := a.String("schema"), a.String("table")
		if err := guardRelation(ctx, q, cat, schema, name); err != nil {
			return "", err
		}
		if a.Bool("cascade", false) && !cat.Features().Cascade {
			return "", Errorf(KindInvalidParams, "argument \"cascade\" is not supported on this engine; drop the dependent tables first")
		}
		t, err := cat.Table(ctx, q, schema, name)
		if err != nil {
			return "", err
		}
		if t.Type != "table" {
			return "", Errorf(KindRefused, "%s.%s is a %s, not a table; use execute_sql (DROP VIEW …) then commit", t.Schema, t.Name, t.Type)
		}
		if err := guardSchema(ctx, q, cat, t.Schema); err != nil {
			return "", err
		}
		what = fmt.Sprintf("dropped table %s.%s", t.Schema, t.Name)
		return "DROP TABLE " + db.Qualify(t.Schema, t.Name) + cascadeClause(a), nil
	})
	if err != nil {
		return nil, err
	}
	return committed(what), nil
}

func createOrReplaceRoutine(ctx context.Context, env *Env, a Args) (*Result, error) {
	lx := db.LexerFor(env.DB.Engine())
	stmts := lx.Split(a.String("sql"))
	if len(stmts) != 1 {
		return nil, Errorf(KindInvalidParams, "create_or_replace_routine runs exactly one statement, and \"sql\" holds %d", len(stmts))
	}
	stmt := stmts[0]
	var what string
	if err := refuseUnicodeNames(lx, "create_or_replace_routine", stmt); err != nil {
		return nil, err
	}
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		ddl, ok := lx.ParseDDL(stmt, cat.Fold, db.RoutineForms)
		if !ok {
			return "", Errorf(KindRefused, "create_or_replace_routine runs one CREATE [OR REPLACE] FUNCTION or PROCEDURE, and this is %s; use apply_ddl or execute_sql", strings.Join(ddl.Form, " "))
		}
		schema, name := db.SplitName(ddl.Target)
		in := schema
		if in == "" {
			var err error
			if in, err = cat.DefaultSchema(ctx, q); err != nil {
				return "", err
			}
		}
		if err := guardSchema(ctx, q, cat, in); err != nil {
			return "", err
		}
		what = fmt.Sprintf("created %s %s", strings.ToLower(ddl.Form[1]), qualified(in, name))
		return stmt, nil
	})
	if err != nil {
		return nil, err
	}
	return committed(what), nil
}

func dropRoutine(ctx context.Context, env *Env, a Args) (*Result, error) {
	defs, err := definition(ctx, env, "routine", a.String("schema"), a.String("routine"))
	if err != nil {
		return nil, err
	}
	if a.Has("arguments") {
		want := normalizeArgs(a.String("arguments"))
		defs = slices.DeleteFunc(defs, func(d db.Definition) bool { return normalizeArgs(d.Signature) != want })
		if len(defs) == 0 {
			return nil, Errorf(KindNotFound, "no %s(%s); get_routine_source lists the overloads", a.String("routine"), a.String("arguments"))
		}
	}
	if len(defs) > 1 {
		sigs := make([]string, len(defs))
		for i, d := range defs {
			sigs[i] = d.Name + "(" + d.Signature + ")"
		}
		return nil, Errorf(KindInvalidParams, "%q is overloaded: %s; give \"arguments\" to choose one", a.String("routine"), strings.Join(sigs, ", "))
	}
	d := defs[0]
	what := fmt.Sprintf("dropped %s %s.%s(%s)", d.Type, d.Schema, d.Name, d.Signature)
	err = commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		if err := guardSchema(ctx, q, cat, d.Schema); err != nil {
			return "", err
		}
		return fmt.Sprintf("DROP %s %s(%s)", strings.ToUpper(d.Type), db.Qualify(d.Schema, d.Name), d.Signature), nil
	})
	if err != nil {
		return nil, err
	}
	return committed(what), nil
}

func normalizeArgs(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(s, ",", ", "))), " ")
}

func setComment(ctx context.Context, env *Env, a Args) (*Result, error) {
	var what string
	err := commitStatement(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (string, error) {
		schema, name := a.String("schema"), a.String("table")
		if err := guardRelation(ctx, q, cat, schema, name); err != nil {
			return "", err
		}
		t, err := cat.Table(ctx, q, schema, name)
		if err != nil {
			return "", err
		}
		if err := guardSchema(ctx, q, cat, t.Schema); err != nil {
			return "", err
		}
		comment := "NULL"
		if c := a.String("comment"); c != "" {
			comment = cat.Literal(c)
		}
		target := strings.ToUpper(t.Type) + " " + db.Qualify(t.Schema, t.Name)
		what = fmt.Sprintf("set the comment of %s %s.%s", t.Type, t.Schema, t.Name)
		if col := a.String("column"); col != "" {
			i := slices.IndexFunc(t.Columns, func(c db.Column) bool { return c.Name == col })
			if i < 0 {
				return "", Errorf(KindNotFound, "%s.%s has no column %q; describe_table lists its columns", t.Schema, t.Name, col)
			}
			target = "COLUMN " + db.Qualify(t.Schema, t.Name) + "." + db.Quote(col)
			what = fmt.Sprintf("set the comment of column %s.%s.%s", t.Schema, t.Name, col)
		}
		return "COMMENT ON " + target + " IS " + comment, nil
	})
	if err != nil {
		return nil, err
	}
	return committed(what), nil
}
