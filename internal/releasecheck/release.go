package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// release checks that every released module installs at Version from a
// module proxy, as a user following the READMEs would: it copies the
// working tree (what `git add -A` would commit) into a new repository, makes
// the release commit there with scripts/prepare-release, packs each released
// module at Version into a file-based module proxy as the go command would
// pack it (x/mod/zip's CreateFromVCS, the repository's LICENSE included),
// and runs every `go get` and `go install` command the READMEs document
// against that proxy with an empty module cache: each library in a fresh
// module with a program that uses it (build, vet, run), the
// command-line tool into an empty GOBIN (its version command).
//
// It runs offline: the proxy is the local one, then the download cache of
// the machine's module cache for the dependencies; go.sum starts from the
// released modules' own go.sum lines instead of the checksum database, and
// a dead HTTP proxy makes any attempt to reach the network fail.
func release(args []string) error {
	fs, dir := flags("release")
	keep := fs.Bool("keep", false, "keep the temporary directory (proxy, module cache, fresh modules) and print its path")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := openRepo(*dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("temporary directory:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	snap := filepath.Join(tmp, "repo")
	if err := snapshot(r.root, snap); err != nil {
		return err
	}
	out, err := command(snap, nil, filepath.Join(snap, "scripts", "prepare-release"))
	fmt.Print(indent("scripts/prepare-release: ", out))
	if err != nil {
		return err
	}
	if err := commitAll(snap, "release "+r.version); err != nil {
		return err
	}
	rel, err := openRepo(snap)
	if err != nil {
		return err
	}

	proxy := filepath.Join(tmp, "proxy")
	license, err := os.ReadFile(filepath.Join(snap, "LICENSE"))
	if err != nil {
		return fmt.Errorf("the repository has no LICENSE: %w", err)
	}
	for _, m := range rel.modules {
		p, err := packModule(rel, m, proxy, license)
		if err != nil {
			return fmt.Errorf("pack %s: %w", m.path, err)
		}
		fmt.Printf("packed %s@%s: %d files, %d bytes, LICENSE included\n", m.path, rel.version, p.files, p.size)
	}

	env, err := userEnv(tmp, proxy)
	if err != nil {
		return err
	}
	seed, err := releasedSums(rel)
	if err != nil {
		return err
	}
	cmds, err := documentedInstalls(rel)
	if err != nil {
		return err
	}
	for i, c := range cmds {
		var err error
		if c.install {
			err = checkInstall(rel, c, filepath.Join(tmp, fmt.Sprintf("user%d", i)), env)
		} else {
			err = checkGet(rel, c, filepath.Join(tmp, fmt.Sprintf("user%d", i)), env, seed)
		}
		if err != nil {
			return fmt.Errorf("%s (documented in %s): %w", c.line, c.doc, err)
		}
	}
	fmt.Printf("every released module installs at %s from the module proxy by its documented command\n", rel.version)
	return nil
}

// snapshot copies the working tree of the repository at root, the files
// `git add -A` would commit, into a new repository at dst, committed.
func snapshot(root, dst string) error {
	out, err := command(root, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	for _, name := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		src := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, to)
			}
			if err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	if _, err := command(dst, nil, "git", "init", "-q"); err != nil {
		return err
	}
	return commitAll(dst, "snapshot of the working tree")
}

// commitAll commits everything in the repository at dir.
func commitAll(dir, msg string) error {
	if _, err := command(dir, nil, "git", "add", "-A"); err != nil {
		return err
	}
	_, err := command(dir, nil, "git", "-c", "user.name=releasecheck", "-c", "user.email=releasecheck@localhost",
		"-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", msg)
	return err
}

// packed describes a module zip.
type packed struct{ files, size int }

// packModule writes module m of rel at HEAD into the file-based module
// proxy at dir: list, .info, .mod and .zip, in the layout of the GOPROXY
// protocol. The zip must carry the repository's LICENSE.
func packModule(rel *repo, m repoModule, dir string, license []byte) (packed, error) {
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return packed{}, err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return packed{}, err
	}
	var buf bytes.Buffer
	mv := module.Version{Path: m.path, Version: rel.version}
	if err := modzip.CreateFromVCS(&buf, mv, rel.root, "HEAD", m.dir); err != nil {
		return packed{}, err
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return packed{}, err
	}
	prefix := m.path + "@" + rel.version + "/"
	var gomod, zipLicense []byte
	for _, f := range zr.File {
		switch strings.TrimPrefix(f.Name, prefix) {
		case "go.mod":
			gomod, err = readZipFile(f)
		case "LICENSE":
			zipLicense, err = readZipFile(f)
		}
		if err != nil {
			return packed{}, err
		}
	}
	switch {
	case gomod == nil:
		return packed{}, fmt.Errorf("the zip has no go.mod")
	case zipLicense == nil:
		return packed{}, fmt.Errorf("the zip has no LICENSE")
	case !bytes.Equal(zipLicense, license):
		return packed{}, fmt.Errorf("the zip's LICENSE is not the repository's")
	}
	when, err := command(rel.root, nil, "git", "log", "-1", "--format=%cI", "HEAD")
	if err != nil {
		return packed{}, err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(when))
	if err != nil {
		return packed{}, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{rel.version, t.UTC()})
	if err != nil {
		return packed{}, err
	}
	for name, data := range map[string][]byte{
		"list":                []byte(rel.version + "\n"),
		rel.version + ".info": info,
		rel.version + ".mod":  gomod,
		rel.version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return packed{}, err
		}
	}
	return packed{files: len(zr.File), size: buf.Len()}, nil
}

