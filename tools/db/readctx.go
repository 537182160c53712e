package db

import "context"

type readKey struct{}

// ReadContext marks ctx as the context of a read: Session.Read hands it to
// its function, so an engine that sees it on a statement may refuse any write
// there, whatever the statement text turns out to hold (SQLite's authorizer
// does: tools/db/sqlite).
func ReadContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, readKey{}, true)
}

// Reading reports whether ctx was marked by ReadContext.
func Reading(ctx context.Context) bool {
	v, _ := ctx.Value(readKey{}).(bool)
	return v
}
