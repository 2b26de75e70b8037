package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// prepare turns a clean checkout of main into the tree of the release
// commit: every released nested module requires the root at Version, has no
// replace directive of a released module (main keeps them so that the
// modules build against the root of the same checkout), and carries the
// root's checksums in its go.sum, as `go get` of the tagged root would
// write them. The root module's files are not changed, so its checksum is
// computed from HEAD; that is why the working tree must be clean.
func prepare(args []string) error {
	fs, dir := flags("prepare")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := openRepo(*dir)
	if err != nil {
		return err
	}
	status, err := command(r.root, nil, "git", "status", "--porcelain")
	if err != nil {
		return err
	}
	if strings.TrimSpace(status) != "" {
		return fmt.Errorf("the working tree has changes; commit or stash them first (the root module's checksum is computed from HEAD):\n%s", status)
	}
	sums, err := rootSums(r)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s: %s\n", rootPath, r.version, strings.Fields(sums[0])[2])
	for _, m := range r.modules[1:] {
		changes, err := prepareModule(filepath.Join(r.root, filepath.FromSlash(m.dir)), r, sums)
		if err != nil {
			return fmt.Errorf("%s: %w", m.dir, err)
		}
		for _, c := range changes {
			fmt.Printf("%s: %s\n", m.dir, c)
		}
	}
	fmt.Printf("the tree is the release of %s: commit it and push the tags RELEASING.md lists\n", r.version)
	return nil
}

// releasedPaths returns the module paths of r's released modules.
func (r *repo) releasedPaths() []string {
	var paths []string
	for _, m := range r.modules {
		paths = append(paths, m.path)
	}
	return paths
}

// prepareModule makes the go.mod and go.sum of the nested module in dir
// those of the release, and says what it changed.
func prepareModule(dir string, r *repo, rootSums []string) (changes []string, err error) {
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	released := r.releasedPaths()
	requiresRoot := false
	for _, req := range f.Require {
		if !slices.Contains(released, req.Mod.Path) {
			continue
		}
		if req.Mod.Path != rootPath {
			return nil, fmt.Errorf("requires %s: only requirements of the root module are prepared", req.Mod.Path)
		}
		requiresRoot = true
		if req.Mod.Version != r.version {
			changes = append(changes, fmt.Sprintf("require %s %s (was %s)", req.Mod.Path, r.version, req.Mod.Version))
		}
	}
	if requiresRoot {
		if err := f.AddRequire(rootPath, r.version); err != nil {
			return nil, err
		}
	}
	for _, rep := range slices.Clone(f.Replace) {
		if slices.Contains(released, rep.Old.Path) {
			change := fmt.Sprintf("dropped replace %s => %s", rep.Old.Path, rep.New.Path)
			if err := f.DropReplace(rep.Old.Path, rep.Old.Version); err != nil {
				return nil, err
			}
			changes = append(changes, change)
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(gomod, out, 0o644); err != nil {
		return nil, err
	}
	if !requiresRoot {
		return changes, nil
	}

	gosum := filepath.Join(dir, "go.sum")
	sum, err := os.ReadFile(gosum)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	merged, added := mergeSums(string(sum), rootSums)
	if added > 0 {
		changes = append(changes, fmt.Sprintf("go.sum: %d checksums of %s %s", added, rootPath, r.version))
	}
	return changes, os.WriteFile(gosum, []byte(merged), 0o644)
}

// mergeSums returns the go.sum text sum with lines added, in the go
// command's order (module path, then version, the go.mod line after the
// module's), and how many lines were new.
func mergeSums(sum string, lines []string) (string, int) {
	var all []string
	for l := range strings.Lines(sum) {
		if l = strings.TrimSpace(l); l != "" {
			all = append(all, l)
		}
	}
	added := 0
	for _, l := range lines {
		if !slices.Contains(all, l) {
			all = append(all, l)
			added++
		}
	}
	slices.SortStableFunc(all, func(a, b string) int {
		af, bf := strings.Fields(a), strings.Fields(b)
		if len(af) < 2 || len(bf) < 2 {
			return strings.Compare(a, b)
		}
		if c := strings.Compare(af[0], bf[0]); c != 0 {
			return c
		}
		av, bv := strings.TrimSuffix(af[1], "/go.mod"), strings.TrimSuffix(bf[1], "/go.mod")
		if c := semver.Compare(av, bv); c != 0 {
			return c
		}
		return strings.Compare(af[1], bf[1])
	})
	return strings.Join(all, "\n") + "\n", added
}

// rootSums returns the go.sum lines of the root module at r.version, packed
// from HEAD as the module proxy will serve it once the tag is pushed.
func rootSums(r *repo) ([]string, error) {
	tmp, err := os.CreateTemp("", "releasecheck-root-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	mv := module.Version{Path: rootPath, Version: r.version}
	if err := modzip.CreateFromVCS(tmp, mv, r.root, "HEAD", ""); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	zipHash, err := dirhash.HashZip(tmp.Name(), dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	gomod, err := command(r.root, nil, "git", "show", "HEAD:go.mod")
	if err != nil {
		return nil, err
	}
	modHash, err := goModHash([]byte(gomod))
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("%s %s %s", rootPath, r.version, zipHash),
		fmt.Sprintf("%s %s/go.mod %s", rootPath, r.version, modHash),
	}, nil
}

// goModHash is the checksum go.sum records for a go.mod file's content.
func goModHash(gomod []byte) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
}
