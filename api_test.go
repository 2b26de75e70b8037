package management

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The exported API of every library package of the released modules is
// listed in api/, in the manner of the Go project's own api/ directory:
// api/v<Version>.txt is frozen at the release, and api/next.txt lists what
// changed since: a line of its own is an addition, a line starting with "-"
// removes a line of the frozen file (a change is a removal and an addition).
// Beside the go command's api format, a struct or array type that == can
// compare has a line "type T struct, comparable" of its own, so that a
// type that stops being comparable is a removed line like any other.
// The API must be exactly the frozen lines without the removed ones plus the
// added ones, and CHANGELOG.md's "Unreleased" section must name every
// identifier whose line next.txt removes. When this test fails it prints the
// lines to add to or remove from api/next.txt. The released modules'
// dependencies come from the module cache or the module proxy; without
// either, the test is skipped (see needModules).
func TestAPIListing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the export data of every released module: skipped with -short")
	}
	root := checkoutRoot(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is needed to list the API: %v", err)
	}
	var dirs []string
	for _, dir := range releasedModules(t, root) {
		dirs = append(dirs, filepath.Join(root, dir))
	}
	needModules(t, goTool, dirs...)
	var got []string
	for _, dir := range dirs {
		got = append(got, moduleAPI(t, dir)...)
	}
	slices.Sort(got)
	got = slices.Compact(got)

	frozen := readAPIFile(t, filepath.Join(root, "api", "v"+Version+".txt"))
	next := readAPIFile(t, filepath.Join(root, "api", "next.txt"))
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, problems := applyNext(frozen, next, unreleasedSection(string(changelog)))
	for _, p := range problems {
		t.Error(p)
	}

	var extra, missing []string
	for _, l := range got {
		if !slices.Contains(want, l) {
			extra = append(extra, l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			missing = append(missing, l)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the API has lines neither api/v%s.txt nor api/next.txt lists; add them to api/next.txt:\n%s",
			Version, strings.Join(extra, "\n"))
	}
	if len(missing) > 0 {
		t.Errorf("the API lacks lines that api/v%s.txt or api/next.txt list; remove them from api/next.txt, or list them there with a leading \"-\" and name them in CHANGELOG.md's Unreleased section:\n%s",
			Version, strings.Join(missing, "\n"))
	}
}

// readAPIFile returns the lines of an api/ file, without blank lines and
// "#" comments.
func readAPIFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// applyNext returns the API that frozen and next describe, sorted, and what
// is wrong with next: a removal of a line frozen does not hold, or of an
// identifier that unreleased (CHANGELOG.md's section) does not name.
func applyNext(frozen, next []string, unreleased string) (api, problems []string) {
	removed := map[string]bool{}
	var added []string
	for _, l := range next {
		if r, ok := strings.CutPrefix(l, "-"); ok {
			r = strings.TrimSpace(r)
			if !slices.Contains(frozen, r) {
				problems = append(problems, fmt.Sprintf("api/next.txt removes %q, which the frozen listing does not hold", r))
			}
			if id := apiIdentifier(r); !strings.Contains(unreleased, id) {
				problems = append(problems, fmt.Sprintf("api/next.txt removes or changes %q, and CHANGELOG.md's Unreleased section does not mention %s", r, id))
			}
			removed[r] = true
			continue
		}
		added = append(added, l)
	}
	for _, l := range frozen {
		if !removed[l] {
			api = append(api, l)
		}
	}
	api = append(api, added...)
	slices.Sort(api)
	return slices.Compact(api), problems
}

// apiIdentifier returns the identifier a listing line is about, as a reader
// would name it: "Client.Users" for a field or method, "NewClient" for a
// package-level name.
func apiIdentifier(line string) string {
	_, decl, _ := strings.Cut(line, ", ")
	kind, rest, _ := strings.Cut(decl, " ")
	name := func(s string) string {
		if i := strings.IndexAny(s, " =[("); i >= 0 {
			return s[:i]
		}
		return s
	}
	switch kind {
	case "method": // method (*Client) Do(...) ...
		recv, m, _ := strings.Cut(strings.TrimPrefix(rest, "("), ") ")
		return strings.TrimPrefix(name(recv), "*") + "." + name(m)
	case "type": // type Config struct, BaseURL string
		typ := name(rest)
		if strings.HasSuffix(rest, ", comparable") { // type Store struct, comparable
			return typ
		}
		if head, member, ok := strings.Cut(rest, ", "); ok && !strings.Contains(head, "{") {
			member = strings.TrimPrefix(member, "embedded ")
			return typ + "." + name(strings.TrimLeft(member, "*"))
		}
		return typ
	default: // const, var, func
		return name(rest)
	}
}

