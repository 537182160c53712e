package db

import "context"

// Catalog is an engine's catalog queries. Each runs inside the session's
// transaction, so it sees the session's own uncommitted changes.
type Catalog interface {
	// DatabaseName names the database for status: the file for SQLite, the
	// database for PostgreSQL.
	DatabaseName(ctx context.Context, q Querier) (string, error)
}
