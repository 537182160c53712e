package tools

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/tools/db"
)

// listingToolset lists what the database holds.
func listingToolset() *Toolset {
	return &Toolset{
		Name:        "listing",
		Description: "List schemas, tables and every entry of a schema.",
		Tools: dbTools([]Tool{
			{
				Name:        "list_schemas",
				Description: "List the database's schemas (never the system's own).",
				Safe:        true, ReadOnly: true,
				Handler: listSchemas,
			},
			{
				Name:        "list_tables",
				Description: "List the tables and views of one schema.",
				Params:      []Param{schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: listTables,
			},
			{
				Name:        "list_all_tables",
				Description: "List every table and view in every schema.",
				Safe:        true, ReadOnly: true,
				Handler: listAllTables,
			},
			{
				Name:        "list_schema_entries",
				Description: "List every entry of a schema, each tagged with its type: tables, views, indexes, triggers, sequences, functions and procedures.",
				Params:      []Param{schemaParam},
				Safe:        true, ReadOnly: true,
				Handler: listSchemaEntries,
			},
		}),
	}
}

func listSchemas(ctx context.Context, env *Env, _ Args) (*Result, error) {
	var schemas []string
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) (err error) {
		schemas, err = cat.Schemas(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Result{Text: lines(schemas), Structured: map[string]any{"schemas": schemas}}, nil
}

// objects lists a schema's objects ("*" for every schema), keeping those
// whose type passes keep.
func objects(ctx context.Context, env *Env, schema string, keep func(db.Object) bool) ([]db.Object, error) {
	var out []db.Object
	err := read(ctx, env, func(ctx context.Context, q db.Querier, cat db.Catalog) error {
		all, err := cat.Objects(ctx, q, schema)
		for _, o := range all {
			if keep(o) {
				out = append(out, o)
			}
		}
		return err
	})
	if out == nil {
		out = []db.Object{}
	}
	return out, err
}

func isRelation(o db.Object) bool { return o.Type == "table" || o.Type == "view" }

func objectResult(objs []db.Object, withSchema bool, maxItems int) *Result {
	shown, note := capList(objs, maxItems)
	ls := make([]string, 0, len(shown)+1)
	for _, o := range shown {
		name := o.Name
		if withSchema {
			name = o.Schema + "." + o.Name
		}
		line := fmt.Sprintf("%s (%s)", name, o.Type)
		if o.Table != "" {
			line += " on " + o.Table
		}
		ls = append(ls, line)
	}
	ls = append(ls, note)
	return &Result{Text: lines(ls), Structured: map[string]any{"entries": shown, "total": len(objs)}}
}

func listTables(ctx context.Context, env *Env, a Args) (*Result, error) {
	objs, err := objects(ctx, env, a.String("schema"), isRelation)
	if err != nil {
		return nil, err
	}
	return objectResult(objs, false, env.DB.Config().MaxRows), nil
}

func listAllTables(ctx context.Context, env *Env, _ Args) (*Result, error) {
	objs, err := objects(ctx, env, "*", isRelation)
	if err != nil {
		return nil, err
	}
	return objectResult(objs, true, env.DB.Config().MaxRows), nil
}

func listSchemaEntries(ctx context.Context, env *Env, a Args) (*Result, error) {
	objs, err := objects(ctx, env, a.String("schema"), func(db.Object) bool { return true })
	if err != nil {
		return nil, err
	}
	return objectResult(objs, false, env.DB.Config().MaxRows), nil
}
