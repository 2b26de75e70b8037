package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/sumdb/dirhash"
)

// writeFiles writes files (path relative to dir: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRepo(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":                 "module " + rootPath + "\n",
		"config.go":              "package management\n\n// Version is v.\nconst Version = \"1.2.3\"\n",
		"config_test.go":         "package management\n\nconst Version = \"9.9.9\"\n",
		"otel/go.mod":            "module " + rootPath + "/otel\n",
		"cmd/tool/go.mod":        "module " + rootPath + "/cmd/tool\n",
		"internal/bench/go.mod":  "module " + rootPath + "/internal/bench\n",
		"x/internal/y/go.mod":    "module " + rootPath + "/x/internal/y\n",
		"testdata/mod/go.mod":    "module example.com/testdata\n",
		".hidden/go.mod":         "module example.com/hidden\n",
		"examples/quick/main.go": "package main\n",
	})
	r, err := openRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.version != "v1.2.3" {
		t.Errorf("version = %q; want v1.2.3 (from the package, not its tests)", r.version)
	}
	want := []repoModule{{rootPath, ""}, {rootPath + "/cmd/tool", "cmd/tool"}, {rootPath + "/otel", "otel"}}
	if !slices.Equal(r.modules, want) {
		t.Errorf("modules = %v; want %v (none under internal/, testdata/ or a dot directory)", r.modules, want)
	}
	if m, err := r.moduleOf(rootPath + "/otel/sub"); err != nil || m.dir != "otel" {
		t.Errorf("moduleOf(otel/sub) = %v, %v; want the otel module", m, err)
	}
	if m, err := r.moduleOf(rootPath + "/managementtest"); err != nil || m.dir != "" {
		t.Errorf("moduleOf(managementtest) = %v, %v; want the root module", m, err)
	}
	if _, err := r.moduleOf("example.com/other"); err == nil {
		t.Error("moduleOf(example.com/other) succeeded; want an error")
	}

	writeFiles(t, dir, map[string]string{"config.go": "package management\n"})
	if _, err := openRepo(dir); err == nil || !strings.Contains(err.Error(), "no const Version") {
		t.Errorf("openRepo without Version: %v; want an error saying so", err)
	}
}

func TestMergeSums(t *testing.T) {
	sum := "example.com/b v1.10.0 h1:b10=\nexample.com/b v1.10.0/go.mod h1:b10mod=\nexample.com/b v1.9.0/go.mod h1:b9mod=\n" +
		"example.com/d v1.0.0 h1:d=\n"
	got, added := mergeSums(sum, []string{"example.com/c v0.1.0 h1:c=", "example.com/c v0.1.0/go.mod h1:cmod=", "example.com/d v1.0.0 h1:d="})
	want := "example.com/b v1.9.0/go.mod h1:b9mod=\nexample.com/b v1.10.0 h1:b10=\nexample.com/b v1.10.0/go.mod h1:b10mod=\n" +
		"example.com/c v0.1.0 h1:c=\nexample.com/c v0.1.0/go.mod h1:cmod=\nexample.com/d v1.0.0 h1:d=\n"
	if got != want || added != 2 {
		t.Errorf("mergeSums = %d lines added:\n%s\nwant 2:\n%s", added, got, want)
	}
}