// moduleAPI returns the listing lines of every library package (neither a
// command nor internal) of the module in dir.
func moduleAPI(t *testing.T, dir string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is needed to list the API: %v", err)
	}
	goList := func(args ...string) [][]string {
		cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
		}
		var rows [][]string
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			rows = append(rows, strings.Split(sc.Text(), "\t"))
		}
		return rows
	}
	var libs []string
	for _, f := range goList("-f", "{{.ImportPath}}\t{{.Name}}\t{{len .GoFiles}}", "./...") {
		// A directory of tests alone (examples/nginx) is no package to import.
		if len(f) == 3 && f[1] != "main" && f[2] != "0" && !slices.Contains(strings.Split(f[0], "/"), "internal") {
			libs = append(libs, f[0])
		}
	}
	if len(libs) == 0 {
		return nil // a command's module
	}
	exports := map[string]string{}
	for _, f := range goList(append([]string{"-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, libs...)...) {
		if len(f) == 2 {
			exports[f[0]] = f[1]
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, path := range libs {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		lines = append(lines, packageAPI(pkg)...)
	}
	return lines
}

// packageAPI returns the listing lines of pkg's exported API.
func packageAPI(pkg *types.Package) []string {
	p := apiPrinter{pkg: pkg}
	prefix := "pkg " + pkg.Path() + ", "
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s", name, p.typ(obj.Type()))
		case *types.Var:
			add("var %s %s", name, p.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			add("func %s%s%s", name, p.typeParams(sig.TypeParams()), p.signature(sig))
		case *types.TypeName:
			lines = append(lines, p.typeName(prefix, obj)...)
		}
	}
	return lines
}

// apiPrinter writes types as the listing shows them: names of other
// packages qualified by the package's name, parameters without their names.
type apiPrinter struct{ pkg *types.Package }

func (p apiPrinter) qualifier(other *types.Package) string {
	if other == p.pkg {
		return ""
	}
	return other.Name()
}

func (p apiPrinter) typeName(prefix string, obj *types.TypeName) []string {
	name := obj.Name()
	if obj.IsAlias() {
		return []string{prefix + "type " + name + " = " + p.typ(types.Unalias(obj.Type()))}
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return []string{prefix + "type " + name + " " + p.typ(obj.Type())}
	}
	head := prefix + "type " + name + p.typeParams(named.TypeParams())
	var lines []string
	switch u := named.Underlying().(type) {
	case *types.Struct:
		lines = append(lines, head+" struct")
		lines = append(lines, p.fields(head, u)...)
		lines = append(lines, comparableLine(head+" struct", named)...)
	case *types.Interface:
		var names []string
		unexported := false
		for m := range u.Methods() {
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			lines = append(lines, head+" interface, "+m.Name()+p.signature(m.Type().(*types.Signature)))
		}
		if unexported {
			names = append(names, "unexported methods")
		}
		lines = append(lines, head+" interface { "+strings.Join(names, ", ")+" }")
	case *types.Array:
		lines = append(lines, head+" "+p.typ(u))
		lines = append(lines, comparableLine(head+" "+p.typ(u), named)...)
	default:
		lines = append(lines, head+" "+p.typ(u))
	}
	for m := range named.Methods() {
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := p.typ(sig.Recv().Type())
		lines = append(lines, prefix+"method ("+recv+") "+m.Name()+p.signature(sig))
	}
	// Methods promoted from an unexported embedded type are the type's own
	// to its users, as the go command's api checker counts them.
	values := types.NewMethodSet(named)
	pointers := types.NewMethodSet(types.NewPointer(named))
	for sel := range pointers.Methods() {
		m := sel.Obj().(*types.Func)
		st, ok := named.Underlying().(*types.Struct)
		if len(sel.Index()) == 1 || !m.Exported() || !ok || st.Field(sel.Index()[0]).Exported() {
			continue // its own, unexported, or listed with the exported type it came from
		}
		recv := "*" + name
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		lines = append(lines, prefix+"method ("+recv+") "+m.Name()+p.signature(m.Type().(*types.Signature)))
	}
	return lines
}

// comparableLine is the line that says a struct or array type is
// comparable with ==, after its own line decl, or nothing when it is not.
// Its fields (its elements) decide, unexported ones too, and a user's code
// may rely on it (a map key, a == test): losing it breaks that code, as
// removing a field does, which the go command's api checker does not see.
func comparableLine(decl string, t *types.Named) []string {
	if !types.Comparable(t) {
		return nil
	}
	return []string{decl + ", comparable"}
}

// fields lists a struct's exported fields; those of an unexported embedded
// struct are listed as the outer struct's, since its users reach them so.
func (p apiPrinter) fields(head string, u *types.Struct) []string {
	var lines []string
	for f := range u.Fields() {
		switch {
		case f.Embedded() && f.Exported():
			lines = append(lines, head+" struct, embedded "+p.typ(f.Type()))
		case f.Embedded():
			if inner, ok := types.Unalias(derefType(f.Type())).Underlying().(*types.Struct); ok {
				lines = append(lines, p.fields(head, inner)...)
			}
		case f.Exported():
			lines = append(lines, head+" struct, "+f.Name()+" "+p.typ(f.Type()))
		}
	}
	return lines
}

// derefType is t, or what t points to.
func derefType(t types.Type) types.Type {
	if ptr, ok := t.(*types.Pointer); ok {
		return ptr.Elem()
	}
	return t
}

func (p apiPrinter) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	var s []string
	for tp := range tps.TypeParams() {
		s = append(s, tp.Obj().Name()+" "+p.typ(tp.Constraint()))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// signature writes sig's parameters and results, without the names.
func (p apiPrinter) signature(sig *types.Signature) string {
	var params []string
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			params = append(params, "..."+p.typ(t.(*types.Slice).Elem()))
			continue
		}
		params = append(params, p.typ(t))
	}
	s := "(" + strings.Join(params, ", ") + ")"
	var results []string
	for v := range sig.Results().Variables() {
		results = append(results, p.typ(v.Type()))
	}
	switch len(results) {
	case 0:
		return s
	case 1:
		return s + " " + results[0]
	}
	return s + " (" + strings.Join(results, ", ") + ")"
}

// typ writes t; func types inside it lose their parameters' names too.
func (p apiPrinter) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + p.signature(t)
	case *types.Pointer:
		return "*" + p.typ(t.Elem())
	case *types.Slice:
		return "[]" + p.typ(t.Elem())
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), p.typ(t.Elem()))
	case *types.Map:
		return "map[" + p.typ(t.Key()) + "]" + p.typ(t.Elem())
	case *types.Chan:
		prefix := map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()]
		return prefix + p.typ(t.Elem())
	case *types.Named:
		s := types.TypeString(t.Origin(), p.qualifier)
		if args := t.TypeArgs(); args.Len() > 0 {
			s, _, _ = strings.Cut(s, "[")
			var a []string
			for arg := range args.Types() {
				a = append(a, p.typ(arg))
			}
			s += "[" + strings.Join(a, ", ") + "]"
		}
		return s
	case *types.Struct:
		var fields []string
		for f := range t.Fields() {
			if f.Embedded() {
				fields = append(fields, p.typ(f.Type()))
			} else {
				fields = append(fields, f.Name()+" "+p.typ(f.Type()))
			}
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	case *types.Interface:
		if t.Empty() {
			return "any"
		}
		var elems []string
		for m := range t.ExplicitMethods() {
			elems = append(elems, m.Name()+p.signature(m.Type().(*types.Signature)))
		}
		for e := range t.EmbeddedTypes() {
			elems = append(elems, p.typ(e))
		}
		return "interface{" + strings.Join(elems, "; ") + "}"
	case *types.Union:
		var terms []string
		for i := range t.Len() {
			term := t.Term(i)
			s := p.typ(term.Type())
			if term.Tilde() {
				s = "~" + s
			}
			terms = append(terms, s)
		}
		return strings.Join(terms, " | ")
	}
	return types.TypeString(t, p.qualifier)
}

