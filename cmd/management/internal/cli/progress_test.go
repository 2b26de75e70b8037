package cli

import (
	"testing"
	"time"
	"unicode/utf8"
)

// TestProgressLine: the line keeps its spaces at every width, dropping the
// time, then the rate, then the spinner to fit.
func TestProgressLine(t *testing.T) {
	const elapsed = 1500 * time.Millisecond // spinner frame 15 % 10
	for _, c := range []struct {
		width int
		want  string
	}{
		{100, "Exporting ⠴ 3000 Users  2000/s  1.5s"},
		{0, "Exporting ⠴ 3000 Users  2000/s  1.5s"}, // width unknown
		{35, "Exporting ⠴ 3000 Users  2000/s"},
		{25, "Exporting ⠴ 3000 Users"},
		{21, "Exporting 3000 Users"},
		{12, "3000 Users"},
	} {
		got := progressLine(c.width, elapsed, 3000, "Users", 2000)
		if got != c.want {
			t.Errorf("width %d: %q, want %q", c.width, got, c.want)
		}
		if c.width >= 20 && utf8.RuneCountInString(got) > c.width {
			t.Errorf("width %d: %q is wider", c.width, got)
		}
	}
}
