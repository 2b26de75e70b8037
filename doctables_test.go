package management

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tableDelimiter matches the row under a Markdown table's header:
// |---|:--:|.
var tableDelimiter = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)

// TestTablesEndWithABlankLine holds every Markdown file of the repository
// to end each table with a blank line: GitHub takes a line of text that
// follows a table directly for one more row, and the paragraph it opens
// vanishes into the table.
func TestTablesEndWithABlankLine(t *testing.T) {
	for path, text := range markdownFiles(t) {
		for _, line := range swallowedLines(text) {
			t.Errorf("%s:%d: the line right after a table, with no blank line between, is taken for a row of it", path, line)
		}
	}
}

// markdownFiles returns the text of every Markdown file of the
// repository, by its path from the root, with slashes.
func markdownFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir // .git
		case d.IsDir() || !strings.HasSuffix(path, ".md"):
			return nil
		}
		b, err := os.ReadFile(path)
		files[filepath.ToSlash(path)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d Markdown files: is the test at the repository's root?", len(files))
	}
	return files
}

// swallowedLines returns the numbers of the lines of text that follow a
// table with no blank line between, outside fenced code blocks.
func swallowedLines(text string) []int {
	var out []int
	lines := strings.Split(text, "\n")
	fence, table := "", false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence, table = trimmed[:3], false
			continue
		}
		switch {
		case table && trimmed == "":
			table = false
		case table && !strings.HasPrefix(trimmed, "|"):
			out = append(out, i+1)
			table = false
		case !table && i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "|") && tableDelimiter.MatchString(trimmed):
			table = true
		}
	}
	return out
}

// TestSwallowedLines: the check finds a paragraph glued to a table, and
// nothing in a table that ends with a blank line, a table in a code block,
// or a lone line that starts with a bar.
func TestSwallowedLines(t *testing.T) {
	for text, want := range map[string]int{
		"| a | b |\n|---|---|\n| 1 | 2 |\nThe error names every variable.\n": 4,
		"| a |\n|:--|\n| 1 |\n\nThe error.\n":                                0,
		"```\n| a |\n|---|\nnot a row\n```\n":                                0,
		"| a lone line\nand text\n":                                          0,
		"| a |\n|---|\n| 1 |\n":                                              0,
	} {
		got := swallowedLines(text)
		if want == 0 && len(got) != 0 || want != 0 && (len(got) != 1 || got[0] != want) {
			t.Errorf("swallowedLines(%q) = %v; want line %d (0: none)", text, got, want)
		}
	}
}
