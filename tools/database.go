package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/tools/db"
)

// Params shared by the database tools.
var (
	schemaParam = Param{Name: "schema", Type: String, Description: "Schema name; default: the session's default schema (main on SQLite, the first schema of search_path on PostgreSQL)."}
	tableParam  = Param{Name: "table", Type: String, Required: true, Description: "Table name, as stored (not SQL: no quotes)."}
	limitParam  = Param{Name: "limit", Type: Integer, Min: 1, Max: 100000, Description: "Most rows to return; default and ceiling: the worker's row cap (MCPGATE_WORKER_DB_MAX_ROWS, 500 by default)."}
)

// read runs fn in the session's transaction and undoes whatever it did.
func read(ctx context.Context, env *Env, fn func(ctx context.Context, q db.Querier, cat db.Catalog) error) error {
	return env.DB.Read(ctx, func(ctx context.Context, q db.Querier) error {
		return fn(ctx, q, env.DB.Catalog())
	})
}

// rowLimit is the limit argument, clamped to the worker's row cap.
func rowLimit(env *Env, a Args) int {
	ceiling := env.DB.Config().MaxRows
	return int(min(a.Int("limit", int64(ceiling)), int64(ceiling)))
}

// capList cuts a list to max items and says so, with the true total.
func capList[T any](items []T, limit int) ([]T, string) {
	if len(items) <= limit {
		return items, fmt.Sprintf("(%d)", len(items))
	}
	return items[:limit], fmt.Sprintf("(showing %d of %d)", limit, len(items))
}

// guardRelation refuses a change to a system relation, by identity.
func guardRelation(ctx context.Context, q db.Querier, cat db.Catalog, schema, name string) error {
	sys, err := cat.SystemRelation(ctx, q, schema, name)
	if err != nil {
		return err
	}
	if sys {
		return Errorf(KindRefused, "%s is a system object and is never changed by these tools; change your own tables instead", qualified(schema, name))
	}
	return nil
}

// guardSchema refuses a change to a system schema, by identity.
func guardSchema(ctx context.Context, q db.Querier, cat db.Catalog, schema string) error {
	sys, err := cat.SystemSchema(ctx, q, schema)
	if err != nil {
		return err
	}
	if sys {
		return Errorf(KindRefused, "schema %q belongs to the system and is never changed by these tools; use a schema of your own (create_schema)", schema)
	}
	return nil
}

func qualified(schema, name string) string {
	if schema == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q.%q", schema, name)
}

// dbTools marks every tool of a database toolset as needing a database.
func dbTools(tools []Tool) []Tool {
	for i := range tools {
		tools[i].NeedsDB = true
	}
	return tools
}

// lines joins formatted lines.
func lines(ls []string) string { return strings.Join(ls, "\n") }
