package cli

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The service's data is partly written by End Users (a Thing's name, a
// custom setting), so it may hold terminal control sequences: an escape
// that retitles the window or clears the screen, a bell, a backspace that
// hides what precedes it, a C1 control, a right-to-left override. What the
// tool shows on a terminal goes through these functions; json, jsonl and
// csv output keeps the data exact.

// visible is s as a table cell shows it: s itself when every rune is
// printable (strconv.IsPrint: letters, marks, numbers, punctuation,
// symbols, the ASCII space) and s does not start with a double quote;
// otherwise s as %q quotes it (`"\x1b]0;pwned\a"`). A cell that starts
// with a double quote is therefore always a quoted one, never data that
// only looks escaped.
func visible(s string) string {
	if printableText(s) && !strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}

// escapeControls is s with each rune that is not printable replaced by
// its escape as %q writes it (\x1b, \n, \u202e, \xff for a byte that is not
// UTF-8), and the rest kept: for messages, which quote the service's texts
// within a sentence.
func escapeControls(s string) string {
	if printableText(s) {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		if printableRune(r, size) {
			b.WriteString(s[i : i+size])
			continue
		}
		q := strconv.Quote(s[i : i+size])
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// printableText reports whether every rune of s is printable.
func printableText(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f { // ASCII printable: the common case
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !printableRune(r, size) {
			return false
		}
		i += size
	}
	return true
}

// printableRune reports whether the rune r, decoded from size bytes, is
// printable: not a control or format character, and not a byte that is
// not UTF-8 (decoded as utf8.RuneError from one byte).
func printableRune(r rune, size int) bool {
	return strconv.IsPrint(r) && !(r == utf8.RuneError && size == 1)
}

// OutFor is where a command writes its output in format f: standard
// output, through a jsonEscaper when it is a terminal and f is JSON or JSON
// lines, whose encoder leaves DEL, the C1 controls and format characters
// raw. The JSON is the same value either way; csv stays byte-exact.
func (s *IOStreams) OutFor(f format) io.Writer {
	if s.stdoutTTY && (f == formatJSON || f == formatJSONL) {
		return &jsonEscaper{w: s.Out}
	}
	return s.Out
}

// jsonEscaper writes JSON text with each rune a terminal must not receive
// raw written as its \uXXXX escape (see jsonEscapeControls). Such a rune
// can only stand inside a JSON string, where the escape means the same
// character. A rune split between two writes is held until it is whole.
type jsonEscaper struct {
	w    io.Writer
	rest []byte // the start of a rune the last write ended in
}

// Write reports all of p written once it is escaped, the held start of a
// split rune included.
func (e *jsonEscaper) Write(p []byte) (int, error) {
	buf := append(e.rest, p...)
	end := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				end = i
			}
			break
		}
	}
	if _, err := io.WriteString(e.w, jsonEscapeControls(string(buf[:end]))); err != nil {
		return 0, err
	}
	e.rest = append(e.rest[:0:0], buf[end:]...)
	return len(p), nil
}
