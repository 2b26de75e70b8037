package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// vuln runs govulncheck on every released module against a vulnerability
// database built, on every run, from a pinned version of the
// golang.org/x/vulndb module: the online database is not reachable from CI,
// and a pin makes each bump a deliberate commit. govulncheck is built and
// runs under the Go release named by -go (GOTOOLCHAIN), since it reports
// the standard library of the Go that builds the code. A database that
// cannot be built, or holds no entry of the standard library, is a failure.
func vuln(args []string) error {
	fs, dir := flags("vuln")
	pin := fs.String("vulndb", "", "the vulnerability data, golang.org/x/vulndb@VERSION (required)")
	goVersion := fs.String("go", "", "the Go release to build and scan under, for example go1.27.4 (required)")
	keep := fs.Bool("keep", false, "keep the temporary directory (the database, govulncheck) and print its path")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !strings.HasPrefix(*pin, "golang.org/x/vulndb@") || *goVersion == "" {
		return errors.New("-vulndb golang.org/x/vulndb@VERSION and -go GOVERSION are required")
	}
	r, err := openRepo(*dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "releasecheck-vuln-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("temporary directory:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	out, err := command(tmp, []string{"GOWORK=off"}, "go", "mod", "download", "-json", *pin)
	if err != nil {
		return err
	}
	var dl struct{ Dir, Info, Version string }
	if err := json.Unmarshal([]byte(out), &dl); err != nil {
		return fmt.Errorf("go mod download -json %s: %w", *pin, err)
	}
	var info struct{ Time time.Time }
	if b, err := os.ReadFile(dl.Info); err != nil {
		return err
	} else if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("%s: %w", dl.Info, err)
	}
	db := filepath.Join(tmp, "vulndb")
	st, err := buildVulnDB(filepath.Join(dl.Dir, "data", "osv"), db, info.Time)
	if err != nil {
		return fmt.Errorf("vulnerability database from %s: %w", *pin, err)
	}
	fmt.Printf("vulnerability database: %d entries, %d of them on the standard library, from golang.org/x/vulndb@%s (%s)\n",
		st.entries, st.stdlib, dl.Version, info.Time.Format(time.DateOnly))

	env := []string{"GOTOOLCHAIN=" + *goVersion, "GOWORK=off"}
	bin := filepath.Join(tmp, "govulncheck")
	if _, err := command(filepath.Join(r.root, "internal", "releasecheck"), env, "go", "build", "-o", bin, "golang.org/x/vuln/cmd/govulncheck"); err != nil {
		return err
	}
	failed := false
	for _, m := range r.modules {
		fmt.Printf("\n%s (govulncheck, %s):\n", m.path, *goVersion)
		if err := scanModule(bin, db, filepath.Join(r.root, filepath.FromSlash(m.dir)), env); err != nil {
			fmt.Printf("govulncheck in %s: %v\n", m.path, err)
			failed = true
		}
	}
	if failed {
		return errFailed
	}
	return nil
}

// scanModule runs govulncheck on the packages of the module in dir, in two
// passes. The first, -scan package, lists the packages the module imports
// (no type-checking) and finds the vulnerabilities in any of them. Only
// when it finds one does the second, the default -scan symbol, type-check
// everything from source and build a call graph to tell whether a
// vulnerable function is reached: what that pass calls a finding is always
// one the first found, so the verdict is the symbol scan's, at a fraction
// of its cost on the usual day when nothing is found (for the five
// modules, with govulncheck built: 5 CPU seconds against 29, most of
// those spent type-checking the standard library again for each).
func scanModule(bin, db, dir string, env []string) error {
	scan := func(level string) error {
		cmd := exec.Command(bin, "-db", "file://"+filepath.ToSlash(db), "-scan", level, "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	err := scan("package")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != govulncheckFound {
		return err // nil: no vulnerable package is imported
	}
	fmt.Println("an imported package is vulnerable: is a vulnerable function called?")
	return scan("symbol")
}

// govulncheckFound is govulncheck's exit status when it finds a
// vulnerability at the level it scans.
const govulncheckFound = 3

// osvEntry is what the database's indexes need of an OSV entry.
type osvEntry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

// vulnStats counts a database's entries.
type vulnStats struct{ entries, stdlib int }

// buildVulnDB writes, at out, a database in the layout govulncheck reads
// from a file:// URL (the one vuln.go.dev serves: index/db.json,
// index/modules.json, index/vulns.json and ID/<id>.json) from the OSV
// entries in osvDir, as golang.org/x/vulndb keeps them in data/osv. Entries
// there carry no modification time (the published database adds it), so
// the indexes take modified, the pinned version's time, in its place. The
// modules index names no fixed version: govulncheck then reads every entry
// of a module and matches its ranges itself.
func buildVulnDB(osvDir, out string, modified time.Time) (vulnStats, error) {
	files, err := filepath.Glob(filepath.Join(osvDir, "*.json"))
	if err != nil {
		return vulnStats{}, err
	}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o755); err != nil {
		return vulnStats{}, err
	}
	if err := os.MkdirAll(filepath.Join(out, "index"), 0o755); err != nil {
		return vulnStats{}, err
	}
	type moduleVuln struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
	}
	type vulnMeta struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
		Aliases  []string  `json:"aliases,omitempty"`
	}
	byModule := map[string][]moduleVuln{}
	var vulns []vulnMeta
	var st vulnStats
	newest := modified
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return vulnStats{}, err
		}
		var e osvEntry
		if err := json.Unmarshal(data, &e); err != nil {
			return vulnStats{}, fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
		if e.ID+".json" != filepath.Base(name) {
			return vulnStats{}, fmt.Errorf("%s holds entry %q", filepath.Base(name), e.ID)
		}
		if e.Modified.IsZero() {
			e.Modified = modified
		}
		if e.Modified.After(newest) {
			newest = e.Modified
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), data, 0o644); err != nil {
			return vulnStats{}, err
		}
		vulns = append(vulns, vulnMeta{e.ID, e.Modified, e.Aliases})
		st.entries++
		seen := map[string]bool{}
		for _, a := range e.Affected {
			if p := a.Package.Name; p != "" && !seen[p] {
				seen[p] = true
				byModule[p] = append(byModule[p], moduleVuln{e.ID, e.Modified})
			}
		}
		if seen["stdlib"] {
			st.stdlib++
		}
	}
	if st.entries == 0 || st.stdlib == 0 {
		return vulnStats{}, fmt.Errorf("%s holds %d entries, %d of them on the standard library: no database to check against", osvDir, st.entries, st.stdlib)
	}

	type moduleMeta struct {
		Path  string       `json:"path"`
		Vulns []moduleVuln `json:"vulns"`
	}
	var modules []moduleMeta
	for p, vs := range byModule {
		modules = append(modules, moduleMeta{p, vs})
	}
	slices.SortFunc(modules, func(a, b moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	for name, v := range map[string]any{
		"db.json": struct {
			Modified time.Time `json:"modified"`
		}{newest},
		"modules.json": modules,
		"vulns.json":   vulns,
	} {
		data, err := json.Marshal(v)
		if err != nil {
			return vulnStats{}, err
		}
		if err := os.WriteFile(filepath.Join(out, "index", name), data, 0o644); err != nil {
			return vulnStats{}, err
		}
	}
	return st, nil
}