func TestPrepareModule(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module " + rootPath + "/cmd/tool\n\ngo 1.26.0\n\ntoolchain go1.27.4\n\n" +
			"replace " + rootPath + " => ../..\n\nreplace example.com/fork => ./fork\n\n" +
			"require (\n\t" + rootPath + " v0.0.0\n\texample.com/dep v1.0.0\n)\n",
		"go.sum": "example.com/dep v1.0.0 h1:dep=\nexample.com/dep v1.0.0/go.mod h1:depmod=\n",
	})
	r := &repo{version: "v0.2.0", modules: []repoModule{{rootPath, ""}, {rootPath + "/cmd/tool", "cmd/tool"}}}
	sums := []string{rootPath + " v0.2.0 h1:root=", rootPath + " v0.2.0/go.mod h1:rootmod="}
	changes, err := prepareModule(dir, r, sums)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []string{
		"require " + rootPath + " v0.2.0 (was v0.0.0)",
		"dropped replace " + rootPath + " => ../..",
		"go.sum: 2 checksums of " + rootPath + " v0.2.0",
	}
	if !slices.Equal(changes, wantChanges) {
		t.Errorf("changes = %q; want %q", changes, wantChanges)
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var reqs, reps []string
	for _, r := range f.Require {
		reqs = append(reqs, r.Mod.String())
	}
	for _, r := range f.Replace {
		reps = append(reps, r.Old.Path)
	}
	if !slices.Equal(reqs, []string{rootPath + "@v0.2.0", "example.com/dep@v1.0.0"}) || !slices.Equal(reps, []string{"example.com/fork"}) ||
		f.Toolchain == nil || f.Toolchain.Name != "go1.27.4" {
		t.Errorf("go.mod requires %q, replaces %q, toolchain %v; want the root at v0.2.0, example.com/dep, only the fork's replace, go1.27.4:\n%s", reqs, reps, f.Toolchain, data)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sums {
		if !strings.Contains(string(sum), l+"\n") {
			t.Errorf("go.sum lacks %q:\n%s", l, sum)
		}
	}

	// Again: nothing left to change.
	if changes, err := prepareModule(dir, r, sums); err != nil || len(changes) != 0 {
		t.Errorf("a second prepareModule: %q, %v; want no change", changes, err)
	}
}

// gitRepo makes a git repository of files at dir, committed.
func gitRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed")
	}
	writeFiles(t, dir, files)
	if _, err := command(dir, nil, "git", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := commitAll(dir, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestPackModule(t *testing.T) {
	dir := t.TempDir()
	license := "the licence's text\n"
	gitRepo(t, dir, map[string]string{
		"go.mod":          "module " + rootPath + "\n\ngo 1.26.0\n",
		"LICENSE":         license,
		"config.go":       "package management\n\nconst Version = \"0.3.0\"\n",
		"otel/go.mod":     "module " + rootPath + "/otel\n\ngo 1.26.0\n",
		"otel/otel.go":    "package otel\n",
		"otel/README.md":  "go get " + rootPath + "/otel\n",
		"internal/x/a.go": "package x\n",
	})
	r, err := openRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(t.TempDir(), "proxy")
	for _, m := range r.modules {
		if _, err := packModule(r, m, proxy, []byte(license)); err != nil {
			t.Fatalf("packModule(%s): %v", m.path, err)
		}
	}
	v := filepath.Join(proxy, "github.com", "serviceconnect", "management", "otel", "@v")
	for name, want := range map[string]string{"list": "v0.3.0\n", "v0.3.0.mod": "module " + rootPath + "/otel\n\ngo 1.26.0\n"} {
		if got, err := os.ReadFile(filepath.Join(v, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	var info struct {
		Version string
		Time    time.Time
	}
	if b, err := os.ReadFile(filepath.Join(v, "v0.3.0.info")); err != nil || json.Unmarshal(b, &info) != nil || info.Version != "v0.3.0" || info.Time.IsZero() {
		t.Errorf("v0.3.0.info = %s, %v; want the version and the commit's time", b, err)
	}
	names := zipNames(t, filepath.Join(v, "v0.3.0.zip"))
	want := []string{rootPath + "/otel@v0.3.0/LICENSE", rootPath + "/otel@v0.3.0/README.md", rootPath + "/otel@v0.3.0/go.mod", rootPath + "/otel@v0.3.0/otel.go"}
	if !slices.Equal(names, want) {
		t.Errorf("the otel zip holds %q; want %q (the root's LICENSE included)", names, want)
	}
	names = zipNames(t, filepath.Join(proxy, "github.com", "serviceconnect", "management", "@v", "v0.3.0.zip"))
	if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "otel") }) || !slices.Contains(names, rootPath+"@v0.3.0/internal/x/a.go") {
		t.Errorf("the root zip holds %q; want no file of the otel module, and internal/x", names)
	}

	if _, err := packModule(r, r.modules[1], proxy, []byte("another licence")); err == nil || !strings.Contains(err.Error(), "LICENSE is not the repository's") {
		t.Errorf("packModule with another LICENSE: %v; want an error", err)
	}
}

func zipNames(t *testing.T, path string) []string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestSnapshot(t *testing.T) {
	src := t.TempDir()
	gitRepo(t, src, map[string]string{".gitignore": "*.out\n", "a.txt": "committed\n", "gone.txt": "deleted later\n"})
	writeFiles(t, src, map[string]string{"a.txt": "changed\n", "new.txt": "untracked\n", "x.out": "ignored\n"})
	if err := os.Remove(filepath.Join(src, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "snap")
	if err := snapshot(src, dst); err != nil {
		t.Fatal(err)
	}
	out, err := command(dst, nil, "git", "ls-files", "-s")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		files = append(files, f[0]+" "+f[3])
	}
	want := []string{"100644 .gitignore", "100644 a.txt", "100644 new.txt", "100755 run.sh"}
	if !slices.Equal(files, want) {
		t.Errorf("the snapshot commits %q; want %q", files, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || string(b) != "changed\n" {
		t.Errorf("a.txt = %q, %v; want the working tree's", b, err)
	}
}

func TestDocumentedInstalls(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":       "module " + rootPath + "\n",
		"config.go":    "package management\n\nconst Version = \"0.1.0\"\n",
		"otel/go.mod":  "module " + rootPath + "/otel\n",
		"cmd/t/go.mod": "module " + rootPath + "/cmd/t\n",
		"README.md": "```sh\ngo get " + rootPath + "   # the SDK\n  go get " + rootPath + "/otel\n" +
			"go install " + rootPath + "/cmd/t@latest  # the tool\n```\nNot a command: go get example.com/x\n",
		"otel/README.md": "```\ngo get " + rootPath + "/otel\n```\n",
	})
	r, err := openRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := documentedInstalls(r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, c.line+" | "+c.doc+" | "+c.module.dir+" | "+map[bool]string{true: "install", false: "get"}[c.install])
	}
	want := []string{
		"go get " + rootPath + " | README.md |  | get",
		"go get " + rootPath + "/otel | README.md | otel | get",
		"go install " + rootPath + "/cmd/t@latest | README.md | cmd/t | install",
	}
	if !slices.Equal(got, want) {
		t.Errorf("documentedInstalls = %q; want %q", got, want)
	}

	writeFiles(t, dir, map[string]string{"README.md": "go get " + rootPath + "\n"})
	if _, err := documentedInstalls(r); err == nil || !strings.Contains(err.Error(), "no README documents how to install "+rootPath+"/cmd/t") {
		t.Errorf("documentedInstalls without the tool's: %v; want an error naming it", err)
	}
}

func TestVerifyDownloads(t *testing.T) {
	dir := t.TempDir()
	gomod := "module example.com/dep\n"
	modHash, err := goModHash([]byte(gomod))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"example.com/dep/@v/v1.0.0.ziphash":                      "h1:zip=\n",
		"example.com/dep/@v/v1.0.0.mod":                          gomod,
		"example.com/dep/@v/v1.0.0.info":                         "{}",
		"example.com/!upper/@v/v2.0.0.ziphash":                   "h1:upper=\n",
		"github.com/serviceconnect/management/@v/v0.1.0.ziphash": "h1:ours, not checked\n",
		"sumdb/sum.golang.org/latest":                            "not a module",
	})
	gosum := "example.com/dep v1.0.0 h1:zip=\nexample.com/dep v1.0.0/go.mod " + modHash + "\nexample.com/Upper v2.0.0 h1:upper=\n"
	if n, err := verifyDownloads(dir, gosum); err != nil || n != 3 {
		t.Errorf("verifyDownloads = %d, %v; want 3 checked", n, err)
	}
	if _, err := verifyDownloads(dir, strings.Replace(gosum, "h1:zip=", "h1:other=", 1)); err == nil || !strings.Contains(err.Error(), "example.com/dep v1.0.0 h1:zip=") {
		t.Errorf("verifyDownloads with another checksum: %v; want an error naming the download", err)
	}
}

