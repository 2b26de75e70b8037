package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The tests of this file hold the promises of an export with a
// checkpoint on the built tool, against a managementtest server that
// outlives each run of it (it lives in the test's process): it never
// loses or mixes data, whatever the flags, the files on disk or the
// environment say.

// runIn runs the tool in dir to its end, with no input.
func runIn(t *testing.T, bin string, env []string, dir string, args ...string) toolRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	return runCmd(t, cmd)
}

// snapshot is what dir holds: each name with its contents, or the target
// of a symbolic link.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(path)
			files[rel] = "-> " + target
			return err
		case d.IsDir():
			files[rel] = "dir"
		default:
			data, err := os.ReadFile(path)
			files[rel] = string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, was := range before {
		if now, ok := after[name]; !ok {
			t.Errorf("%s: %s was removed", what, name)
		} else if now != was {
			t.Errorf("%s: %s changed from %q to %q", what, name, trim(was), trim(now))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s was created", what, name)
		}
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// TestExportRefusesSameFile: --out and --checkpoint naming one file, by
// name, through "./" or "..", a symbolic or a hard link, or --out naming
// the checkpoint's temporary file, are a usage error that writes nothing
// and asks nothing of the service. A symbolic link to a file that does not
// exist yet names that file, as the export would create it through the
// link: a dangling --out link to the checkpoint, a dangling --checkpoint
// link to the output, two links to one missing file, a chain of links.
func TestExportRefusesSameFile(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 3)
	const (
		same = "management: --out %[1]s and --checkpoint %[2]s are the same file (%[3]s): the checkpoint would overwrite the output; give them different names (nothing was written)\n"
		temp = "management: --out %[1]s is the checkpoint's temporary file (%[3]s), which each page replaces: give another --out or --checkpoint (nothing was written)\n"
	)
	link := func(name, target string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { mustDo(t, os.Symlink(target, filepath.Join(dir, name))) }
	}
	for _, c := range []struct {
		name      string
		setup     func(t *testing.T, dir string)
		out, ckpt string
		want      string // the message, of --out, --checkpoint and the file as it names them
		file      string // the file's name in the test's directory
	}{
		{name: "one name", out: "same.jsonl", ckpt: "same.jsonl", want: same, file: "same.jsonl"},
		{name: "./", out: "same.jsonl", ckpt: "./same.jsonl", want: same, file: "same.jsonl"},
		{name: "..", out: "same.jsonl", ckpt: "sub/../same.jsonl", want: same, file: "same.jsonl", setup: func(t *testing.T, dir string) {
			mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
		}},
		{name: "existing file, ./", out: "users.jsonl", ckpt: "./users.jsonl", setup: precious("users.jsonl"), want: same, file: "users.jsonl"},
		{name: "symbolic link", out: "link.jsonl", ckpt: "users.jsonl", want: same, file: "users.jsonl", setup: func(t *testing.T, dir string) {
			precious("users.jsonl")(t, dir)
			link("link.jsonl", "users.jsonl")(t, dir)
		}},
		{name: "symbolic link to a directory", out: "users.jsonl", ckpt: "alias/users.jsonl", setup: link("alias", "."), want: same, file: "users.jsonl"},
		{name: "hard link", out: "users.jsonl", ckpt: "users.ckpt", want: same, file: "users.jsonl", setup: func(t *testing.T, dir string) {
			precious("users.jsonl")(t, dir)
			mustDo(t, os.Link(filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")))
		}},
		{name: "the checkpoint's temporary file", out: "users.ckpt.tmp", ckpt: "users.ckpt", setup: precious("users.ckpt.tmp"), want: temp, file: "users.ckpt.tmp"},
		{name: "the checkpoint's temporary file, new", out: "./users.ckpt.tmp", ckpt: "users.ckpt", want: temp, file: "users.ckpt.tmp"},

		{name: "dangling link to the checkpoint", out: "link.jsonl", ckpt: "users.ckpt", setup: link("link.jsonl", "users.ckpt"), want: same, file: "users.ckpt"},
		{name: "checkpoint a dangling link to the output", out: "users.jsonl", ckpt: "link.ckpt", setup: link("link.ckpt", "users.jsonl"), want: same, file: "users.jsonl"},
		{name: "two dangling links to one file", out: "a.jsonl", ckpt: "b.ckpt", want: same, file: "x", setup: func(t *testing.T, dir string) {
			link("a.jsonl", "x")(t, dir)
			link("b.ckpt", "x")(t, dir)
		}},
		{name: "a chain of dangling links", out: "l1", ckpt: "users.ckpt", want: same, file: "users.ckpt", setup: func(t *testing.T, dir string) {
			link("l1", "l2")(t, dir)
			link("l2", "users.ckpt")(t, dir)
		}},
		{name: "dangling link through a linked directory", out: "link.jsonl", ckpt: "users.ckpt", want: same, file: "users.ckpt", setup: func(t *testing.T, dir string) {
			link("alias", ".")(t, dir)
			link("link.jsonl", filepath.Join(dir, "alias", "users.ckpt"))(t, dir)
		}},
		{name: "dangling link to the checkpoint's temporary file", out: "link.jsonl", ckpt: "users.ckpt", setup: link("link.jsonl", "users.ckpt.tmp"), want: temp, file: "users.ckpt.tmp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(t, dir)
			}
			real, err := filepath.EvalSymlinks(dir)
			mustDo(t, err)
			before := snapshot(t, dir)
			r := runIn(t, bin, env, dir, "users", "export", "--out", c.out, "--checkpoint", c.ckpt)
			if want := fmt.Sprintf(c.want, c.out, c.ckpt, filepath.Join(real, c.file)); r.code != 2 || r.stderr != want || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr\n%q\nwant 2, nothing, and\n%q", r.code, r.stdout, r.stderr, want)
			}
			sameSnapshot(t, "after the refusal", before, snapshot(t, dir))
		})
	}
	if n := srv.Requests(managementtest.RouteListUsers); n != 0 {
		t.Errorf("the service was asked for %d pages", n)
	}
}

