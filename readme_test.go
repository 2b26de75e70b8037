package management

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docSnippet is one ```go block of a README or a guide.
type docSnippet struct {
	file string // the README or guide, relative to the repository's root
	line int    // the line of the snippet's first line of code
	code string
}

// docFiles are the patterns of the Markdown files whose Go snippets the
// tests build: every README of the repository (the SDK's, and those of the
// companion modules and examples) and every guide under docs/.
var docFiles = []string{"README.md", "*/README.md", "*/*/README.md", "docs/*.md"}

// docSnippets returns the Go snippets of the READMEs and guides.
func docSnippets(t *testing.T) []docSnippet {
	t.Helper()
	var files []string
	for _, pattern := range docFiles {
		names, _ := filepath.Glob(pattern)
		files = append(files, names...)
	}
	var snippets []docSnippet
	for _, file := range files {
		readme, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(readme)
		for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatchIndex(text, -1) {
			snippets = append(snippets, docSnippet{
				file: filepath.ToSlash(file),
				line: strings.Count(text[:m[2]], "\n") + 1,
				code: text[m[2]:m[3]],
			})
		}
	}
	if len(snippets) == 0 {
		t.Fatal("no README or guide has a Go snippet")
	}
	return snippets
}

// TestReadmeSnippetsAreExamples keeps the snippets of the READMEs and
// guides working, not only compiling: each must appear, line for line, in
// code that the test suites run (the examples, readme_examples_test.go and
// docs_examples_test.go of this module and of the companion modules, and the
// programs under examples/).
func TestReadmeSnippetsAreExamples(t *testing.T) {
	var sources []string
	for _, pattern := range []string{"*example*_test.go", "redisstore/*example*_test.go", "otel/*example*_test.go", "grpcauth/*example*_test.go", "examples/*/main.go"} {
		names, _ := filepath.Glob(pattern)
		sources = append(sources, names...)
	}
	var code strings.Builder
	for _, name := range sources {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		code.WriteString(normalizeSpace(string(b)))
	}
	compiled := code.String()
	for _, s := range docSnippets(t) {
		if !strings.Contains(compiled, normalizeSpace(s.code)) {
			t.Errorf("%s:%d: snippet is not in the examples, readme_examples_test.go or docs_examples_test.go:\n%s", s.file, s.line, s.code)
		}
	}
}

func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// snippetImports are the packages a snippet may use without importing
// them, by the name it uses: the wrapper (see docs/README.md, "About the
// snippets") imports those that the snippet names.
var snippetImports = map[string]string{
	"context":        "context",
	"errors":         "errors",
	"fmt":            "fmt",
	"http":           "net/http",
	"httptest":       "net/http/httptest",
	"log":            "log",
	"slog":           "log/slog",
	"os":             "os",
	"regexp":         "regexp",
	"testing":        "testing",
	"synctest":       "testing/synctest",
	"time":           "time",
	"management":     "github.com/serviceconnect/management",
	"managementtest": "github.com/serviceconnect/management/managementtest",
	"redisstore":     "github.com/serviceconnect/management/redisstore",
	"mgmtotel":       "github.com/serviceconnect/management/otel",
	"redis":          "github.com/redis/go-redis/v9",
	"metric":         "go.opentelemetry.io/otel/metric",
	"trace":          "go.opentelemetry.io/otel/trace",
	"io":             "io",
	"propagation":    "go.opentelemetry.io/otel/propagation",
	"resource":       "go.opentelemetry.io/otel/sdk/resource",
	"sdktrace":       "go.opentelemetry.io/otel/sdk/trace",
	"semconv":        "go.opentelemetry.io/otel/semconv/v1.43.0",
	"stdouttrace":    "go.opentelemetry.io/otel/exporters/stdout/stdouttrace",
	"net":            "net",
	"url":            "net/url",
	"grpcauth":       "github.com/serviceconnect/management/grpcauth",
	"grpc":           "google.golang.org/grpc",
	"health":         "google.golang.org/grpc/health",
	"healthgrpc":     "google.golang.org/grpc/health/grpc_health_v1",
	"testgrpc":       "google.golang.org/grpc/interop/grpc_testing",
	"connect":        "connectrpc.com/connect",
	"codes":          "google.golang.org/grpc/codes",
	"metadata":       "google.golang.org/grpc/metadata",
	"status":         "google.golang.org/grpc/status",
	"errdetails":     "google.golang.org/genproto/googleapis/rpc/errdetails",
}

// wrapSnippet makes a Go file of a snippet, as docs/README.md says: a
// snippet of whole declarations is a file of its own, a fragment is the body
// of func example(ctx context.Context); either way the file imports the
// packages of snippetImports that the snippet names. A //line directive
// makes the compiler's messages point into the README or guide.
func wrapSnippet(s docSnippet) (string, error) {
	body := fmt.Sprintf("//line %s:%d\n%s", s.file, s.line, s.code)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", "package snippet\n"+body, parser.SkipObjectResolution)
	if err != nil {
		body = fmt.Sprintf("func example(ctx context.Context) {\n%s}\n", body)
		if f, err = parser.ParseFile(fset, "", "package snippet\n"+body, parser.SkipObjectResolution); err != nil {
			return "", fmt.Errorf("%s:%d: neither declarations nor statements: %v", s.file, s.line, err)
		}
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && snippetImports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var file strings.Builder
	file.WriteString("// Code generated by TestReadmeSnippetsBuild from a README or guide.\n\npackage snippet\n\nimport (\n")
	for _, name := range slices.Sorted(maps.Keys(used)) {
		fmt.Fprintf(&file, "\t%s %q\n", name, snippetImports[name])
	}
	file.WriteString(")\n\n")
	file.WriteString(body)
	return file.String(), nil
}

// TestReadmeSnippetsBuild builds every Go snippet of the READMEs and guides
// as a reader who pastes it would: each in a package of its own, in a fresh
// module that requires this module and its companions (replaced by this
// checkout), with nothing but the wrapper around it. A snippet that uses a
// name it does not define fails here, with the file and line in the
// message. The companions' dependencies come from the module cache or the
// module proxy; without either, the test is skipped (see needModules).
func TestReadmeSnippetsBuild(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	companions := []string{"redisstore", "otel", "grpcauth"}
	for _, dir := range companions {
		if _, err := os.Stat(filepath.Join(root, dir, "go.mod")); err != nil {
			t.Skipf("not a checkout of the repository (%v): the companion modules are needed", err)
		}
	}

	needModules(t, goTool, root, filepath.Join(root, "redisstore"), filepath.Join(root, "otel"))

	dir := t.TempDir()
	for i, s := range docSnippets(t) {
		src, err := wrapSnippet(s)
		if err != nil {
			t.Fatal(err)
		}
		pkg := filepath.Join(dir, fmt.Sprintf("snippet%02d", i+1))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "snippet.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	const module = "github.com/serviceconnect/management"
	var mod, sum strings.Builder
	mod.WriteString("module readme.example/snippets\n\ngo 1.26.0\n\n")
	sums := map[string]bool{}
	for _, sub := range append([]string{""}, companions...) {
		path, local := module, root
		if sub != "" {
			path, local = module+"/"+sub, filepath.Join(root, sub)
		}
		fmt.Fprintf(&mod, "require %s v0.0.0\nreplace %s => %s\n", path, path, local)
		b, err := os.ReadFile(filepath.Join(local, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if !sums[line] {
				sums[line] = true
				sum.WriteString(line)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(sum.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// -mod=mod lets the go command write the indirect requirements that a
	// reader's `go mod tidy` would; every module is already in go.sum. It
	// is added to the flags in force, not put in their place: with other
	// flags (.ci/run's -trimpath), every dependency of every companion
	// would compile again rather than come from the build cache.
	flags, err := exec.Command(goTool, "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v", err)
	}
	cmd := exec.Command(goTool, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(string(flags)+" -mod=mod"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the snippets of the READMEs and guides do not build in a fresh module (%v):\n%s", err, out)
	}
}
