package management_test

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestDefaultsTable holds docs/defaults.md to the code: every row's value
// is the code's (management.DocumentedDefaults, the fake's and redisstore's
// exported constants), every value the code lists has its row, and the doc
// comment of each field the table names states the same value.
func TestDefaultsTable(t *testing.T) {
	table := defaultsTable(t, filepath.Join("docs", "defaults.md"))

	want := map[string]string{}
	for name, v := range management.DocumentedDefaults() {
		want[name] = fmt.Sprint(v)
	}
	fake := managementtest.NewInMemoryServer()
	defer fake.Close()
	cfg := fake.Config()
	want["managementtest.DefaultTokenLifetime"] = managementtest.DefaultTokenLifetime.String()
	want["managementtest.DefaultPageSize"] = strconv.Itoa(managementtest.DefaultPageSize)
	want["the fake's Client, RetryWaitMin"] = cfg.RetryWaitMin.String()
	want["the fake's Client, RetryWaitMax"] = cfg.RetryWaitMax.String()
	want["redisstore.DefaultPrefix"] = stringConst(t, filepath.Join("redisstore", "store.go"), "DefaultPrefix")
	want["the Recorder's body bound"] = management.Bytes(intConst(t, filepath.Join("managementtest", "record.go"), "maxRecordedBody")).String()

	for name, w := range want {
		got, ok := table[name]
		switch {
		case !ok:
			t.Errorf("docs/defaults.md has no row %q; the code's value is `%s`", name, w)
		case got != w:
			t.Errorf("docs/defaults.md gives %q as `%s`; the code's value is `%s`", name, got, w)
		}
	}
	for name := range table {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/defaults.md has a row %q that TestDefaultsTable does not know: add its value to management.DocumentedDefaults (export_test.go) or to this test", name)
		}
	}

	docs := fieldDocs(t, ".")
	for name, value := range table {
		if doc, ok := docs[name]; ok && !strings.Contains(doc, value) {
			t.Errorf("the doc comment of %s does not say %q, its value in docs/defaults.md:\n%s", name, value, doc)
		}
	}
}

// defaultsTable returns the rows of the tables of the Markdown file at
// path whose second column opens with a value in backquotes: the first
// column without its backquotes, and that value.
func defaultsTable(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([^`]+)`[^|]* \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		name := strings.ReplaceAll(m[1], "`", "")
		if _, dup := rows[name]; dup {
			t.Errorf("%s: two rows named %q", path, name)
		}
		rows[name] = m[2]
	}
	if len(rows) < 20 {
		t.Fatalf("%s: found %d rows, want every default; is the table where the test looks?", path, len(rows))
	}
	return rows
}

// fieldDocs returns the doc comments of the fields of the exported structs
// of the package in dir, by "Type.Field".
func fieldDocs(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok || !spec.Name.IsExported() {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				for _, id := range field.Names {
					docs[spec.Name.Name+"."+id.Name] = field.Doc.Text() + field.Comment.Text()
				}
			}
			return false
		})
	}
	return docs
}

// stringConst returns the value of the string constant name declared in
// the Go file at path, which belongs to another module of the repository.
func stringConst(t *testing.T, path, name string) string {
	t.Helper()
	v := constValue(t, path, name)
	if v.Kind() != constant.String {
		t.Fatalf("%s: the constant %s is not a string", path, name)
	}
	return constant.StringVal(v)
}

// intConst returns the value of the integer constant name declared in the
// Go file at path (unexported, in another package), however its value is
// written (32 << 20).
func intConst(t *testing.T, path, name string) int64 {
	t.Helper()
	v, ok := constant.Int64Val(constValue(t, path, name))
	if !ok {
		t.Fatalf("%s: the constant %s is not an int64", path, name)
	}
	return v
}

// constValue returns the value of the constant name declared in the Go
// file at path, as an untyped constant expression of literals.
func constValue(t *testing.T, path, name string) constant.Value {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if id.Name != name || i >= len(vs.Values) {
					continue
				}
				tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(vs.Values[i]))
				if err != nil || tv.Value == nil {
					t.Fatalf("%s: the value of %s is no constant of literals: %v", path, name, err)
				}
				return tv.Value
			}
		}
	}
	t.Fatalf("%s declares no constant %s", path, name)
	return nil
}