// TestExportThroughDanglingLinks: an --out or a --checkpoint that is a
// symbolic link to a file not there yet exports into the file it names,
// leaving the link a link; the same command again says the export is
// complete and changes nothing.
func TestExportThroughDanglingLinks(t *testing.T) {
	bin := buildTool(t)
	_, env := fakeService(t, 3)
	dir := t.TempDir()
	mustDo(t, os.Symlink("users.jsonl", filepath.Join(dir, "out.link")))
	mustDo(t, os.Symlink("users.ckpt", filepath.Join(dir, "ckpt.link")))
	args := []string{"users", "export", "--out", "out.link", "--checkpoint", "ckpt.link"}
	if r := runIn(t, bin, env, dir, args...); r.code != 0 || !strings.HasPrefix(r.stderr, "Exported 3 Users to out.link in ") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	checkAllOnce(t, filepath.Join(dir, "users.jsonl"), 3)
	checkInvariant(t, filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt"))
	done := snapshot(t, dir)
	if done["out.link"] != "-> users.jsonl" || done["ckpt.link"] != "-> users.ckpt" {
		t.Errorf("the links were replaced: %q, %q", done["out.link"], done["ckpt.link"])
	}
	r := runIn(t, bin, env, dir, args...)
	if want := "The export is already complete: 3 Users in out.link, as ckpt.link records. Give --force to export again.\n"; r.code != 0 || r.stderr != want {
		t.Errorf("again: exit %d, stderr %q; want 0, %q", r.code, r.stderr, want)
	}
	sameSnapshot(t, "after running it again", done, snapshot(t, dir))
}

// TestExportFakeTwice: an export from --fake, run again, says it is
// complete and changes nothing, as the help promises: the fake has the same
// identity at each run. A checkpoint of the fake is refused for a real
// service, and one of a real service for the fake, each saying what to do.
func TestExportFakeTwice(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 3)
	noConfig := setEnv(env, management.EnvBaseURL+"=", management.EnvClientID+"=", management.EnvClientSecret+"=")
	dir := t.TempDir()
	args := []string{"--fake", "users", "export", "--out", "users.jsonl", "--checkpoint", "users.ckpt"}
	if r := runIn(t, bin, noConfig, dir, args...); r.code != 0 || !strings.HasPrefix(r.stderr, "Exported 5 Users to users.jsonl in ") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	done := snapshot(t, dir)
	r := runIn(t, bin, noConfig, dir, args...)
	if want := "The export is already complete: 5 Users in users.jsonl, as users.ckpt records. Give --force to export again.\n"; r.code != 0 || r.stderr != want {
		t.Errorf("again: exit %d, stderr %q; want 0, %q", r.code, r.stderr, want)
	}
	sameSnapshot(t, "after running it again", done, snapshot(t, dir))

	r = runIn(t, bin, env, dir, args[1:]...)
	if want := "management: users.ckpt records an export from the built-in fake service, but this run is configured for " + srv.URL + defaultPathPrefix +
		" as client " + srv.ClientID + " (nothing was written): run the command with --fake to resume it, or start over with --force\n"; r.code != 2 || r.stderr != want {
		t.Errorf("without --fake: exit %d, stderr\n%q\nwant 2 and\n%q", r.code, r.stderr, want)
	}
	sameSnapshot(t, "after the refusal", done, snapshot(t, dir))

	if r := runIn(t, bin, env, dir, append(args[1:], "--force")...); r.code != 0 {
		t.Fatalf("--force: exit %d, stderr %q", r.code, r.stderr)
	}
	done = snapshot(t, dir)
	r = runIn(t, bin, noConfig, dir, args...)
	if want := "management: users.ckpt records an export from " + srv.URL + defaultPathPrefix + " as client " + srv.ClientID +
		", but this run, with --fake, is against the built-in fake service (nothing was written): run the command without --fake to resume it, or start over with --force\n"; r.code != 2 || r.stderr != want {
		t.Errorf("with --fake: exit %d, stderr\n%q\nwant 2 and\n%q", r.code, r.stderr, want)
	}
	sameSnapshot(t, "after the refusal", done, snapshot(t, dir))
}

