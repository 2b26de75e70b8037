package cli

import (
	"encoding/json"
	"fmt"
	"strings"
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

// TestJSONEscaperSplitRunes: however the JSON text is cut into writes, even
// inside a rune, what the terminal receives holds no control character
// raw and decodes to the same value.
func TestJSONEscaperSplitRunes(t *testing.T) {
	name := "a\u009b31m\x7f\u202e😀é"
	doc, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	for size := 1; size <= len(doc); size++ {
		var got strings.Builder
		e := &jsonEscaper{w: &got}
		for p := doc; len(p) > 0; p = p[min(size, len(p)):] {
			if n, err := e.Write(p[:min(size, len(p))]); err != nil || n != min(size, len(p)) {
				t.Fatalf("writes of %d: Write = %d, %v", size, n, err)
			}
		}
		if !printableText(got.String()) {
			t.Errorf("writes of %d: %q holds a control character raw", size, got.String())
		}
		var v map[string]string
		if err := json.Unmarshal([]byte(got.String()), &v); err != nil || v["name"] != name {
			t.Errorf("writes of %d: %q decodes to %q, %v; want %q", size, got.String(), v["name"], err, name)
		}
	}
}
