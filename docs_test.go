package management

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines keeps the README a map: detail goes into a guide.
const maxReadmeLines = 250

// guideContentsOver is the length from which a guide opens with a list of
// its sections.
const guideContentsOver = 150

// TestReadmeIsAMap holds the README to at most maxReadmeLines lines.
func TestReadmeIsAMap(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: it is the map; move the detail into a guide under docs/", n, maxReadmeLines)
	}
}

// guides returns the guides under docs/, without the index.
func guides(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if filepath.Base(name) != "README.md" {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		t.Fatal("no guide under docs/")
	}
	return out
}

// TestGuidesAreIndexed holds docs/README.md, the index, to link every
// guide, so that a guide added later is found.
func TestGuidesAreIndexed(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides(t) {
		if !strings.Contains(string(index), "]("+filepath.Base(g)+")") {
			t.Errorf("docs/README.md does not link %s: add a row for it to the table of guides", g)
		}
	}
}

// TestGuidesHaveContents holds every guide longer than guideContentsOver
// lines to open with a "## Contents" list that links each of its sections.
func TestGuidesHaveContents(t *testing.T) {
	for _, g := range guides(t) {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.Count(text, "\n") <= guideContentsOver {
			continue
		}
		_, contents, ok := strings.Cut(text, "\n## Contents\n")
		if !ok {
			t.Errorf("%s is longer than %d lines and has no \"## Contents\" section", g, guideContentsOver)
			continue
		}
		contents, _, _ = strings.Cut(contents, "\n## ")
		for _, h := range headings(text, "## ") {
			if h != "Contents" && !strings.Contains(contents, "](#"+anchor(h)+")") {
				t.Errorf("%s: its Contents do not link the section %q (#%s)", g, h, anchor(h))
			}
		}
	}
}

// TestDocLinks checks every relative link of the READMEs and guides: the
// file it names exists, and so does the section its #fragment names.
func TestDocLinks(t *testing.T) {
	var docs []string
	for _, pattern := range docFiles {
		names, _ := filepath.Glob(pattern)
		docs = append(docs, names...)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: the link %s: %v", doc, target, err)
				continue
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			tb, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range headings(string(tb), "#") {
				found = found || anchor(h) == fragment
			}
			if !found {
				t.Errorf("%s: the link %s: %s has no section #%s", doc, target, path, fragment)
			}
		}
	}
}

// headings returns the text of the Markdown headings of text whose line
// starts with prefix ("## " for sections, "#" for all), outside code blocks.
func headings(text, prefix string) []string {
	var out []string
	code := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			code = !code
		}
		if !code && strings.HasPrefix(line, prefix) && strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	return out
}

// anchor returns the fragment GitHub gives a heading: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsNameTheCLIToolchain holds the Go release the docs say the
// command-line tool is built with to the toolchain line of its go.mod.
func TestDocsNameTheCLIToolchain(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join("cmd", "management", "go.mod"))
	if err != nil {
		t.Skip("no cmd/management/go.mod here:", err)
	}
	m := regexp.MustCompile(`(?m)^toolchain (go\S+)$`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("cmd/management/go.mod has no toolchain line; the docs that explain it are due a change")
	}
	release := regexp.MustCompile(`go1\.\d+\.\d+`)
	for _, doc := range []string{"README.md", filepath.Join("docs", "cli.md"), filepath.Join("cmd", "management", "README.md")} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		named := release.FindAllString(string(b), -1)
		if len(named) == 0 {
			t.Errorf("%s does not name the Go release the tool is built with, %s", doc, m[1])
		}
		for _, r := range named {
			if r != string(m[1]) {
				t.Errorf("%s names %s; the tool's go.mod says toolchain %s", doc, r, m[1])
			}
		}
	}
}
