package db

import "context"

// Object is one entry of a schema.
type Object struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Type   string `json:"type"`            // table, view, index, trigger, sequence, function, procedure
	Table  string `json:"table,omitempty"` // the table an index or trigger belongs to
}

// Column describes a table's column.
type Column struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Nullable   bool    `json:"nullable"`
	Default    *string `json:"default"`
	PrimaryKey bool    `json:"primaryKey"`
	Comment    string  `json:"comment,omitempty"`
}

// Index describes an index of a table.
type Index struct {
	Name       string   `json:"name"`
	Columns    []string `json:"columns"`
	Unique     bool     `json:"unique"`
	Definition string   `json:"definition,omitempty"`
}

// ForeignKey is a reference from a child table's columns to a parent's.
type ForeignKey struct {
	Name          string   `json:"name,omitempty"`
	Schema        string   `json:"schema"`
	Table         string   `json:"table"`
	Columns       []string `json:"columns"`
	ParentSchema  string   `json:"parentSchema"`
	ParentTable   string   `json:"parentTable"`
	ParentColumns []string `json:"parentColumns"`
	OnDelete      string   `json:"onDelete,omitempty"`
}

// Table describes a table or view.
type Table struct {
	Schema      string       `json:"schema"`
	Name        string       `json:"name"`
	Type        string       `json:"type"` // table or view
	Columns     []Column     `json:"columns"`
	PrimaryKey  []string     `json:"primaryKey"`
	Indexes     []Index      `json:"indexes"`
	ForeignKeys []ForeignKey `json:"foreignKeys"`
	RowEstimate int64        `json:"rowEstimate"` // -1 when unknown
	Comment     string       `json:"comment,omitempty"`
}

// Definition is the source of a view, trigger or routine.
type Definition struct {
	Schema    string `json:"schema"`
	Name      string `json:"name"`
	Type      string `json:"type"`                // view, trigger, function, procedure
	Table     string `json:"table,omitempty"`     // a trigger's table
	Signature string `json:"signature,omitempty"` // a routine's argument types
	// Source is the source, cut by the database at MaxSourceChars
	// characters: anyone who may create a view or routine can make its
	// source as large as the database allows, and every user's tools read
	// the catalog.
	Source string `json:"source"`
	// Length is the source's whole length in characters; it is over
	// MaxSourceChars when Source is cut.
	Length int64 `json:"length"`
	// Excerpt is, with DefinitionFilter.Contains, the source around its
	// first match (at most ExcerptChars characters on either side).
	Excerpt string `json:"-"`
}

// Truncated reports whether Source is cut.
func (d Definition) Truncated() bool { return d.Length > MaxSourceChars }

// MaxSourceChars bounds the source of a definition the database hands the
// tools; ExcerptChars is how much of a source around a match a search
// returns on each side of it.
const (
	MaxSourceChars = 64 << 10
	ExcerptChars   = 160
)

// DefinitionFilter selects definitions in the database, so that the tools
// never read every source whole. Zero fields select everything.
type DefinitionFilter struct {
	Contains string // a substring of the source, case-insensitive (ASCII on SQLite)
	Schema   string // only this schema
	Name     string // only this name, case-insensitive
}

// ColumnRef names a column of a table or view.
type ColumnRef struct {
	Schema string `json:"schema"`
	Table  string `json:"table"`
	Column string `json:"column"`
	Type   string `json:"type"`
}

// Catalog is an engine's catalog queries. Each runs inside the session's
// transaction, so it sees the session's own uncommitted changes. A schema
// argument of "" means the session's default schema (main on SQLite,
// current_schema() on PostgreSQL); a missing object is an *Error of kind
// notFound.
type Catalog interface {
	// DatabaseName names the database for status: the file for SQLite, the
	// database for PostgreSQL. A session reads it once: a connection's
	// database does not change.
	DatabaseName(ctx context.Context, q Querier) (string, error)

	// DefaultSchema is the schema unqualified names resolve to.
	DefaultSchema(ctx context.Context, q Querier) (string, error)

	// Schemas lists the user's schemas (never the system's).
	Schemas(ctx context.Context, q Querier) ([]string, error)

	// Objects lists a schema's entries; schema "*" lists every user schema.
	Objects(ctx context.Context, q Querier, schema string) ([]Object, error)

	// Table describes a table or view.
	Table(ctx context.Context, q Querier, schema, name string) (*Table, error)

	// Children lists the foreign keys that reference a table.
	Children(ctx context.Context, q Querier, schema, name string) ([]ForeignKey, error)

	// TableDDL returns the statements that recreate a table with its
	// indexes (and triggers, where the engine keeps their source).
	TableDDL(ctx context.Context, q Querier, schema, name string) (string, error)

	// Definitions lists the views, triggers and routines in the user's
	// schemas that pass the filter, each source cut at MaxSourceChars;
	// the search runs in the database.
	Definitions(ctx context.Context, q Querier, f DefinitionFilter) ([]Definition, error)

	// Columns lists every column of every table and view in the user's
	// schemas.
	Columns(ctx context.Context, q Querier) ([]ColumnRef, error)

	// SystemSchema reports whether a schema belongs to the system, by
	// identity (the schema the name resolves to), not by spelling.
	SystemSchema(ctx context.Context, q Querier, schema string) (bool, error)

	// SystemRelation reports whether the relation a (schema, name) pair
	// resolves to belongs to the system. An unknown relation is not.
	SystemRelation(ctx context.Context, q Querier, schema, name string) (bool, error)

	// Fold gives an unquoted identifier its stored spelling (PostgreSQL
	// folds to lower case; SQLite keeps it and matches case-insensitively).
	Fold(ident string) string

	// Literal renders a value read from this engine as an SQL literal, for
	// export_table.
	Literal(v any) string

	// Features says which optional tools the engine supports.
	Features() Features
}

// Features are the optional capabilities of an engine. A tool that needs one
// is not registered on an engine without it.
type Features struct {
	Schemas  bool // CREATE/DROP SCHEMA
	Routines bool // stored functions and procedures with source
	Comments bool // COMMENT ON
	Cascade  bool // DROP ... CASCADE
}
