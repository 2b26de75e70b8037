package management

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the root module's path; the companions' paths extend it.
const modulePath = "github.com/serviceconnect/management"

// checkoutRoot returns the repository's root, or skips the test when the
// package was not built from a checkout (a module zip has no companions, no
// CHANGELOG.md beside them...).
func checkoutRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"CHANGELOG.md", "otel/go.mod", "redisstore/go.mod"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Skipf("not a checkout of the repository (%v)", err)
		}
	}
	return root
}

// releasedModules returns the directories, relative to root and "." first,
// of the modules a release tags: every go.mod of the repository except
// those under testdata/ or an internal/ directory (a module whose path has
// an internal element is importable by nobody outside this repository, so
// it is never released: benchmarks, release tools).
func releasedModules(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && !d.IsDir() {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs) // "." sorts before every letter
	return dirs
}

// rootRequire matches a go.mod's requirement of the root module, in a
// require block or on a require line of its own.
var rootRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(modulePath) + `\s+(\S+)`)

// changelogHeading matches a version's heading in CHANGELOG.md:
// "## [Unreleased]" or "## [0.1.0] - 2026-11-26".
var changelogHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`)

// unreleasedSection returns the text of CHANGELOG.md's "Unreleased"
// section, after its heading and before the next version's.
func unreleasedSection(changelog string) string {
	h := changelogHeading.FindAllStringSubmatchIndex(changelog, 2)
	if len(h) == 0 || changelog[h[0][2]:h[0][3]] != "Unreleased" {
		return ""
	}
	end := len(changelog)
	if len(h) > 1 {
		end = h[1][0]
	}
	return changelog[h[0][1]:end]
}

// Version is the source of truth of a release: the nested modules require
// the root at it (on main too, where a replace directive points them at this
// checkout), and it is the newest version CHANGELOG.md has released, below
// the "Unreleased" section on top.
func TestVersionAgreesWithReleaseFiles(t *testing.T) {
	root := checkoutRoot(t)
	mods := releasedModules(t, root)
	for _, want := range []string{".", "cmd/management", "grpcauth", "otel", "redisstore"} {
		if !slices.Contains(mods, want) {
			t.Errorf("released modules %q lack %s", mods, want)
		}
	}
	for _, dir := range mods[1:] {
		b, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := rootRequire.FindSubmatch(b)
		switch {
		case m == nil:
			t.Errorf("%s/go.mod does not require %s", dir, modulePath)
		case string(m[1]) != "v"+Version:
			t.Errorf("%s/go.mod requires %s %s; Version is %s: run `go mod edit -require=%s@v%s` in %s",
				dir, modulePath, m[1], Version, modulePath, Version, dir)
		}
	}

	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := changelogHeading.FindAllStringSubmatch(string(b), 2)
	if len(headings) < 2 || headings[0][1] != "Unreleased" {
		t.Fatalf(`CHANGELOG.md's first two version headings are %q; want "## [Unreleased]" on top and the newest release below it`, headings)
	}
	if got := headings[1][1]; got != Version {
		t.Errorf("CHANGELOG.md's newest release is %s; Version is %s", got, Version)
	}
	if !regexp.MustCompile(`^ - \d{4}-\d{2}-\d{2}$`).MatchString(headings[1][2]) {
		t.Errorf("CHANGELOG.md's heading of %s is %q; want it dated: \"## [%s] - YYYY-MM-DD\"", Version, headings[1][0], Version)
	}
}

func TestUnreleasedSection(t *testing.T) {
	for _, tc := range []struct{ changelog, want string }{
		{"# Changelog\n\n## [Unreleased]\n\n- Removed `Foo`.\n\n## [0.1.0] - 2026-11-26\n\n- All.\n", "\n\n- Removed `Foo`.\n\n"},
		{"## [Unreleased]\n- a\n", "\n- a\n"},
		{"## [0.1.0] - 2026-11-26\n- a\n", ""},
		{"no headings", ""},
	} {
		if got := unreleasedSection(tc.changelog); got != tc.want {
			t.Errorf("unreleasedSection(%q) = %q; want %q", tc.changelog, got, tc.want)
		}
	}
}

// The command-line tool's toolchain line names the Go release CI runs
// govulncheck under (.ci/run's newest_go), so that `go install` users build
// it with a release that has no advisory in the code it calls.
func TestToolchainIsCIsNewestGo(t *testing.T) {
	root := checkoutRoot(t)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Skipf("no .ci/run: %v", err)
	}
	m := regexp.MustCompile(`(?m)^newest_go=(go\S+)`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run sets no newest_go=goX.Y.Z")
	}
	gomod, err := os.ReadFile(filepath.Join(root, "cmd", "management", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	got := "none"
	if tc := regexp.MustCompile(`(?m)^toolchain\s+(\S+)`).FindSubmatch(gomod); tc != nil {
		got = string(tc[1])
	}
	if got != string(m[1]) {
		t.Errorf("cmd/management/go.mod's toolchain is %s; want %s, the Go release .ci/run checks with", got, m[1])
	}
}
