package db

import (
	"context"
	"errors"
	"fmt"
)

// Kinds of failure, the same vocabulary as the tool error kinds of package
// tools, which reports an *Error's Kind as structuredContent.error.kind.
const (
	KindInvalidParams = "invalidParams"
	KindNotFound      = "notFound"
	KindRefused       = "refused"
	KindReadOnly      = "readOnly"
	KindSQLError      = "sqlError"
	KindConflict      = "conflict"
	KindOther         = "other"
)

// Error is a database failure with a kind and, for sqlError and conflict,
// the engine's own code.
type Error struct {
	Kind    string
	Code    string // SQLSTATE on PostgreSQL, the extended result code name on SQLite
	Message string // safe to show; says what to do
	Err     error  // the cause
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind.
func Errorf(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ErrClosed is returned by a session whose connection is gone.
var ErrClosed = errors.New("db: the session's database connection is closed; start a new MCP session")

// classify turns any error from a statement into an *Error: one the engine
// recognises, a timeout or cancellation, or an sqlError carrying the text.
func classify(eng Engine, ctx context.Context, err error) *Error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	if ctxErr := ctx.Err(); ctxErr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if errors.Is(ctxErr, context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return &Error{Kind: KindOther, Code: "timeout", Message: "db: the statement ran past the statement timeout and was stopped; narrow it (a WHERE clause, a LIMIT) or ask the operator for a longer timeout", Err: err}
		}
		return &Error{Kind: KindOther, Code: "cancelled", Message: "db: the statement was cancelled", Err: err}
	}
	if e := eng.Classify(err); e != nil {
		return e
	}
	return &Error{Kind: KindSQLError, Message: "db: " + err.Error(), Err: err}
}
