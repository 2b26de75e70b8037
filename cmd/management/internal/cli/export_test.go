package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// onListRequest is a transport that calls hook before the n-th request
// of a list of Users (1-based), then passes every request on.
type onListRequest struct {
	next  http.RoundTripper
	n     int64
	count atomic.Int64
	hook  func()
}

func (o *onListRequest) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/users") && o.count.Add(1) == o.n {
		o.hook()
	}
	return o.next.RoundTrip(req)
}

// exportedIDs reads an export of Users in format f and returns the ids,
// in order.
func exportedIDs(t *testing.T, path string, f format) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	switch f {
	case formatJSONL:
		for _, line := range lines(string(data)) {
			var u management.User
			if err := json.Unmarshal([]byte(line), &u); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			ids = append(ids, u.ID)
		}
	case formatJSON:
		var users []management.User
		if err := json.Unmarshal(data, &users); err != nil {
			t.Fatalf("%s is not a JSON array of Users: %v", path, err)
		}
		for _, u := range users {
			ids = append(ids, u.ID)
		}
	case formatCSV:
		rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || !slices.Equal(rows[0], []string{"id", "email", "first_name", "last_name", "created_at", "updated_at"}) {
			t.Fatalf("the CSV does not start with its header: %q", rows)
		}
		for _, row := range rows[1:] {
			ids = append(ids, row[0])
		}
	}
	return ids
}

// wantAll checks that ids are the n seeded Users, each once, in the
// default order (newest first).
func wantAll(t *testing.T, ids []string, n int) {
	t.Helper()
	if len(ids) != n {
		t.Errorf("%d Users exported, want %d", len(ids), n)
	}
	for i, id := range ids {
		if want := userID(n - 1 - i); id != want {
			t.Fatalf("User %d is %s, want %s (a gap or a duplicate)", i, id, want)
		}
	}
}

func readCheckpoint(t *testing.T, path string) checkpoint {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestExportFormats exports to a file in each format, without and with a
// checkpoint.
func TestExportFormats(t *testing.T) {
	const n = 250
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(100))
	seedUsers(srv, n)
	e := useServer(t, srv)
	for _, f := range []format{formatJSONL, formatJSON, formatCSV} {
		for _, ckpt := range []bool{false, true} {
			dir := t.TempDir()
			out := filepath.Join(dir, "users."+string(f))
			args := []string{"users", "export", "-o", string(f), "--out", out}
			if ckpt {
				args = append(args, "--checkpoint", filepath.Join(dir, "ckpt"))
			}
			r := e.run(t, args...)
			if r.code != ExitOK || r.stdout != "" || !strings.HasPrefix(r.stderr, "Exported 250 Users to "+out+" in ") {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
			}
			wantAll(t, exportedIDs(t, out, f), n)
		}
	}
}

// TestExportToStdout streams to standard output; the summary goes to
// standard error.
func TestExportToStdout(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(100))
	seedUsers(srv, 150)
	r := useServer(t, srv).run(t, "users", "export", "-o", "csv")
	if r.code != ExitOK || len(lines(r.stdout)) != 151 || !strings.HasPrefix(r.stderr, "Exported 150 Users to standard output") {
		t.Errorf("exit %d, %d lines, stderr %q", r.code, len(lines(r.stdout)), r.stderr)
	}
}