// defaultPathPrefix is the path prefix of the service, which the checkpoint records.
const defaultPathPrefix = managementtest.DefaultPathPrefix

// precious returns a setup that writes a file the tool must not touch.
func precious(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		mustDo(t, os.WriteFile(filepath.Join(dir, name), []byte("precious\n"), 0o600))
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestExportRefusesNonEmptyOut: an existing non-empty --out that no
// checkpoint vouches for is left alone, with or without --checkpoint,
// unless --force; an empty one is used.
func TestExportRefusesNonEmptyOut(t *testing.T) {
	const n = 30
	bin := buildTool(t)
	_, env := fakeService(t, n, managementtest.WithPageSize(10))
	for _, withCkpt := range []bool{false, true} {
		dir := t.TempDir()
		precious("users.jsonl")(t, dir)
		args := []string{"users", "export", "--out", "users.jsonl"}
		want := "management: users.jsonl exists and is not empty (nothing was written): give another --out, or --force to overwrite it\n"
		if withCkpt {
			args = append(args, "--checkpoint", "users.ckpt")
			want = "management: users.jsonl exists and is not empty, and users.ckpt does not record it (nothing was written): give another --out, or --force to overwrite it\n"
		}
		before := snapshot(t, dir)
		r := runIn(t, bin, env, dir, args...)
		if r.code != 2 || r.stderr != want || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr\n%q\nwant 2, nothing, and\n%q", args, r.code, r.stdout, r.stderr, want)
		}
		sameSnapshot(t, "after the refusal", before, snapshot(t, dir))

		if r := runIn(t, bin, env, dir, append(args, "--force")...); r.code != 0 {
			t.Fatalf("%v --force: exit %d, stderr %q", args, r.code, r.stderr)
		}
		checkAllOnce(t, filepath.Join(dir, "users.jsonl"), n)
	}

	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "users.jsonl"), nil, 0o600))
	if r := runIn(t, bin, env, dir, "users", "export", "--out", "users.jsonl", "--checkpoint", "users.ckpt"); r.code != 0 {
		t.Fatalf("into an empty file: exit %d, stderr %q", r.code, r.stderr)
	}
	checkAllOnce(t, filepath.Join(dir, "users.jsonl"), n)
}

