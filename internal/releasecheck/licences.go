package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// allowedLicences are the licences a dependency may have, as licensecheck
// names them.
var allowedLicences = []string{"Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "MIT", "MPL-2.0", "ISC", "Unlicense"}

// minCoverage is the share of a licence file, in percent, that known
// licence texts must cover: below it, the rest could add terms.
const minCoverage = 75

// licenceFile matches the names of the files that hold a module's licence.
var licenceFile = regexp.MustCompile(`(?i)^(LICEN[CS]E|COPYING|UNLICENSE)(\.(txt|md|markdown|rst)|-[\w.-]+)?$`)

// licences checks the repository's own LICENSE (Apache-2.0) and the
// licence of every module that provides a package to a build or a test of
// a released module, detected from its licence files, against
// allowedLicences; an undetected licence is a failure. README.md's
// "Dependencies" section must name every MPL-2.0 dependency.
func licences(args []string) error {
	fs, dir := flags("licences")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := openRepo(*dir)
	if err != nil {
		return err
	}
	own, err := licenceOf(r.root)
	if err != nil || !slices.Equal(own.ids, []string{"Apache-2.0"}) {
		return fmt.Errorf("the repository's LICENSE: %v %v; want Apache-2.0 alone", own.ids, err)
	}
	fmt.Printf("%-52s %-8s %s (%s)\n", rootPath+" (all modules)", "", "Apache-2.0", strings.Join(own.files, ", "))

	type dep struct{ path, version, dir string }
	var deps []dep
	for _, m := range r.modules {
		out, err := command(filepath.Join(r.root, filepath.FromSlash(m.dir)), []string{"GOWORK=off"},
			"go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}", "./...")
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 3 || f[0] == rootPath || strings.HasPrefix(f[0], rootPath+"/") {
				continue
			}
			d := dep{f[0], f[1], f[2]}
			if !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
		}
	}
	slices.SortFunc(deps, func(a, b dep) int { return strings.Compare(a.path+" "+a.version, b.path+" "+b.version) })

	readme, err := os.ReadFile(filepath.Join(r.root, "README.md"))
	if err != nil {
		return err
	}
	depSection := markdownSection(string(readme), "Dependencies")
	failed := false
	for _, d := range deps {
		l, err := licenceOf(d.dir)
		verdict := strings.Join(l.ids, ", ")
		switch {
		case err != nil:
			verdict, failed = "FAIL: "+err.Error(), true
		case slices.ContainsFunc(l.ids, func(id string) bool { return !slices.Contains(allowedLicences, id) }):
			verdict, failed = "FAIL: "+verdict+" is not in the allow-list "+strings.Join(allowedLicences, ", "), true
		case slices.Contains(l.ids, "MPL-2.0") && !strings.Contains(depSection, d.path):
			verdict, failed = "FAIL: MPL-2.0, and README.md's Dependencies section does not name it", true
		}
		fmt.Printf("%-52s %-8s %s (%s)\n", d.path, d.version, verdict, strings.Join(l.files, ", "))
	}
	if failed {
		return errFailed
	}
	fmt.Printf("%d dependencies, every licence in the allow-list\n", len(deps))
	return nil
}

// licence is what the licence files of a module hold.
type licence struct {
	ids   []string // licensecheck's identifiers, sorted
	files []string
}

// licenceOf detects the licence of the module in dir from its licence
// files.
func licenceOf(dir string) (licence, error) {
	var l licence
	entries, err := os.ReadDir(dir)
	if err != nil {
		return l, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenceFile.MatchString(e.Name()) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return l, err
		}
		l.files = append(l.files, e.Name())
		cov := licensecheck.Scan(text)
		if cov.Percent < minCoverage {
			return l, fmt.Errorf("%s: licensecheck recognises %.0f%% of it (%d matches); want %d%%", e.Name(), cov.Percent, len(cov.Match), minCoverage)
		}
		for _, m := range cov.Match {
			if !slices.Contains(l.ids, m.ID) {
				l.ids = append(l.ids, m.ID)
			}
		}
	}
	slices.Sort(l.ids)
	switch {
	case len(l.files) == 0:
		return l, fmt.Errorf("no licence file (LICENSE, COPYING...)")
	case len(l.ids) == 0:
		return l, fmt.Errorf("no licence detected in %s", strings.Join(l.files, ", "))
	}
	return l, nil
}

// markdownSection returns the text of the "## title" section of a
// Markdown document, up to the next heading of the same level.
func markdownSection(doc, title string) string {
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
