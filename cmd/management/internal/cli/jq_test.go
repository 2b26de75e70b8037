package cli

import (
	"strings"
	"testing"

	"github.com/serviceconnect/management/internal/errtext"
)

// TestJQFilter: results one per line, strings raw (escaped on a
// terminal), other values as JSON, numbers exact; a bad expression is a
// usage error, a failing one an error naming --jq.
func TestJQFilter(t *testing.T) {
	doc := []byte(`[{"id":"u-1","n":12345678901234567890,"tags":["a"]},{"id":"u-\u001b[2J","n":1.50,"tags":null}]`)
	for _, tc := range []struct {
		expr     string
		terminal bool
		want     string
	}{
		{".[].id", false, "u-1\nu-\x1b[2J\n"},
		{".[].id", true, "u-1\n\"u-\\x1b[2J\"\n"},
		{".[].n", false, "12345678901234567890\n1.50\n"},
		{".[0] | {id, tags}", false, `{"id":"u-1","tags":["a"]}` + "\n"},
		{".[0].tags", true, "[\n  \"a\"\n]\n"},
		{`{name: "x\u007f\u009b\u202e"}`, true, "{\n  \"name\": \"x\\u007f\\u009b\\u202e\"\n}\n"},
		{`{name: "x\u007f"}`, false, "{\"name\":\"x\x7f\"}\n"},
		{"map(select(.tags == null)) | length", false, "1\n"},
		{"halt", false, ""},
	} {
		q, err := compileJQ(tc.expr)
		if err != nil {
			t.Fatalf("compileJQ(%q): %v", tc.expr, err)
		}
		var out strings.Builder
		if err := q.run(t.Context(), &out, doc, tc.terminal); err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		if out.String() != tc.want {
			t.Errorf("%q (terminal %t) wrote %q, want %q", tc.expr, tc.terminal, out.String(), tc.want)
		}
	}

	if _, err := compileJQ(".[] |"); err == nil || exitCode(classify(err)) != ExitUsage || !strings.HasPrefix(errtext.Message(err), "management: --jq \".[] |\": ") {
		t.Errorf("compileJQ of a bad expression: %v, want a usage error naming --jq", err)
	}
	if _, err := compileJQ("nosuchfunc(1)"); err == nil {
		t.Error("compileJQ of an unknown function: no error")
	}
	q, _ := compileJQ(`.[0].id | error`)
	err := q.run(t.Context(), new(strings.Builder), doc, false)
	if err == nil || !strings.HasPrefix(err.Error(), "management: --jq: ") {
		t.Errorf("a failing filter: %v, want an error naming --jq", err)
	}
}
