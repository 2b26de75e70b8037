package errtext

import (
	"errors"
	"io"
	"testing"
)

// TestErrorfPrefixOnce: the prefix starts the text once, however many
// errors made by Errorf are wrapped, and errors.Is still sees through.
func TestErrorfPrefixOnce(t *testing.T) {
	inner := Errorf("reading %s: %w", "page 2", io.ErrUnexpectedEOF)
	outer := Errorf("listing: %w", inner)
	if got, want := outer.Error(), "management: listing: reading page 2: unexpected EOF"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if !errors.Is(outer, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see the wrapped error")
	}
	printed := Errorf("gave up (%v)", inner)
	if got, want := printed.Error(), "management: gave up (reading page 2: unexpected EOF)"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

// TestMessage: an error from elsewhere gets the prefix; one that has it
// keeps it once.
func TestMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("unknown flag: --x"), "management: unknown flag: --x"},
		{Errorf("bad %d", 1), "management: bad 1"},
	} {
		if got := Message(c.err); got != c.want {
			t.Errorf("Message(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestUnprefixed: the text loses its prefix, the error stays itself.
func TestUnprefixed(t *testing.T) {
	inner := Errorf("bad %w", io.EOF)
	u := Unprefixed(inner)
	if got, want := u.Error(), "bad EOF"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if !errors.Is(u, io.EOF) {
		t.Error("errors.Is does not see through")
	}
}
