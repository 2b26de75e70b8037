package cli

import (
	"fmt"
	"testing"
)

// TestVisible: a cell of printable text is shown as it is; one with any
// control or format character, or bytes that are not UTF-8, or a leading
// double quote, is shown as %q shows it, so that no escape reaches the
// terminal raw.
func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hall thermostat", "Hall thermostat"},
		{"Küche – Steckdose ☕", "Küche – Steckdose ☕"},
		{`C:\temp`, `C:\temp`},
		{"", ""},
		{"\x1b]0;pwned\a\x1b[2J", `"\x1b]0;pwned\a\x1b[2J"`},
		{"abc\b\b\bxyz", `"abc\b\b\bxyz"`},
		{"del\x7f", `"del\x7f"`},
		{"c1\u009b31m", `"c1\u009b31m"`},
		{"rtl\u202eevil", `"rtl\u202eevil"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"two\nlines\tand\rcr", `"two\nlines\tand\rcr"`},
		{`"quoted"`, `"\"quoted\""`},
		{`say "hi"`, `say "hi"`},
	} {
		if got := visible(tc.in); got != tc.want {
			t.Errorf("visible(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if got, want := visible(tc.in), fmt.Sprintf("%q", tc.in); got != tc.in && got != want {
			t.Errorf("visible(%q) = %s, neither the text nor %%q's %s", tc.in, got, want)
		}
	}
}

// TestEscapeControls: within a message, only the runes that are not
// printable are escaped.
func TestEscapeControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`Thing "lamp-7" was not found`, `Thing "lamp-7" was not found`},
		{"Thing \x1b[2Jlamp was not found\a", `Thing \x1b[2Jlamp was not found\a`},
		{"c1 \u009b and \xfe", `c1 \u009b and \xfe`},
		{"Grüße", "Grüße"},
	} {
		if got := escapeControls(tc.in); got != tc.want {
			t.Errorf("escapeControls(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