func TestApplyNext(t *testing.T) {
	frozen := []string{
		"pkg m, func Old() error",
		"pkg m, type Config struct, Name string",
	}
	next := []string{
		"pkg m, func New() error",
		"-pkg m, type Config struct, Name string",
		"pkg m, type Config struct, Name []string",
	}
	api, problems := applyNext(frozen, next, "\n- `Config.Name` holds several names.\n")
	want := []string{"pkg m, func New() error", "pkg m, func Old() error", "pkg m, type Config struct, Name []string"}
	if !slices.Equal(api, want) || len(problems) != 0 {
		t.Errorf("applyNext = %q, %q; want %q and no problem", api, problems, want)
	}

	_, problems = applyNext(frozen, next, "\n- Nothing about it.\n")
	if len(problems) != 1 || !strings.Contains(problems[0], "does not mention Config.Name") {
		t.Errorf("a change the changelog does not mention: problems %q; want one naming Config.Name", problems)
	}
	_, problems = applyNext(frozen, []string{"-pkg m, func Gone()"}, "Gone")
	if len(problems) != 1 || !strings.Contains(problems[0], "does not hold") {
		t.Errorf("removing a line that was never frozen: problems %q; want one", problems)
	}
}

func TestAPIIdentifier(t *testing.T) {
	for line, want := range map[string]string{
		"pkg m, func NewClient(Config) (*Client, error)":             "NewClient",
		"pkg m, func Ptr[T any](T) *T":                               "Ptr",
		"pkg m, const Version untyped string":                        "Version",
		"pkg m, var ErrNotFound error":                               "ErrNotFound",
		"pkg m, method (*Client) String() string":                    "Client.String",
		"pkg m, method (Timestamp) Time() time.Time":                 "Timestamp.Time",
		"pkg m, type Config struct":                                  "Config",
		"pkg m, type Config struct, BaseURL string":                  "Config.BaseURL",
		"pkg m, type Thing struct, embedded *Inner":                  "Thing.Inner",
		"pkg m, type SharedStore interface, Get(context.Context)":    "SharedStore.Get",
		"pkg m, type Page[T any] struct, Items []T":                  "Page.Items",
		"pkg m, type OrderBy string":                                 "OrderBy",
		"pkg m, type Alias = int":                                    "Alias",
		"pkg m, type SharedStore interface { Get, TryLock, Unlock }": "SharedStore",
		"pkg m, type Store struct, comparable":                       "Store",
		"pkg m, type Grid [2]Cell, comparable":                       "Grid",
	} {
		if got := apiIdentifier(line); got != want {
			t.Errorf("apiIdentifier(%q) = %q; want %q", line, got, want)
		}
	}
}

// TestPackageAPIComparable: a struct or array type that == can compare
// has a "comparable" line of its own, so that losing it (a func, map or
// slice field added) is a line the API lacks, which api/next.txt must
// remove and CHANGELOG.md name, as for any breaking change.
func TestPackageAPIComparable(t *testing.T) {
	const src = `package m

type Plain struct {
	Name string
	p    *int
}
type WithFunc struct{ f func() }
type Grid [2]Plain
type Funcs [1]WithFunc
type Page[T any] struct{ Items []T }
type Box[T comparable] struct{ V T }
type Name string
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "m.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := new(types.Config).Check("m", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range packageAPI(pkg) {
		if strings.HasSuffix(l, ", comparable") {
			got = append(got, l)
		}
	}
	want := []string{
		"pkg m, type Box[T comparable] struct, comparable",
		"pkg m, type Grid [2]Plain, comparable",
		"pkg m, type Plain struct, comparable",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("comparable lines (-want +got):\n%s", diff)
	}
}