// TestExportResumesAfterFailure: the service fails mid-export, more
// times than the client retries; the export exits 1 with a checkpoint
// after the last page written, and the same command completes it with
// no gap and no duplicate, in every format.
func TestExportResumesAfterFailure(t *testing.T) {
	const n, pageSize, failAt = 1000, 100, 4
	for _, f := range []format{formatJSONL, formatJSON, formatCSV} {
		t.Run(string(f), func(t *testing.T) {
			srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(pageSize))
			seedUsers(srv, n)
			e := useServer(t, srv)
			t.Setenv(management.EnvMaxRetries, "2")
			e.httpClient = &http.Client{Transport: &onListRequest{next: e.httpClient.Transport, n: failAt, hook: func() {
				srv.FailNext(managementtest.RouteListUsers, 3, http.StatusInternalServerError, 0)
			}}}
			dir := t.TempDir()
			out, ckpt := filepath.Join(dir, "users"), filepath.Join(dir, "ckpt")
			args := []string{"users", "export", "-o", string(f), "--out", out, "--checkpoint", ckpt}

			r := e.run(t, args...)
			wantErr := "management: GET /users: 500 MANAGEMENTTEST.INJECTED_FAULT: managementtest: injected failure; 300 Users exported (300 in this run): run the same command to resume\n"
			if r.code != ExitFailure || r.stderr != wantErr {
				t.Fatalf("exit %d, stderr %q; want %d, %q", r.code, r.stderr, ExitFailure, wantErr)
			}
			c := readCheckpoint(t, ckpt)
			info, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if c.Count != (failAt-1)*pageSize || c.Done || c.NextPage == "" || c.Offset != info.Size() {
				t.Fatalf("checkpoint %+v after the failure; the output is %d bytes", c, info.Size())
			}

			r = e.run(t, args...)
			if r.code != ExitOK || !strings.HasPrefix(r.stderr, "Exported 1000 Users to "+out+": 700 in this run") {
				t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
			}
			wantAll(t, exportedIDs(t, out, f), n)
			if c := readCheckpoint(t, ckpt); !c.Done || c.Count != n {
				t.Errorf("checkpoint %+v at the end", c)
			}
		})
	}
}

// failedExport seeds n Users, in pages of 100, and runs an export with a
// checkpoint that fails at its third page (a 503, not retried): it returns
// how to run the tool again, the export's arguments, and its output and
// checkpoint, which record two pages.
func failedExport(t *testing.T, n int) (e env, args []string, out, ckpt string) {
	t.Helper()
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(100))
	seedUsers(srv, n)
	e = useServer(t, srv)
	t.Setenv(management.EnvMaxRetries, "-1")
	e.httpClient = &http.Client{Transport: &onListRequest{next: e.httpClient.Transport, n: 3, hook: func() {
		srv.FailNext(managementtest.RouteListUsers, 1, http.StatusServiceUnavailable, 0)
	}}}
	dir := t.TempDir()
	out, ckpt = filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
	args = []string{"users", "export", "--out", out, "--checkpoint", ckpt}
	if r := e.run(t, args...); r.code != ExitFailure {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	return e, args, out, ckpt
}

// TestExportResumeTruncates: what was written after the last checkpoint
// (a page whose checkpoint was not saved, half a line) is dropped on
// resume, not kept as a duplicate.
func TestExportResumeTruncates(t *testing.T) {
	const n = 500
	e, args, out, _ := failedExport(t, n)
	// As if the next page had been written, and half of one more, when the
	// process was killed before it could save its checkpoint.
	file, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteString(`{"id":"u-00299","email":"u-00299@example.com"}` + "\n" + `{"id":"u-002`)
	file.Close()

	if r := e.run(t, args...); r.code != ExitOK {
		t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
	}
	wantAll(t, exportedIDs(t, out, formatJSONL), n)
}

// TestExportInterrupted: a cancelled export (Ctrl-C) stops after the page
// it was writing, says how to resume, and resumes.
func TestExportInterrupted(t *testing.T) {
	const n = 600
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(100))
	seedUsers(srv, n)
	e := useServer(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	e.ctx = ctx
	next := e.httpClient.Transport
	e.httpClient = &http.Client{Transport: &onListRequest{next: next, n: 4, hook: cancel}}
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}

	r := e.run(t, args...)
	if want := "management: interrupted after 300 Users (300 in all): run the same command to resume\n"; r.code != ExitInterrupt || r.stderr != want {
		t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	e.ctx, e.httpClient = nil, &http.Client{Transport: next}
	if r := e.run(t, args...); r.code != ExitOK {
		t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
	}
	wantAll(t, exportedIDs(t, out, formatJSONL), n)
}