func TestBuildVulnDB(t *testing.T) {
	osv := t.TempDir()
	writeFiles(t, osv, map[string]string{
		"GO-2026-0001.json": `{"id":"GO-2026-0001","modified":"0001-01-01T00:00:00Z","aliases":["CVE-1"],"affected":[{"package":{"name":"stdlib","ecosystem":"Go"}},{"package":{"name":"toolchain"}}]}`,
		"GO-2026-0002.json": `{"id":"GO-2026-0002","modified":"2026-11-10T00:00:00Z","affected":[{"package":{"name":"example.com/dep"}},{"package":{"name":"example.com/dep"}}]}`,
		"README.md":         "not an entry",
	})
	pinned := time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC)
	out := t.TempDir()
	st, err := buildVulnDB(osv, out, pinned)
	if err != nil || st != (vulnStats{entries: 2, stdlib: 1}) {
		t.Fatalf("buildVulnDB = %+v, %v; want 2 entries, 1 on the standard library", st, err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, want := range map[string]string{
		"index/db.json": `{"modified":"2026-11-10T00:00:00Z"}`,
		"index/modules.json": `[{"path":"example.com/dep","vulns":[{"id":"GO-2026-0002","modified":"2026-11-10T00:00:00Z"}]},` +
			`{"path":"stdlib","vulns":[{"id":"GO-2026-0001","modified":"2026-11-05T23:49:57Z"}]},` +
			`{"path":"toolchain","vulns":[{"id":"GO-2026-0001","modified":"2026-11-05T23:49:57Z"}]}]`,
		"index/vulns.json": `[{"id":"GO-2026-0001","modified":"2026-11-05T23:49:57Z","aliases":["CVE-1"]},{"id":"GO-2026-0002","modified":"2026-11-10T00:00:00Z"}]`,
	} {
		if got := read(name); got != want {
			t.Errorf("%s = %s\nwant %s", name, got, want)
		}
	}
	if got := read("ID/GO-2026-0002.json"); !strings.HasPrefix(got, `{"id":"GO-2026-0002"`) {
		t.Errorf("ID/GO-2026-0002.json = %s; want the entry as it was", got)
	}

	for name, files := range map[string]map[string]string{
		"no entry":             {},
		"no standard library":  {"GO-1.json": `{"id":"GO-1","affected":[{"package":{"name":"example.com/dep"}}]}`},
		"a misnamed entry":     {"GO-1.json": `{"id":"GO-2","affected":[{"package":{"name":"stdlib"}}]}`},
		"an entry not in JSON": {"GO-1.json": `{`},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, files)
		if _, err := buildVulnDB(dir, t.TempDir(), pinned); err == nil {
			t.Errorf("buildVulnDB with %s succeeded; want an error", name)
		}
	}
}

