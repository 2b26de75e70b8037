package peers

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/benchmark/peers/peerapi"
)

// The SDK column's code for each task: what its user writes.

func sdkSetup(baseURL string, hc *http.Client) (*management.Client, error) {
	return management.NewClient(management.Config{
		BaseURL: baseURL, ClientID: clientID, ClientSecret: clientSecret, HTTPClient: hc,
	})
}

func sdkGetUser(ctx context.Context, c *management.Client, id string) (*management.UserDetails, error) {
	return c.Users.Get(ctx, id)
}

func sdkListUsers(ctx context.Context, c *management.Client, fn func(*management.User)) error {
	for u, err := range c.Users.List(ctx, nil) {
		if err != nil {
			return err
		}
		fn(u)
	}
	return nil
}

func sdkAuthenticate(ctx context.Context, c *management.Client, header string) (*management.EndUserAuthentication, error) {
	return c.Authenticate(ctx, header)
}

// tasks names, for each task and column, the declarations its user
// writes: functions ("T.m" for methods) and types. The generated column's
// models are generated, not written; the raw column's are written.
var tasks = []struct {
	task                string
	sdk, generated, raw []string
}{
	{"set up a client that fetches its token",
		[]string{"sdkSetup"},
		[]string{"jsonGrant", "jsonGrant.RoundTrip", "generated", "generatedSetup"},
		[]string{"rawClient", "rawSetup", "rawClient.token", "rawClient.do", "rawClient.send"}},
	{"read a User, a 404 as an error",
		[]string{"sdkGetUser"},
		[]string{"generated.getUser"},
		[]string{"rawUser", "rawUserDetails", "rawConsent", "rawThing", "rawClient.getUser"}},
	{"range over every User",
		[]string{"sdkListUsers"},
		[]string{"generated.listUsers"},
		[]string{"rawClient.listUsers"}},
	{"check an End User token",
		[]string{"sdkAuthenticate"},
		[]string{"generated.authenticate"},
		[]string{"rawAuthentication", "rawClient.authenticate"}},
}

// taskLines is the lines of code, not counting blank and comment lines, of
// each task in each column, as "How it compares" in docs/performance.md
// gives them.
var taskLines = map[string][3]int{
	"set up a client that fetches its token": {5, 41, 73},
	"read a User, a 404 as an error":         {3, 10, 39},
	"range over every User":                  {9, 24, 19},
	"check an End User token":                {3, 10, 16},
}

// TestTasks runs every column's code for each task, and counts its lines.
func TestTasks(t *testing.T) {
	s := newServer(t, 250, time.Hour)
	ctx := context.Background()
	sdk, err := sdkSetup(s.URL, &http.Client{Transport: newTransport(t, 4)})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := generatedSetup(s.URL, jsonGrant{newTransport(t, 4)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawSetup(s.URL, newTransport(t, 4))

	var n [3]int
	if err := sdkListUsers(ctx, sdk, func(*management.User) { n[0]++ }); err != nil {
		t.Error(err)
	}
	if err := gen.listUsers(ctx, func(*peerapi.User) { n[1]++ }); err != nil {
		t.Error(err)
	}
	if err := raw.listUsers(ctx, func(*rawUser) { n[2]++ }); err != nil {
		t.Error(err)
	}
	if n != [3]int{250, 250, 250} {
		t.Errorf("ranged over %v Users, want 250 in each column", n)
	}
	if _, err := sdkGetUser(ctx, sdk, "usr-missing"); err == nil {
		t.Error("sdkGetUser: no error for a missing User")
	}
	if _, err := gen.getUser(ctx, "usr-missing"); err == nil {
		t.Error("generated.getUser: no error for a missing User")
	}
	if _, err := raw.getUser(ctx, "usr-missing"); err == nil {
		t.Error("rawClient.getUser: no error for a missing User")
	}
	if a, err := sdkAuthenticate(ctx, sdk, endUserHeader); err != nil || !a.Valid {
		t.Errorf("sdkAuthenticate: %+v, %v", a, err)
	}
	if a, err := gen.authenticate(ctx, endUserHeader); err != nil || !a.IsTokenValid {
		t.Errorf("generated.authenticate: %+v, %v", a, err)
	}
	if a, err := raw.authenticate(ctx, endUserHeader); err != nil || !a.Valid {
		t.Errorf("rawClient.authenticate: %+v, %v", a, err)
	}

	lines := declLines(t, "clients_test.go", "tasks_test.go")
	for _, task := range tasks {
		var got [3]int
		for i, decls := range [][]string{task.sdk, task.generated, task.raw} {
			for _, d := range decls {
				n, ok := lines[d]
				if !ok {
					t.Fatalf("task %q: no declaration %s", task.task, d)
				}
				got[i] += n
			}
		}
		if got != taskLines[task.task] {
			t.Errorf("task %q: %v lines (SDK, generated, raw), taskLines says %v", task.task, got, taskLines[task.task])
		}
	}
}

// declLines counts the lines of every function and type declared in files,
// leaving out blank lines and lines that hold only a comment.
func declLines(t *testing.T, files ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		count := func(from, to token.Pos) int {
			n := 0
			for _, l := range lines[fset.Position(from).Line-1 : fset.Position(to).Line] {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
					n++
				}
			}
			return n
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				key := d.Name.Name
				if d.Recv != nil {
					typ := d.Recv.List[0].Type
					if star, ok := typ.(*ast.StarExpr); ok {
						typ = star.X
					}
					key = typ.(*ast.Ident).Name + "." + key
				}
				out[key] = count(d.Pos(), d.End())
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						out[ts.Name.Name] = count(ts.Pos(), ts.End())
					}
				}
			}
		}
	}
	return out
}

// TestReadmeComparesAsProbed holds the behaviour and task tables of "How
// it compares" in docs/performance.md to what the probes and TestTasks
// observe: each row must appear there as it is written here.
func TestReadmeComparesAsProbed(t *testing.T) {
	guide, err := os.ReadFile("../../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(guide), "\n## How it compares\n")
	if !ok {
		t.Fatal(`docs/performance.md has no "## How it compares" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var want []string
	for _, p := range probes {
		want = append(want, fmt.Sprintf("| %s | %s | %s | %s |", p.row, p.want.sdk, p.want.generated, p.want.raw))
	}
	for _, task := range tasks {
		n := taskLines[task.task]
		want = append(want, fmt.Sprintf("| %s | %d | %d | %d |", task.task, n[0], n[1], n[2]))
	}
	for _, row := range want {
		if !strings.Contains(section, "\n"+row+"\n") {
			t.Errorf("How it compares in docs/performance.md lacks the row\n%s", row)
		}
	}
}
