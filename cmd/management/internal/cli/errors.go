package cli

import (
	"errors"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
)

// Exit codes of the tool.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and failed: the service refused, could not be reached, ...
	ExitUsage   = 2 // the command line or the configuration is wrong
)

// usageError is a mistake in the command line or the configuration: it
// exits with ExitUsage.
type usageError struct {
	err    error
	noHelp bool // the message says what to do: the help would not
}

func (e usageError) Error() string { return e.err.Error() }

func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with errtext.Errorf's text: the tool's
// errors read as the SDK's do, "management: " said once.
func usagef(format string, args ...any) error {
	return usageError{err: errtext.Errorf(format, args...)}
}

// refusef returns a usageError for a command line that does not fit what
// is on disk (an export's files): the message says what to do, and the
// pointer to --help is left out.
func refusef(format string, args ...any) error {
	return usageError{err: errtext.Errorf(format, args...), noHelp: true}
}

// wantsHelp reports whether err, a usage error, is better followed by a
// pointer to --help.
func wantsHelp(err error) bool {
	var u usageError
	return !strings.Contains(err.Error(), "\n") && !(errors.As(err, &u) && u.noHelp)
}

// exitError carries the exit code a command's error stands for. Errors
// that reach Run without one come from cobra itself (an unknown flag or
// command, a wrong number of arguments): they are usage errors.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

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