// TestScanModuleTwoPasses runs scanModule against a stand-in for
// govulncheck that records its arguments and exits as govulncheck does:
// 0 when nothing is found, 3 when a vulnerability is found at the level
// scanned.
func TestScanModuleTwoPasses(t *testing.T) {
	for _, tc := range []struct {
		name                string
		packageExit, symbol int
		wantScans           []string
		wantErr             bool
	}{
		{"no vulnerable package imported", 0, 0, []string{"package"}, false},
		{"imported, never called", 3, 0, []string{"package", "symbol"}, false},
		{"imported and called", 3, 3, []string{"package", "symbol"}, true},
		{"package scan fails", 1, 0, []string{"package"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "scans")
			bin := filepath.Join(dir, "govulncheck")
			script := "#!/bin/sh\n" +
				"echo \"$PWD $*\" >>" + log + "\n" +
				"case \"$*\" in\n" +
				"*'-scan package'*) exit " + strconv.Itoa(tc.packageExit) + " ;;\n" +
				"*'-scan symbol'*) exit " + strconv.Itoa(tc.symbol) + " ;;\n" +
				"esac\nexit 2\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			mod := t.TempDir()
			err := scanModule(bin, "/db", mod, []string{"GOTOOLCHAIN=go1.27.4"})
			if (err != nil) != tc.wantErr {
				t.Errorf("scanModule: %v, want an error: %v", err, tc.wantErr)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSpace(string(b)), "\n")
			var want []string
			for _, level := range tc.wantScans {
				want = append(want, mod+" -db file:///db -scan "+level+" ./...")
			}
			if !slices.Equal(got, want) {
				t.Errorf("govulncheck ran as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestLicenceOf(t *testing.T) {
	apache, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatalf("the repository's LICENSE, which this module's checks rely on: %v", err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"LICENSE.txt": string(apache), "NOTICE": "not a licence file", "license_test.go": "package x\n"})
	if l, err := licenceOf(dir); err != nil || !slices.Equal(l.ids, []string{"Apache-2.0"}) || !slices.Equal(l.files, []string{"LICENSE.txt"}) {
		t.Errorf("licenceOf(Apache-2.0 in LICENSE.txt) = %+v, %v; want Apache-2.0 from LICENSE.txt", l, err)
	}
	writeFiles(t, dir, map[string]string{"COPYING": "You may do what the author says on Tuesdays.\n"})
	if _, err := licenceOf(dir); err == nil || !strings.Contains(err.Error(), "COPYING") {
		t.Errorf("licenceOf with an unknown COPYING: %v; want an error naming it", err)
	}
	if _, err := licenceOf(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no licence file") {
		t.Errorf("licenceOf without a licence file: %v; want an error", err)
	}
}

func TestMarkdownSection(t *testing.T) {
	doc := "# T\n\n## Install\n\ngo get x\n\n## Dependencies\n\nSome `a/b`.\n\n### Sub\n\nmore\n\n## Licence\n\nApache\n"
	if got, want := markdownSection(doc, "Dependencies"), "\nSome `a/b`.\n\n### Sub\n\nmore\n"; got != want {
		t.Errorf("markdownSection = %q; want %q", got, want)
	}
	if got := markdownSection(doc, "Contributing"); got != "" {
		t.Errorf("markdownSection of a missing section = %q; want none", got)
	}
}

func TestVersionWord(t *testing.T) {
	for out, want := range map[string]bool{
		"management v0.1.0 (management-go 0.1.0, go1.26.8)": true,
		"v0.1.0\n":                  true,
		"management v0.1.01":        false,
		"management v0.1.0-rc.1":    false,
		"management devel":          false,
		"management xv0.1.0":        false,
		"management (devel v0.1.0)": true,
	} {
		if got := versionWord(out, "v0.1.0"); got != want {
			t.Errorf("versionWord(%q) = %v; want %v", out, got, want)
		}
	}
}

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	gitRepo(t, dir, map[string]string{
		"go.mod":    "module " + rootPath + "\n\ngo 1.26.0\n",
		"LICENSE":   "the licence\n",
		"config.go": "package management\n\nconst Version = \"0.4.0\"\n",
		"otel/go.mod": "module " + rootPath + "/otel\n\ngo 1.26.0\n\nrequire " + rootPath + " v0.4.0\n\n" +
			"replace " + rootPath + " => ../\n",
	})
	writeFiles(t, dir, map[string]string{"notes.txt": "not committed\n"})
	if err := prepare([]string{"-repo", dir}); err == nil || !strings.Contains(err.Error(), "the working tree has changes") {
		t.Errorf("prepare on a working tree with changes: %v; want a refusal", err)
	}
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := prepare([]string{"-repo", dir}); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "otel", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(gomod), "replace") || !strings.Contains(string(gomod), "require "+rootPath+" v0.4.0") {
		t.Errorf("otel/go.mod after prepare:\n%s\nwant the root required at v0.4.0 and no replace", gomod)
	}

	// The go.sum lines are the checksums of the root as the proxy serves it.
	r, err := openRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if _, err := packModule(r, r.modules[0], proxy, []byte("the licence\n")); err != nil {
		t.Fatal(err)
	}
	zipHash, err := dirhash.HashZip(filepath.Join(proxy, "github.com", "serviceconnect", "management", "@v", "v0.4.0.zip"), dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	modHash, err := goModHash([]byte("module " + rootPath + "\n\ngo 1.26.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "otel", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	want := rootPath + " v0.4.0 " + zipHash + "\n" + rootPath + " v0.4.0/go.mod " + modHash + "\n"
	if string(sum) != want {
		t.Errorf("otel/go.sum = %q; want %q", sum, want)
	}
}
