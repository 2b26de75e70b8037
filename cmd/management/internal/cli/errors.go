package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/serviceconnect/management"
)

// Exit codes of the tool.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and failed: the service refused, could not be reached, ...
	ExitUsage   = 2 // the command line or the configuration is wrong
)

// prefix starts every message the tool prints on standard error, once,
// as it starts the SDK's error texts.
const prefix = "management: "

// errorf is fmt.Errorf for the tool's own errors: the text is prefixed
// once, and the errors among args lose their own prefix, so that wrapping
// an SDK error adds context rather than another "management: ".
// errors.Is and errors.As see the wrapped errors as they are.
func errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = unprefixed{err}
		}
	}
	return prefixed{fmt.Errorf(format, args...)}
}

type prefixed struct{ err error }

// Error is the error text.
func (e prefixed) Error() string { return prefix + e.err.Error() }

// Unwrap returns the wrapped error.
func (e prefixed) Unwrap() error { return e.err }

type unprefixed struct{ err error }

// Error is the error text.
func (e unprefixed) Error() string { return strings.TrimPrefix(e.err.Error(), prefix) }

// Unwrap returns the wrapped error.
func (e unprefixed) Unwrap() error { return e.err }

// usageError is a mistake in the command line or the configuration: it
// exits with ExitUsage.
type usageError struct{ err error }

// Error is the error text.
func (e usageError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with errorf's text.
func usagef(format string, args ...any) error {
	return usageError{errorf(format, args...)}
}

// exitError carries the exit code a command's error stands for. Errors
// that reach Run without one come from cobra itself (an unknown flag or
// command, a wrong number of arguments): they are usage errors.
type exitError struct {
	code int
	err  error
}

// Error is the error text.
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *exitError) Unwrap() error { return e.err }

// classify gives a command's error its exit code: ExitUsage for a
// usageError and for an argument the SDK refused before sending anything,
// ExitFailure for the rest.
func classify(err error) error {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, management.ErrInvalidArgument) {
		return &exitError{ExitUsage, err}
	}
	return &exitError{ExitFailure, err}
}

// exitCode is the exit code of an error returned by the root command.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitUsage
}

// message is err's text as printed: one line, with the prefix once.
func message(err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		msg = prefix + msg
	}
	return msg
}
