package management

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocCommentsNameNoUnexported holds the doc comments of the exported
// API of every library package of the released modules to what go doc
// shows: none names an unexported identifier of its package (a constant
// such as defaultAuthCacheTTL, whose value go doc would not show), but
// gives the value or describes it. Identifiers that are a plain lower-case
// word ("redact", "lease") read as English and are not checked.
func TestDocCommentsNameNoUnexported(t *testing.T) {
	for _, dir := range []string{".", "managementtest", "otel", "redisstore"} {
		if _, err := os.Stat(dir); err != nil {
			t.Logf("%s: %v (not a checkout of the repository?)", dir, err)
			continue
		}
		for _, p := range unexportedInDocs(t, dir) {
			t.Error(p)
		}
	}
}

// unexportedInDocs returns a line for each doc comment of an exported
// identifier of the package in dir that names an unexported identifier of
// that package.
func unexportedInDocs(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	unexported := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			for _, name := range declNames(d) {
				if !ast.IsExported(name) && strings.ContainsFunc(name, func(r rune) bool { return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_' }) {
					unexported[name] = true
				}
			}
		}
	}

	var problems []string
	word := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	check := func(pos token.Pos, name string, docs ...*ast.CommentGroup) {
		for _, doc := range docs {
			if doc == nil {
				continue
			}
			for _, w := range word.FindAllString(doc.Text(), -1) {
				if unexported[w] {
					problems = append(problems, fset.Position(pos).String()+": the doc of "+name+" names "+w+
						", which go doc does not show: give its value, or say what it is")
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(receiverType(d))) {
					check(d.Pos(), d.Name.Name, d.Doc)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						check(s.Pos(), s.Name.Name, d.Doc, s.Doc)
						var members *ast.FieldList
						switch typ := s.Type.(type) {
						case *ast.StructType:
							members = typ.Fields
						case *ast.InterfaceType:
							members = typ.Methods
						}
						if members == nil {
							continue
						}
						for _, m := range members.List {
							for _, n := range m.Names {
								if n.IsExported() {
									check(n.Pos(), s.Name.Name+"."+n.Name, m.Doc, m.Comment)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								check(n.Pos(), n.Name, d.Doc, s.Doc, s.Comment)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems)
}

// declNames returns the names a top-level declaration declares, methods
// excepted.
func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

// receiverType returns the name of a method's receiver type.
func receiverType(d *ast.FuncDecl) string {
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr: // a generic type: T[K]
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