// TestExportOneRunAtATime: while an export holds its checkpoint, a second
// run on it fails at once, saying why. The checkpoint is written before
// the output is touched: the first run, with --force over an old file,
// killed while it waits for its first page, is resumed by a plain rerun.
func TestExportOneRunAtATime(t *testing.T) {
	const n = 300
	bin := buildTool(t)
	srv, env := fakeService(t, n, managementtest.WithPageSize(100))
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")
	precious("users.jsonl")(t, dir)
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}

	srv.DelayNext(managementtest.RouteListUsers, 1, time.Minute) // ended by the kill
	first := start(t, bin, env, append(args, "--force")...)
	waitUntil(t, first, "its first page was asked for", func() bool { return srv.Requests(managementtest.RouteListUsers) > 0 })
	checkInvariant(t, out, ckpt)
	if fileSize(ckpt) == 0 {
		t.Fatal("no checkpoint while the first page is on its way")
	}

	r := runIn(t, bin, env, dir, args...)
	if want := "management: another export is running with the checkpoint " + ckpt + " (it holds the file's lock): wait for it to end, or give another --checkpoint\n"; r.code != 1 || r.stderr != want {
		t.Errorf("second run: exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
	select {
	case err := <-first.done:
		t.Fatalf("the first run ended: %v\n%s", err, first.stderr)
	default:
	}

	mustDo(t, first.cmd.Process.Kill())
	<-first.done
	checkInvariant(t, out, ckpt)
	if r := runIn(t, bin, env, dir, args...); r.code != 0 || !strings.HasPrefix(r.stderr, "Exported 300 Users") {
		t.Fatalf("rerun after the kill: exit %d, stderr %q", r.code, r.stderr)
	}
	checkAllOnce(t, out, n)
}

// partialExport runs an export until its checkpoint records some pages,
// not all, and kills it there.
func partialExport(t *testing.T, bin string, srv *managementtest.Server, args ...string) {
	t.Helper()
	ckpt := args[len(args)-1]
	srv.DelayNext(managementtest.RouteListUsers, 1000, 20*time.Millisecond)
	defer srv.ClearFaults()
	s := start(t, bin, toolEnv(srv), args...)
	waitUntil(t, s, "it was killed", func() bool {
		var c struct{ Count int }
		data, err := os.ReadFile(ckpt)
		return err == nil && json.Unmarshal(data, &c) == nil && c.Count > 0
	})
	mustDo(t, s.cmd.Process.Kill())
	<-s.done
}

// editJSON rewrites the JSON object in path with edit.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	mustDo(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	mustDo(t, dec.Decode(&m))
	edit(m)
	data, err = json.Marshal(m)
	mustDo(t, err)
	mustDo(t, os.WriteFile(path, data, 0o600))
}

func add(m map[string]any, key string, d int64) {
	v, _ := m[key].(json.Number).Int64()
	m[key] = v + d
}