// verifyDownloads checks every module in the download cache at dir, but
// this repository's, against the go.sum text gosum: the zip's and the
// go.mod's checksums. It returns how many it checked.
func verifyDownloads(dir, gosum string) (int, error) {
	sums := map[string]bool{}
	for l := range strings.Lines(gosum) {
		sums[strings.Join(strings.Fields(l), " ")] = true
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "sumdb" {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Base(filepath.Dir(path)) != "@v" {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(filepath.Dir(path)))
		if err != nil {
			return err
		}
		modPath, err := module.UnescapePath(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if modPath == rootPath || strings.HasPrefix(modPath, rootPath+"/") {
			return nil
		}
		var line string
		switch ext := filepath.Ext(d.Name()); ext {
		case ".ziphash":
			h, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line = fmt.Sprintf("%s %s %s", modPath, strings.TrimSuffix(d.Name(), ext), strings.TrimSpace(string(h)))
		case ".mod":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h, err := goModHash(data)
			if err != nil {
				return err
			}
			line = fmt.Sprintf("%s %s/go.mod %s", modPath, strings.TrimSuffix(d.Name(), ext), h)
		default:
			return nil
		}
		if !sums[line] {
			return fmt.Errorf("it lacks %q, or holds another checksum", line)
		}
		n++
		return nil
	})
	return n, err
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// userEnv returns the environment of a user's go commands: an empty module
// cache, the local proxy, then the machine's download cache, and no way to
// the network.
func userEnv(tmp, proxy string) ([]string, error) {
	warm, err := command("", nil, "go", "env", "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	const dead = "http://127.0.0.1:9" // the discard port: nothing listens
	return []string{
		"GOMODCACHE=" + filepath.Join(tmp, "modcache"),
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(strings.TrimSpace(warm), "cache", "download")),
		"GONOSUMDB=" + rootPath, // never GOPRIVATE: it would send the go command to the repository itself
		"GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		// The flags in force, plus -modcacherw: with .ci/run's -trimpath,
		// a package compiles to the same object from this module cache as
		// from the machine's, so the installs reuse what the steps before
		// compiled.
		"GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -modcacherw"),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOBIN=" + filepath.Join(tmp, "bin"),
		"HTTPS_PROXY=" + dead, "HTTP_PROXY=" + dead, "https_proxy=" + dead, "http_proxy=" + dead,
		"NO_PROXY=", "no_proxy=",
	}, nil
}

// releasedSums returns the go.sum lines of every released module at the
// release commit: what a fresh module's go.sum starts from, in place of the
// checksum database, which is not reachable offline.
func releasedSums(rel *repo) (string, error) {
	var all string
	for _, m := range rel.modules {
		b, err := os.ReadFile(filepath.Join(rel.root, filepath.FromSlash(m.dir), "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		all += string(b) + "\n"
	}
	merged, _ := mergeSums(all, nil)
	return merged, nil
}

// installCmd is a `go get` or `go install` command a README documents.
type installCmd struct {
	line    string     // as documented
	doc     string     // the README's path
	pkg     string     // the package path, without @version
	module  repoModule // the released module that provides pkg
	install bool       // go install, rather than go get
}

// documentedInstall matches a README's install command of a package of
// this repository.
var documentedInstall = regexp.MustCompile(`(?m)^\s*(go (get|install) (` + regexp.QuoteMeta(rootPath) + `[^\s@]*)(@\S+)?)`)

// documentedInstalls returns the install commands of the README.md of every
// released module, and fails when a released module has none.
func documentedInstalls(rel *repo) ([]installCmd, error) {
	var cmds []installCmd
	for _, m := range rel.modules {
		doc := filepath.ToSlash(filepath.Join(m.dir, "README.md"))
		b, err := os.ReadFile(filepath.Join(rel.root, filepath.FromSlash(doc)))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, sm := range documentedInstall.FindAllStringSubmatch(string(b), -1) {
			c := installCmd{line: sm[1], doc: doc, pkg: sm[3], install: sm[2] == "install"}
			if c.module, err = rel.moduleOf(c.pkg); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", doc, c.line, err)
			}
			if !slices.ContainsFunc(cmds, func(d installCmd) bool { return d.line == c.line }) {
				cmds = append(cmds, c)
			}
		}
	}
	for _, m := range rel.modules {
		if !slices.ContainsFunc(cmds, func(c installCmd) bool { return c.module == m }) {
			return nil, fmt.Errorf("no README documents how to install %s (a line `go get %s` or `go install %s/...@latest`)", m.path, m.path, m.path)
		}
	}
	return cmds, nil
}

// moduleOf returns the released module that provides the package path pkg.
func (r *repo) moduleOf(pkg string) (repoModule, error) {
	best := -1
	for i, m := range r.modules {
		if (pkg == m.path || strings.HasPrefix(pkg, m.path+"/")) && (best < 0 || len(m.path) > len(r.modules[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return repoModule{}, fmt.Errorf("no released module provides %s", pkg)
	}
	return r.modules[best], nil
}

// userPrograms are the programs a user writes with each library: each
// uses the library, and prints what the check expects.
var userPrograms = map[string]struct{ src, want string }{
	rootPath: {`package main

import (
	"context"
	"fmt"
	"log"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func main() {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	for user, err := range srv.Client().Users.List(context.Background(), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(management.Version, user.ID)
	}
}
`, "%s u-ada"},
	rootPath + "/otel": {`package main

import (
	"fmt"

	"github.com/serviceconnect/management"
	mgmtotel "github.com/serviceconnect/management/otel"
)

func main() {
	cfg := management.Config{Observer: mgmtotel.New()}
	fmt.Println(management.Version, cfg.Observer != nil)
}
`, "%s true"},
	rootPath + "/grpcauth": {`package main

import (
	"fmt"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"google.golang.org/grpc"
)

func main() {
	client, err := management.NewClient(management.Config{BaseURL: "https://api.example.com", ClientID: "id", ClientSecret: "secret"})
	if err != nil {
		panic(err)
	}
	auth := &management.Authenticator{Client: client}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcauth.UnaryServerInterceptor(auth)))
	defer srv.Stop()
	fmt.Println(management.Version, srv != nil)
}
`, "%s true"},
	rootPath + "/redisstore": {`package main

import (
	"fmt"

	redis "github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/redisstore"
)

func main() {
	var store management.SharedStore = redisstore.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}))
	fmt.Println(management.Version, store != nil)
}
`, "%s true"},
}

// checkGet runs a documented `go get` in a fresh module at dir, then builds,
// vets and runs a program that uses the library.
func checkGet(rel *repo, c installCmd, dir string, env []string, seed string) error {
	prog, ok := userPrograms[c.module.path]
	if !ok {
		return fmt.Errorf("releasecheck has no program that uses %s: add one to userPrograms", c.module.path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := command(dir, env, "go", "mod", "init", "example.com/user"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(seed), 0o644); err != nil {
		return err
	}
	if _, err := command(dir, env, "go", strings.Fields(c.line)[1:]...); err != nil {
		return err
	}
	got, err := command(dir, env, "go", "list", "-m", "-f", "{{.Version}}", c.module.path)
	if err != nil {
		return err
	}
	if v := strings.TrimSpace(got); v != rel.version {
		return fmt.Errorf("it required %s %s; want %s", c.module.path, v, rel.version)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog.src), 0o644); err != nil {
		return err
	}
	exe := filepath.Join(dir, "user.exe")
	// No go mod tidy: it wants the modules that the tests of dependencies
	// import, which a build never downloads. go get has required every
	// module the program's packages come from.
	for _, args := range [][]string{{"build", "-o", exe, "."}, {"vet", "./..."}} {
		if _, err := command(dir, env, "go", args...); err != nil {
			return err
		}
	}
	out, err := command(dir, nil, exe)
	if err != nil {
		return err
	}
	want := fmt.Sprintf(prog.want, strings.TrimPrefix(rel.version, "v"))
	if strings.TrimSpace(out) != want {
		return fmt.Errorf("the program printed %q; want %q", strings.TrimSpace(out), want)
	}
	fmt.Printf("%s: %s %s; built, vetted and ran a program that uses it (%s)\n", c.line, c.module.path, rel.version, want)
	return nil
}

// checkInstall runs a documented `go install` outside any module, into an
// empty GOBIN, then asks the installed tool its version.
func checkInstall(rel *repo, c installCmd, dir string, env []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// go install pkg@version reads no go.sum: it asks the checksum
	// database, which is not reachable offline. It installs without it,
	// and every module it downloaded is then checked against the go.sum of
	// the module it installed, which is what the database holds.
	// The install has a module cache of its own, so that what it
	// downloaded is all the cache holds.
	modcache := filepath.Join(dir, "modcache")
	env = append(slices.Clone(env), "GOSUMDB=off", "GOMODCACHE="+modcache)
	if _, err := command(dir, env, "go", strings.Fields(c.line)[1:]...); err != nil {
		return err
	}
	var bin string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOBIN="); ok {
			bin = filepath.Join(v, filepath.Base(c.pkg))
		}
	}
	gosum, err := os.ReadFile(filepath.Join(rel.root, filepath.FromSlash(c.module.dir), "go.sum"))
	if err != nil {
		return err
	}
	verified, err := verifyDownloads(filepath.Join(modcache, "cache", "download"), string(gosum))
	if err != nil {
		return fmt.Errorf("%s/go.sum: %w", c.module.dir, err)
	}
	ran := []string{"version"}
	out, err := command(dir, nil, bin, "version")
	if err != nil {
		return err
	}
	if !versionWord(out, rel.version) {
		return fmt.Errorf("`%s version` printed %q; want %s in it", filepath.Base(bin), strings.TrimSpace(out), rel.version)
	}
	// The --version flag, where the tool has one.
	if help, err := command(dir, nil, bin, "--help"); err == nil && strings.Contains(help, "--version") {
		out, err := command(dir, nil, bin, "--version")
		if err != nil {
			return err
		}
		if !versionWord(out, rel.version) {
			return fmt.Errorf("`%s --version` printed %q; want %s in it", filepath.Base(bin), strings.TrimSpace(out), rel.version)
		}
		ran = append(ran, "--version")
	}
	fmt.Printf("%s: %s %s installed into an empty GOBIN (%d downloads match its go.sum); `%s %s` says %s\n", c.line, c.module.path, rel.version,
		verified, filepath.Base(bin), strings.Join(ran, "` and `"+filepath.Base(bin)+" "), rel.version)
	return nil
}

// versionWord reports whether out holds version as a word of its own
// (v0.1.0 is not in v0.1.01 nor in v0.1.0-rc.1).
func versionWord(out, version string) bool {
	return regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(version) + `($|[^\w.+-])`).MatchString(out)
}

// indent prefixes every line of s with prefix.
func indent(prefix, s string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		b.WriteString(prefix + l)
	}
	return b.String()
}
