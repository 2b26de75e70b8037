package main

import (
	"bytes"
	"encoding/json"
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
// and asks nothing of the service.
func TestExportRefusesSameFile(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 3)
	for _, c := range []struct {
		name      string
		setup     func(t *testing.T, dir string)
		out, ckpt string
	}{
		{name: "one name", out: "same.jsonl", ckpt: "same.jsonl"},
		{name: "./", out: "same.jsonl", ckpt: "./same.jsonl"},
		{name: "..", out: "same.jsonl", ckpt: "sub/../same.jsonl", setup: func(t *testing.T, dir string) {
			mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
		}},
		{name: "existing file, ./", out: "users.jsonl", ckpt: "./users.jsonl", setup: precious("users.jsonl")},
		{name: "symbolic link", out: "link.jsonl", ckpt: "users.jsonl", setup: func(t *testing.T, dir string) {
			precious("users.jsonl")(t, dir)
			mustDo(t, os.Symlink("users.jsonl", filepath.Join(dir, "link.jsonl")))
		}},
		{name: "symbolic link to a directory", out: "users.jsonl", ckpt: "alias/users.jsonl", setup: func(t *testing.T, dir string) {
			mustDo(t, os.Symlink(".", filepath.Join(dir, "alias")))
		}},
		{name: "hard link", out: "users.jsonl", ckpt: "users.ckpt", setup: func(t *testing.T, dir string) {
			precious("users.jsonl")(t, dir)
			mustDo(t, os.Link(filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")))
		}},
		{name: "the checkpoint's temporary file", out: "users.ckpt.tmp", ckpt: "users.ckpt", setup: precious("users.ckpt.tmp")},
		{name: "the checkpoint's temporary file, new", out: "./users.ckpt.tmp", ckpt: "users.ckpt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(t, dir)
			}
			before := snapshot(t, dir)
			r := runIn(t, bin, env, dir, "users", "export", "--out", c.out, "--checkpoint", c.ckpt)
			if r.code != 2 || !strings.Contains(r.stderr, "(nothing was written)") {
				t.Errorf("exit %d, stderr %q; want 2 and a usage error", r.code, r.stderr)
			}
			sameSnapshot(t, "after the refusal", before, snapshot(t, dir))
		})
	}
	if n := srv.Requests(managementtest.RouteListUsers); n != 0 {
		t.Errorf("the service was asked for %d pages", n)
	}
}

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
		if withCkpt {
			args = append(args, "--checkpoint", "users.ckpt")
		}
		before := snapshot(t, dir)
		r := runIn(t, bin, env, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "users.jsonl exists and is not empty") || !strings.Contains(r.stderr, "--force to overwrite it") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
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