// TestExportCheckpointVouchesForOutput: a checkpoint changed by hand, an
// output changed since, or a checkpoint of another service or client, is
// refused, saying what to do, and nothing is written; the export then
// resumes as if nothing had happened. A complete export of another service
// is not "already complete" here.
func TestExportCheckpointVouchesForOutput(t *testing.T) {
	const n = 2000
	bin := buildTool(t)
	srv := managementtest.NewServer(managementtest.WithPageSize(100))
	defer srv.Close()
	lineLen := seed(srv, n)
	other := managementtest.NewServer(managementtest.WithPageSize(100), managementtest.WithCredentials("other-client", "other-secret"))
	defer other.Close()
	seed(other, 30)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}
	partialExport(t, bin, srv, args...)
	checkInvariant(t, out, ckpt)

	otherClient := append(toolEnv(srv), management.EnvClientID+"=other-client")
	changedCkpt := "users.ckpt was changed since this tool wrote it, so it cannot vouch for " + out + " (nothing was written): start over with --force, which overwrites both"
	for _, c := range []struct {
		name   string
		env    []string
		change func()
		want   string
	}{
		{"offset moved into a line", nil, func() { editJSON(t, ckpt, func(m map[string]any) { add(m, "offset", -7) }) }, changedCkpt},
		{"offset moved back a line", nil, func() { editJSON(t, ckpt, func(m map[string]any) { add(m, "offset", -int64(lineLen)) }) }, changedCkpt},
		{"count changed", nil, func() { editJSON(t, ckpt, func(m map[string]any) { add(m, "count", 1) }) }, changedCkpt},
		{"marked done", nil, func() { editJSON(t, ckpt, func(m map[string]any) { m["done"] = true }) }, changedCkpt},
		{"seal removed", nil, func() { editJSON(t, ckpt, func(m map[string]any) { delete(m, "seal") }) }, changedCkpt},
		{"not a checkpoint", nil, func() { mustDo(t, os.WriteFile(ckpt, []byte("precious\n"), 0o600)) },
			ckpt + " is not a checkpoint of this tool's exports (nothing was written): give another --checkpoint"},
		{"another version", nil, func() { mustDo(t, os.WriteFile(ckpt, []byte(`{"version":1,"kind":"users","bytes":10}`), 0o600)) },
			ckpt + " was written by another version of this tool, which this one cannot resume"},
		{"a field of another type", nil, func() { editJSON(t, ckpt, func(m map[string]any) { m["count"] = "many" }) }, changedCkpt},
		{"output edited", nil, func() {
			data, err := os.ReadFile(out)
			mustDo(t, err)
			data[10] ^= 1
			mustDo(t, os.WriteFile(out, data, 0o600))
		}, out + " does not hold what " + ckpt + " records (its first "},

		{"output truncated", nil, func() { mustDo(t, os.Truncate(out, int64(lineLen))) }, out + " is shorter (" + itoa(lineLen) + " bytes) than " + ckpt + " records ("},
		{"another service", toolEnv(other), func() {}, ckpt + " records an export from " + srv.URL},
		{"another client", otherClient, func() {}, ckpt + " records an export from " + srv.URL},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := snapshot(t, dir)
			c.change()
			changed := snapshot(t, dir)
			env := c.env
			if env == nil {
				env = toolEnv(srv)
			}
			r := runIn(t, bin, env, dir, args...)
			advice := "start over with --force"
			if c.name == "not a checkpoint" {
				advice = "give another --checkpoint"
			}
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, advice) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q and %q", r.code, r.stderr, c.want, advice)
			}
			sameSnapshot(t, "after the refusal", changed, snapshot(t, dir))
			for name, data := range saved {
				mustDo(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
			}
		})
	}

	// --force overwrites a checkpoint that cannot resume, never a file that
	// is no checkpoint at all.
	notes := filepath.Join(dir, "notes.txt")
	precious("notes.txt")(t, dir)
	before := snapshot(t, dir)
	r := runIn(t, bin, toolEnv(srv), dir, "users", "export", "--out", out, "--checkpoint", notes, "--force")
	if r.code != 2 || !strings.Contains(r.stderr, notes+" is not a checkpoint") {
		t.Errorf("--force on a file that is not a checkpoint: exit %d, stderr %q", r.code, r.stderr)
	}
	sameSnapshot(t, "after the refusal", before, snapshot(t, dir))
	mustDo(t, os.Remove(notes))

	if r := runIn(t, bin, toolEnv(srv), dir, args...); r.code != 0 || !strings.Contains(r.stderr, " in this run") {
		t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
	}
	checkAllOnce(t, out, n)

	// Complete, for srv: not for the other service.
	r = runIn(t, bin, toolEnv(other), dir, args...)
	if r.code != 2 || strings.Contains(r.stderr, "complete") || !strings.Contains(r.stderr, "records an export from "+srv.URL) {
		t.Errorf("another service, after completion: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runIn(t, bin, toolEnv(other), dir, append(args, "--force")...); r.code != 0 {
		t.Fatalf("--force: exit %d, stderr %q", r.code, r.stderr)
	}
	checkAllOnce(t, out, 30)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
