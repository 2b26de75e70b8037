package management

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every goroutine the SDK starts (a go statement, a time.AfterFunc or
// context.AfterFunc) runs hosted code or logs, and so defers a recover
// first thing: a recover of its own or a contain. The goroutines are
// listed here with the test that kills the process when one does not
// recover; a new one fails this test until it is contained and listed.
func TestEveryGoroutineRecovers(t *testing.T) {
	want := map[string]int{
		"startFlight":          2, // the call's goroutine and the abandon timer: TestPanicChild/Logger_panics/{while the flight logs a panic,in the abandon timer}
		"run":                  3, // internal/fleet's store call, its caller's context ending it, and the judgement of one its caller left: TestPanicChild/{shared store panics,Logger_panics/{while a store call logs its panic,in the judgement of a store call its caller left}}
		"Guard.probe":          1, // internal/fleet's breaker probe: TestPanicChild/Logger_panics/in the breaker's probe
		"sharedTokens.token":   1, // the write-back: TestPanicChild/Logger_panics/in the token write-back
		"sharedVerdicts.await": 1, // the lease's unlock: TestPanicChild/Logger_panics/in the verdict lease's unlock
		"list.fetchAhead":      1, // raises in the ranging goroutine: TestPanicChild/{prefetch panics in the ranging goroutine,Logger_panics/in the prefetch}
	}
	got := map[string]int{}
	for _, dir := range []string{".", "managementtest", "internal/fleet"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				where := funcName(fn)
				for _, started := range goroutinesIn(fn.Body) {
					got[where]++
					if !recoversFirst(started) {
						t.Errorf("%s: %s starts a goroutine that does not defer a recover (or a contain) before its first call", name, where)
					}
				}
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("goroutines started, by function (-listed +found): list each with its test:\n%s", diff)
	}
}

// funcName is "Recv.Name" for a method, "Name" for a function.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return "?." + fn.Name.Name
	}
}

// goroutinesIn returns what body starts in goroutines of their own: the
// function of each go statement and each AfterFunc's; nil for one that is
// not a function literal (it cannot be checked).
func goroutinesIn(body *ast.BlockStmt) []*ast.FuncLit {
	var started []*ast.FuncLit
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GoStmt:
			lit, _ := x.Call.Fun.(*ast.FuncLit)
			started = append(started, lit)
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "AfterFunc" && len(x.Args) == 2 {
				lit, _ := x.Args[1].(*ast.FuncLit)
				started = append(started, lit)
			}
		}
		return true
	})
	return started
}

// recoversFirst reports whether lit defers a recover (a function literal
// calling recover, or a contain method) before any statement but other
// defers and plain assignments.
func recoversFirst(lit *ast.FuncLit) bool {
	if lit == nil {
		return false
	}
	for _, stmt := range lit.Body.List {
		switch s := stmt.(type) {
		case *ast.DeferStmt:
			if recovers(s.Call) {
				return true
			}
		case *ast.AssignStmt:
		case *ast.IfStmt: // `if release != nil { defer release() }`
		default:
			return false
		}
	}
	return false
}

// recovers reports whether the deferred call recovers.
func recovers(call *ast.CallExpr) bool {
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		return fun.Sel.Name == "contain" || fun.Sel.Name == "Contain"
	case *ast.FuncLit:
		found := false
		ast.Inspect(fun.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "recover" {
					found = true
				}
			}
			return !found
		})
		return found
	}
	return false
}
