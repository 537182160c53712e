package tools

import (
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/tools/db"
)

// Kind classifies a tool failure so that a client can branch on it without
// parsing prose. It travels in structuredContent.error.kind of an isError
// result (the house convention shared with the gateway's readOnly refusal).
type Kind string

// The failure kinds a tool may report.
const (
	KindInvalidParams Kind = "invalidParams" // an argument is unknown, missing or of the wrong type
	KindNotFound      Kind = "notFound"      // the named object does not exist
	KindRefused       Kind = "refused"       // the request is understood but not allowed (a system object, a wrong statement kind)
	KindReadOnly      Kind = "readOnly"      // the session is read-only
	KindSQLError      Kind = "sqlError"      // the database rejected a statement; Code carries the engine's code
	KindConflict      Kind = "conflict"      // a serialization or lock failure, or uncommitted changes in the way
	KindOther         Kind = "other"         // anything else
)

// Error is a tool failure with a kind. Handlers return one (usually made with
// Errorf) to choose the kind; any other error is reported with kind other.
type Error struct {
	Kind    Kind
	Message string // what happened and what to do about it; shown to the model
	Code    string // the engine's error code for sqlError and conflict, if any
	Err     error  // the cause, for errors.Is/As; never shown to the client
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, wrapping an unclassified error as kind
// other so that every failure leaves a handler with a kind.
func AsError(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	var de *db.Error
	if errors.As(err, &de) {
		return &Error{Kind: Kind(de.Kind), Message: de.Message, Code: de.Code, Err: de}
	}
	return &Error{Kind: KindOther, Message: err.Error(), Err: err}
}
