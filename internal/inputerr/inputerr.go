// Package inputerr marks the errors that are the user's to fix: a location
// named wrongly, a flag or manifest setting that cannot work as given, a
// destination that cannot hold what was asked. The command line maps
// every such error to one exit code (2) in one place; this package owns
// that mark and nothing else, so that any layer can set it and none needs
// to know about exit codes.
package inputerr

import "errors"

// Error is an error the user's input caused.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Wrap marks err as the user's; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Is reports whether err is, or wraps, an input error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