// TestExportRefusedLink: when the service no longer accepts the link the
// checkpoint holds, the export says so and how to start over.
func TestExportRefusedLink(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(100))
	seedUsers(srv, 300)
	e := useServer(t, srv)
	t.Setenv(management.EnvMaxRetries, "-1")
	next := e.httpClient.Transport
	e.httpClient = &http.Client{Transport: &onListRequest{next: next, n: 2, hook: func() {
		srv.FailNext(managementtest.RouteListUsers, 1, http.StatusBadGateway, 0)
	}}}
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}
	if r := e.run(t, args...); r.code != ExitFailure {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	srv.ForgetPages()
	e.httpClient = &http.Client{Transport: next}
	r := e.run(t, args...)
	want := "management: the service refused the page link " + ckpt + " holds (GET /users: 400 COMMON.REQUEST_VALIDATION: "
	wantEnd := "): this export cannot be resumed; start over with --force\n"
	if r.code != ExitFailure || !strings.HasPrefix(r.stderr, want) || !strings.HasSuffix(r.stderr, wantEnd) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r := e.run(t, append(args, "--force")...); r.code != ExitOK {
		t.Fatalf("with --force: exit %d, stderr %q", r.code, r.stderr)
	}
	wantAll(t, exportedIDs(t, out, formatJSONL), 300)
}

// TestExportComplete: once complete, the same command leaves the output
// alone and says how to export again.
func TestExportComplete(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	seedUsers(srv, 3)
	e := useServer(t, srv)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}
	if r := e.run(t, args...); r.code != ExitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	before, _ := os.ReadFile(out)
	seedUsers(srv, 0)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-later"}})
	r := e.run(t, args...)
	if want := "The export is already complete: 3 Users in " + out + ", as " + ckpt + " records. Give --force to export again.\n"; r.code != ExitOK || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Errorf("the output changed:\n%s\nwas:\n%s", after, before)
	}
}

// TestExportFileModes: the checkpoint (it holds a page link) and the
// output (personal data) are readable by their owner only.
func TestExportFileModes(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(2))
	seedUsers(srv, 5)
	e := useServer(t, srv)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "ckpt")
	// A stale temporary file with a wide mode must not pass its mode on.
	if err := os.WriteFile(ckpt+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.run(t, "users", "export", "--out", out, "--checkpoint", ckpt); r.code != ExitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, path := range []string{out, ckpt} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(path), mode)
		}
	}
	if _, err := os.Stat(ckpt + ".tmp"); err == nil {
		t.Errorf("the temporary checkpoint file was left behind")
	}
}

// TestExportAnotherExport: a checkpoint of another export is not resumed
// with different flags.
func TestExportAnotherExport(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(2))
	seedUsers(srv, 5)
	e := useServer(t, srv)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users"), filepath.Join(dir, "ckpt")
	if r := e.run(t, "users", "export", "--out", out, "--checkpoint", ckpt); r.code != ExitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"users", "export", "--out", out, "--checkpoint", ckpt, "-o", "csv"},
		{"users", "export", "--out", out + ".2", "--checkpoint", ckpt},
		{"users", "export", "--out", out, "--checkpoint", ckpt, "--order-by", "updatedAt"},
		{"things", "export", "--out", out, "--checkpoint", ckpt},
	} {
		r := e.run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, ckpt+" records another export") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if err := os.WriteFile(ckpt, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, "users", "export", "--out", out, "--checkpoint", ckpt)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "is not a checkpoint of this tool's exports") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestListPages: --pages stops early and prints the link that
