// Package options is how a package reports a bad option: the field of its
// options struct that is wrong, and what to do about it. Each package
// validates its own options (gateway.Options.Validate, auth.Options.Validate
// and so on); config reports each Error under the key that sets the field,
// so that a rule and its message exist once, in the package that enforces
// it.
package options

import (
	"errors"
	"fmt"
)

// Error is one bad option.
type Error struct {
	// Field is the option's field, as a Go selector relative to the
	// options struct: MaxBodyBytes, DB.MaxPerUser, Introspection.MaxCacheTTL.
	// An element of a list is Field[i]: AuthorizationServers[1].
	Field string
	// Message says what is wrong and how to fix it. It may name other
	// fields of the same struct by their Go names; config replaces those
	// with their keys.
	Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

// Problems collects Errors; its zero value is ready to use.
type Problems struct{ errs []error }

// Add records that field is wrong.
func (p *Problems) Add(field, format string, args ...any) {
	p.errs = append(p.errs, &Error{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err joins every Error added (errors.Join), prefixed with the package's
// name, or returns nil.
func (p *Problems) Err(pkg string) error {
	if len(p.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", pkg, errors.Join(p.errs...))
}

// Errors returns the Errors in err, in order, however they are wrapped or
// joined.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *Error:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
