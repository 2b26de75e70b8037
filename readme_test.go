package management_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippetsCompile keeps the README true: every Go snippet in it
// must appear, line for line, in code that the test suite compiles
// (example_test.go, the programs under examples/, and the examples of the
// companion modules, which their own tests compile).
func TestReadmeSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sources := []string{"example_test.go", "redisstore/example_test.go", "otel/example_test.go"}
	mains, _ := filepath.Glob("examples/*/main.go")
	sources = append(sources, mains...)
	var code strings.Builder
	for _, name := range sources {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		code.WriteString(normalizeSpace(string(b)))
	}
	compiled := code.String()
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README has no Go snippets")
	}
	for _, b := range blocks {
		if !strings.Contains(compiled, normalizeSpace(b[1])) {
			t.Errorf("README snippet is not in example_test.go or examples/:\n%s", b[1])
		}
	}
}

func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
