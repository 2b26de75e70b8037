// Package errtext formats the errors of the SDK and of its command-line
// tool alike: each text starts with Prefix once, however deeply errors
// wrap one another, so that a message reads "management: listing /users,
// page 3: ..." rather than repeating the prefix at every level.
package errtext

import (
	"fmt"
	"strings"
)

// Prefix starts the text of every error made by Errorf.
const Prefix = "management: "

// Errorf is fmt.Errorf whose text starts with Prefix, said once: format has
// no prefix of its own, and the errors among args (wrapped with %w, or
// printed) lose theirs, so that wrapping adds context, not another
// "management: ". errors.Is and errors.As see the wrapped errors as they are.
func Errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = unprefixed{err}
		}
	}
	return prefixed{fmt.Errorf(format, args...)}
}

// Message is err's text with Prefix once at its start: errors made
// elsewhere (by a library, or by fmt) get it too.
func Message(err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, Prefix) {
		msg = Prefix + msg
	}
	return msg
}

// Unprefixed returns err with its text's Prefix dropped, for printing
// inside a text that has its own (with %v, or in a panic's message);
// errors.Is and errors.As see err through it.
func Unprefixed(err error) error { return unprefixed{err} }

// prefixed says Prefix before its error's text.
type prefixed struct{ err error }

// Error says Prefix once, before a text that has none of its own.
func (e prefixed) Error() string { return Prefix + e.err.Error() }

// Unwrap lets errors.Is and errors.As see through the prefix.
func (e prefixed) Unwrap() error { return e.err }

// unprefixed is an error inside another: its text without Prefix.
type unprefixed struct{ err error }

// Error drops Prefix, which the text around it says already.
func (e unprefixed) Error() string { return strings.TrimPrefix(e.err.Error(), Prefix) }

// Unwrap lets errors.Is and errors.As see through the dropped prefix.
func (e unprefixed) Unwrap() error { return e.err }
