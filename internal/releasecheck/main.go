// Command releasecheck prepares and checks a release of this repository's
// modules. It is a module of its own under internal/, so it is never
// released, and its dependencies (golang.org/x/mod, licensecheck,
// govulncheck) never reach a user's build.
//
//	releasecheck prepare   turn a clean checkout into the release commit (scripts/prepare-release)
//	releasecheck release   pack the released modules into a local module proxy and install them as a user would
//	releasecheck vuln      govulncheck every released module against an offline database
//	releasecheck licences  check the licence of every dependency against an allow-list
//
// Every subcommand takes -repo, the repository's root (by default the
// working directory's git top level). With RELEASECHECK_TRACE=1 in the
// environment, each command it runs is printed with its duration.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rootPath is the root module's path; the other released modules' paths
// extend it.
const rootPath = "github.com/serviceconnect/management"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmds := map[string]func(args []string) error{
		"prepare":  prepare,
		"release":  release,
		"vuln":     vuln,
		"licences": licences,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		usage()
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "releasecheck %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// flags returns the flag set of subcommand name, with its -repo flag.
func flags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	dir := fs.String("repo", "", "the repository's root (default: the working directory's git top level)")
	return fs, dir
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: releasecheck prepare|release|vuln|licences [-repo DIR] [flags]")
	os.Exit(2)
}

// repo is a checkout of the repository.
type repo struct {
	root    string       // absolute
	version string       // the root package's Version, with a leading "v"
	modules []repoModule // the released ones, the root first
}

// repoModule is a released module of the repository.
type repoModule struct {
	path string // module path
	dir  string // relative to the repository's root, slash-separated; "" for the root
}

func openRepo(dir string) (*repo, error) {
	if dir == "" {
		out, err := command("", nil, "git", "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, err
		}
		dir = strings.TrimSpace(out)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	v, err := sdkVersion(root)
	if err != nil {
		return nil, err
	}
	mods, err := releasedModules(root)
	if err != nil {
		return nil, err
	}
	return &repo{root: root, version: "v" + v, modules: mods}, nil
}

// sdkVersion returns the value of the root package's Version constant, the
// source of truth of a release.
func sdkVersion(root string) (string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil {
		return "", err
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name != "Version" || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return "", fmt.Errorf("%s: Version is not a string literal", name)
					}
					return strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return "", fmt.Errorf("no const Version in the root package at %s", root)
}

// releasedModules returns the modules a release tags: every go.mod of the
// repository except those under testdata/ or an internal/ directory (a
// module whose path has an internal element can be imported by nobody
// outside this repository: benchmarks, this tool). The root module's
// release_test.go applies the same rule.
func releasedModules(root string) ([]repoModule, error) {
	var mods []repoModule
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := repoModule{path: rootPath}
		if rel != "." {
			m = repoModule{path: rootPath + "/" + filepath.ToSlash(rel), dir: filepath.ToSlash(rel)}
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(mods, func(a, b repoModule) int { return strings.Compare(a.dir, b.dir) })
	if len(mods) == 0 || mods[0].dir != "" {
		return nil, fmt.Errorf("%s has no go.mod at its root", root)
	}
	return mods, nil
}

// command runs name with args in dir, with env added to the process's
// environment, and returns its standard output; the error carries its
// standard error.
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	defer func() {
		if os.Getenv("RELEASECHECK_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "[%.1fs] %s %s\n", time.Since(t0).Seconds(), name, strings.Join(args, " "))
		}
	}()
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("%s %s (in %s): %w\n%s", name, strings.Join(args, " "), dir, err, msg)
	}
	return stdout.String(), nil
}

// errFailed reports a check that failed after printing why.
var errFailed = errors.New("failed; see above")
