package cli

import (
	"errors"
	"strings"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/errtext"
)

// Exit codes of the tool, listed in its help and README.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and failed: the service refused, could not be reached, ...
	// ExitUsage: the command line or the configuration is wrong, whether
	// found before anything is sent or shown by the service's answer (a
	// 404 or a redirect where the base URL and path prefix point:
	// management.ErrMisconfigured), which no retry mends.
	ExitUsage = 2
	// ExitAuth: the service refused the tool's credentials (the client id
	// or secret at the token endpoint, or the management token itself), as
	// gh's 4 says authentication is needed; a script can tell it from an
	// outage.
	ExitAuth = 4
	// ExitInterrupt: Ctrl-C or SIGTERM stopped the command, which said
	// how to resume; 128+SIGINT, as a shell reports a process the signal
	// killed. Not fake serve's: a server that stops when told has
	// succeeded, and returns nil.
	ExitInterrupt = 130
)

// exitCodesHelp lists the exit codes in the root command's help (the
// README has them as a table).
const exitCodesHelp = `Exit status: 0 success, 1 failure, 2 usage (a wrong flag, argument or
configuration), 4 credentials refused by the service, 130 interrupted
(Ctrl-C; the message says how to resume). fake serve exits 0 when Ctrl-C or
SIGTERM stops it: stopping is how a server ends.`

// usageError is a mistake in the command line or the configuration: it
// exits with ExitUsage.
type usageError struct {
	err    error
	noHelp bool // the message says what to do: the help would not
}

// Error is the mistake as said; Run adds the pointer to --help.
func (e usageError) Error() string { return e.err.Error() }

// Unwrap lets classify and the tests see the SDK's error beneath.
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
// pointer to --help: not when its message says what to check.
func wantsHelp(err error) bool {
	var u usageError
	return !strings.Contains(err.Error(), "\n") && !(errors.As(err, &u) && u.noHelp) && !errors.Is(err, management.ErrMisconfigured)
}

// exitError carries the exit code a command's error stands for. Errors
// that reach Run without one come from cobra itself (an unknown flag or
// command, a wrong number of arguments): they are usage errors.
type exitError struct {
	code int
	err  error
}

// Error is the command's error as said: the code is not shown.
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap lets the tests match the SDK's error beneath the code.
func (e *exitError) Unwrap() error { return e.err }

// classify gives a command's error its exit code: ExitUsage for a
// usageError, for an argument the SDK refused before sending anything, and
// for a configuration the service's answer shows wrong
// (management.ErrMisconfigured: a script that retries on 1 would retry it
// in vain); ExitFailure for the rest.
func classify(err error) error {
	var u usageError
	switch {
	case errors.As(err, &u) || errors.Is(err, management.ErrInvalidArgument) || errors.Is(err, management.ErrMisconfigured):
		return &exitError{ExitUsage, err}
	case errors.Is(err, management.ErrInvalidClient):
		return &exitError{ExitAuth, credentialsError{"the service refused the client credentials", err,
			"check " + management.EnvClientID + " (or --client-id) and " + management.EnvClientSecret + " (or --client-secret-stdin)"}}
	case errors.Is(err, management.ErrUnauthorized):
		return &exitError{ExitAuth, credentialsError{"the service refused the management token", err,
			"check that " + management.EnvClientID + " names a client application with access to the management API"}}
	}
	return &exitError{ExitFailure, err}
}

// credentialsError is a refused credential told to an operator: what
// happened, the service's own words, and what to check.
type credentialsError struct {
	what string
	err  error
	hint string
}

// Error is what happened, the error's text, and what to check.
func (e credentialsError) Error() string {
	return errtext.Prefix + e.what + " (" + strings.TrimPrefix(e.err.Error(), errtext.Prefix) + "): " + e.hint
}

// Unwrap returns the wrapped error.
func (e credentialsError) Unwrap() error { return e.err }

// interruptedMessage is the message of a command that Ctrl-C stopped:
// its own when it says how to resume, else how to start over.
func interruptedMessage(err error) string {
	msg := errtext.Message(err)
	switch {
	case strings.Contains(msg, "resume"):
		return msg
	case strings.Contains(msg, "interrupted"):
		return msg + "; run the same command again to start over"
	}
	return errtext.Prefix + "interrupted: run the same command again to start over"
}

// operatorMessage is err's text as the tool prints it: the Config fields
// of the SDK's texts named as environment variables and flags (as the
// flags that set them, by field, when the command line gave them), and any
// control character escaped, which can only come from what the text
// quotes (the service's texts, the user's data): the tool's own words are
// printable. A message in the tool's words alone (said), lines and all, is
// printed as written.
func operatorMessage(err error, flags map[string]string) string {
	msg := errtext.Message(err)
	var own said
	if errors.As(err, &own) && msg == errtext.Message(own) {
		return msg // nothing was added around it
	}
	return escapeControls(forOperators(msg, flags))
}

// said is a message in the tool's own words, with nothing from the service
// or the user's data in it: operatorMessage prints it as written, its
// newlines included.
type said string

// Error is the message.
func (s said) Error() string { return string(s) }

// exitCode is the exit code of an error returned by the root command.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitUsage
}