// --next-page resumes from, in the same server.
func TestListPages(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(2))
	seedUsers(srv, 5)
	e := useServer(t, srv)
	r := e.run(t, "users", "list", "--pages", "2")
	link, ok := strings.CutPrefix(strings.TrimSuffix(r.stderr, "\n"), "More Users: resume with --next-page ")
	if r.code != ExitOK || !ok || len(lines(r.stdout)) != 4 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	link = strings.Trim(link, "'")
	r = e.run(t, "users", "list", "--next-page", link, "-o", "csv")
	// The last page holds the first User added, alone.
	if got := lines(r.stdout); r.code != ExitOK || len(got) != 2 || !strings.HasPrefix(got[1], userID(0)+",") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = e.run(t, "users", "list", "--next-page", "/v2/api/management/service_connect/users?page=bogus")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "the page link was refused") || !strings.Contains(r.stderr, "list again without --next-page") {
		t.Errorf("bogus link: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestExportKeepsOutputOnUsageError: a configuration mistake is found
// before the output is opened, so an earlier export is not truncated.
func TestExportKeepsOutputOnUsageError(t *testing.T) {
	clearEnv(t)
	out := filepath.Join(t.TempDir(), "users.jsonl")
	if err := os.WriteFile(out, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "users", "export", "--out", out); r.code != ExitUsage {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != "precious\n" {
		t.Errorf("the output was changed to %q", data)
	}
}

// TestExportResealedCheckpoint: a checkpoint whose offset was moved and
// whose seal was then recomputed (by a tool that knows the format) is
// still refused, by the hash of the output it records, and nothing is
// written.
func TestExportResealedCheckpoint(t *testing.T) {
	e, args, out, ckpt := failedExport(t, 500)
	output, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	c := readCheckpoint(t, ckpt)
	lastLine := int64(len(lines(string(output))[c.Count-1]) + 1)
	for _, offset := range []int64{c.Offset - 7, c.Offset - lastLine} {
		forged := c
		forged.Offset = offset
		forged.Seal = forged.seal()
		data, _ := json.Marshal(forged)
		if err := os.WriteFile(ckpt, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, args...)
		if want := "does not hold what " + ckpt + " records"; r.code != ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("offset %d: exit %d, stderr %q; want %q", offset, r.code, r.stderr, want)
		}
		if now, _ := os.ReadFile(out); string(now) != string(output) {
			t.Errorf("offset %d: the output changed", offset)
		}
	}
}

// hostileLink answers every list of Users with one User and a next_page
// link that holds terminal control sequences, as a hostile or broken
// service might: the SDK refuses the link.
type hostileLink struct{ next http.RoundTripper }

const hostileNextPage = "/v2/api/management/service_connect/users?page=\x1b]0;pwned\a\x1b[2J"

func (h hostileLink) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/users") {
		return h.next.RoundTrip(req)
	}
	return jsonAnswer(req, map[string]any{"users": []any{map[string]any{"id": "u-1"}}, "next_page": hostileNextPage}), nil
}

// TestListPagesEscapesLink: a link with control characters comes from the
// service; the SDK refuses it (ListPage returns no link that List would
// refuse), and nothing of it reaches the terminal raw.
func TestListPagesEscapesLink(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	e := useServer(t, srv)
	e.stderrTTY = true
	e.httpClient = &http.Client{Transport: hostileLink{next: e.httpClient.Transport}}
	r := e.run(t, "users", "list", "--pages", "1")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "invalid next_page link") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if strings.ContainsAny(r.stdout+r.stderr, "\x1b\a") {
		t.Errorf("stdout %q, stderr %q: want no raw control character", r.stdout, r.stderr)
	}
}

// TestExportDanglingCheckpointLink: a --checkpoint that is a symbolic link
// to a missing file is refused for what it is, at once; it is not taken
// for a checkpoint another run holds, and nothing is written.
func TestExportDanglingCheckpointLink(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	seedUsers(srv, 3)
	e := useServer(t, srv)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")
	if err := os.Symlink(filepath.Join(dir, "gone", "users.ckpt"), ckpt); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, "users", "export", "--out", out, "--checkpoint", ckpt)
	if r.code == ExitOK || strings.Contains(r.stderr, "another export") || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("exit %d, stderr %q; want a failure naming the dangling symbolic link", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the output was created: %v", err)
	}
}
