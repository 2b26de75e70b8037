//go:build unix

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// ptyRun is what a run of the tool showed on a terminal.
type ptyRun struct {
	screen string // everything written to the terminal, escapes included
	code   int
}

// runPTY runs the tool with its standard output and error on a
// pseudo-terminal cols columns wide, as an operator's shell runs it, and
// returns what the terminal received.
func runPTY(t *testing.T, bin string, env []string, cols uint16, args ...string) ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		// CI must show what a terminal receives: there, no terminal is a
		// failure, as a missing redis-server is.
		if os.Getenv("MANAGEMENT_REQUIRE_SERVERS") != "" {
			t.Fatalf("no pseudo-terminal (MANAGEMENT_REQUIRE_SERVERS is set): %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	// A terminal has a size: the bar library draws nothing in 0 rows.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child has its own; the reader sees EOF (EIO) when it exits
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&screen, ptmx) // ends with EIO once the child is gone
		close(read)
	}()
	err = cmd.Wait()
	<-read
	return ptyRun{screen.String(), exitStatus(t, err)}
}

// hostile is a Thing name an End User could set: it retitles the window,
// clears the screen, rings the bell, backspaces over text, and holds a C1
// control (CSI), a DEL and a right-to-left override.
const hostile = "\x1b]0;pwned\a\x1b[2Jlamp\b\b\b\bLAMP \u009b31m \x7f \u202e"

// TestTableIsSafeOnTerminal: on a terminal, get and list show a hostile
// Thing name escaped as %q does, so that none of its control characters
// reaches the terminal; the terminal receives no escape sequence at all.
func TestTableIsSafeOnTerminal(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-1", Name: hostile, Model: "L\x1b[31m-1", FirmwareVersion: "1"}})
	env := setEnv(toolEnv(srv), "TERM=xterm-256color")
	for _, args := range [][]string{{"things", "get", "lamp-1"}, {"things", "list"}} {
		r := runPTY(t, bin, env, 200, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, r.code, r.screen)
		}
		if i := strings.IndexFunc(r.screen, func(c rune) bool {
			return c < 0x20 && c != '\r' && c != '\n' || c == 0x7f || c >= 0x80 && c < 0xa0 || c == '\u202e'
		}); i >= 0 {
			t.Errorf("%v: the terminal received a control character raw at %d:\n%q", args, i, r.screen)
		}
		for _, want := range []string{strconv.Quote(hostile), `"L\x1b[31m-1"`} {
			if !strings.Contains(r.screen, want) {
				t.Errorf("%v: the terminal does not show %s:\n%s", args, want, r.screen)
			}
		}
	}
}

// TestJSONIsSafeOnTerminal: JSON and JSON lines on a terminal carry no
// control character raw either (encoding/json leaves DEL, the C1 controls
// and format characters as they are): they are \u escapes, so the text
// still decodes to the exact name.
func TestJSONIsSafeOnTerminal(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 0)
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-1", Name: hostile, Model: "L-1", FirmwareVersion: "1"}})
	env = setEnv(env, "TERM=xterm-256color")
	for _, args := range [][]string{{"things", "get", "lamp-1", "-o", "json"}, {"things", "list", "-o", "jsonl"}, {"things", "export", "--no-progress"}} {
		r := runPTY(t, bin, env, 200, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, r.code, r.screen)
		}
		screen, _, _ := strings.Cut(r.screen, "Exported ") // export's summary, on the same terminal
		if i := strings.IndexFunc(screen, func(c rune) bool {
			return c < 0x20 && c != '\r' && c != '\n' || c == 0x7f || c >= 0x80 && c < 0xa0 || c == '\u202e'
		}); i >= 0 {
			t.Errorf("%v: the terminal received a control character raw at %d:\n%q", args, i, screen)
		}
		var thing management.Thing
		if err := json.NewDecoder(strings.NewReader(screen)).Decode(&thing); err != nil || thing.Name != hostile {
			t.Errorf("%v: name %q (%v), want it exact:\n%q", args, thing.Name, err, screen)
		}
	}
}

// TestMachineFormatsAreExact: json, jsonl and csv keep the hostile name
// exact: decoding them gives it back byte for byte.
func TestMachineFormatsAreExact(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "lamp-1", Name: hostile, Model: "L-1", FirmwareVersion: "1"}})
	env := toolEnv(srv)
	for _, f := range []string{"json", "jsonl"} {
		r := runTool(t, bin, env, "", "things", "get", "lamp-1", "-o", f)
		var thing management.Thing
		if err := json.Unmarshal([]byte(r.stdout), &thing); err != nil || thing.Name != hostile {
			t.Errorf("-o %s: name %q (%v), want it exact:\n%s", f, thing.Name, err, r.stdout)
		}
	}
	r := runTool(t, bin, env, "", "things", "list", "-o", "csv")
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][1] != hostile {
		t.Errorf("-o csv: %q (%v), want the name exact", rows, err)
	}
}

// TestProgressOnlyWhereItCanShow: the export's bar is drawn on a terminal
// that can move its cursor, keeps its spacing in 30 columns without
// overflowing them, and is not drawn with TERM=dumb or --no-progress
// (only the summary is). No colour is ever drawn, with or without
// NO_COLOR.
func TestProgressOnlyWhereItCanShow(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, 3000)
	export := func(term string, cols uint16, extra ...string) string {
		t.Helper()
		srv.DelayNext(managementtest.RouteListUsers, 6, 60*time.Millisecond) // the bar is drawn a few times
		env := setEnv(toolEnv(srv), "TERM="+term, "NO_COLOR=1")
		r := runPTY(t, bin, env, cols, append([]string{"users", "export", "--out", filepath.Join(t.TempDir(), "u.jsonl")}, extra...)...)
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.screen)
		}
		if !strings.Contains(r.screen, "Exported 3000 Users to ") {
			t.Errorf("no summary:\n%q", r.screen)
		}
		if sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`).FindString(r.screen); sgr != "" {
			t.Errorf("colour %q drawn:\n%q", sgr, r.screen)
		}
		return r.screen
	}

	narrow := export("xterm-256color", 30)
	bars := regexp.MustCompile(`Exporting \S \d+ Users`).FindAllString(narrow, -1)
	if len(bars) < 2 {
		t.Errorf("30 columns: the bar is not drawn, or not updated, with its spacing:\n%q", narrow)
	}
	for _, line := range strings.Split(regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`).ReplaceAllString(narrow, ""), "\r\n") {
		if strings.HasPrefix(line, "Exporting") && utf8.RuneCountInString(line) > 30 {
			t.Errorf("30 columns: a bar line is %d columns: %q", utf8.RuneCountInString(line), line)
		}
	}
	for _, c := range []struct {
		term  string
		extra []string
	}{{"dumb", nil}, {"xterm-256color", []string{"--no-progress"}}} {
		if got := export(c.term, 100, c.extra...); strings.Contains(got, "Exporting") || strings.Contains(got, "\x1b") {
			t.Errorf("TERM=%s %v: a bar was drawn:\n%q", c.term, c.extra, got)
		}
	}
}

// TestExportProgressOnTerminal: with standard error a terminal (a
// pseudo-terminal here), an export draws its progress bar there: the
// count, the rate and the elapsed time, redrawn in place.
func TestExportProgressOnTerminal(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, 3000)
	// Slow pages, so that the bar is drawn a few times before the end.
	srv.DelayNext(managementtest.RouteListUsers, 10, 60*time.Millisecond)

	r := runPTY(t, bin, setEnv(toolEnv(srv), "TERM=xterm-256color"), 100, // not dumb, whatever the test's terminal
		"users", "export", "--out", filepath.Join(t.TempDir(), "u.jsonl"))
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.screen)
	}
	got := r.screen
	for _, want := range []string{"Exporting", "3000 Users", "/s", "\x1b[", "Exported 3000 Users to "} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, got)
		}
	}
	if strings.Count(got, "Exporting") < 2 {
		t.Errorf("the bar was drawn once, not updated:\n%q", got)
	}
}

// TestNoConfigurationOnTerminal: run with nothing configured, the tool
// shows a newcomer what to set, its lines as it wrote them: the terminal
// receives these bytes and no others (the tool's own words are never
// escaped; only what comes from the service or the user's data is).
func TestNoConfigurationOnTerminal(t *testing.T) {
	bin := buildTool(t)
	r := runPTY(t, bin, setEnv(unconfigured(), "TERM=xterm-256color"), 100, "users", "list")
	want := strings.ReplaceAll(`management: not configured. Set the service's address and credentials in the environment:

  export MANAGEMENT_BASE_URL=https://management.example.com
  export MANAGEMENT_CLIENT_ID=<client id>
  export MANAGEMENT_CLIENT_SECRET=<client secret>

--base-url and --client-id override the first two. The secret is read from the
environment only, or from the first line of standard input with
--client-secret-stdin: never from an argument, which other users can see.

To try the tool offline, against a built-in fake service:

  management --fake users list
`, "\n", "\r\n") // the terminal's line discipline turns each newline into CR LF
	if r.code != 2 || r.screen != want {
		t.Errorf("exit %d, the terminal received\n%q\nwant 2 and\n%q", r.code, r.screen, want)
	}
}

// TestExportFileNamesOnTerminal: a file's name is the user's data: the
// export's summary, and its "already complete" line, show a control
// character in --out or --checkpoint escaped, the rest of the line as the
// tool wrote it.
func TestExportFileNamesOnTerminal(t *testing.T) {
	bin := buildTool(t)
	_, env := fakeService(t, 3)
	env = setEnv(env, "TERM=xterm-256color")
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users\x1b[2J.jsonl"), filepath.Join(dir, "users\a.ckpt")
	shownOut, shownCkpt := dir+`/users\x1b[2J.jsonl`, dir+`/users\a.ckpt`
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt, "--no-progress"}

	r := runPTY(t, bin, env, 200, args...)
	summary := regexp.MustCompile(`^Exported 3 Users to ` + regexp.QuoteMeta(shownOut) + ` in [0-9.]+[µm]?s \(\d+/s\)\r\n$`)
	if r.code != 0 || !summary.MatchString(r.screen) {
		t.Errorf("exit %d, the terminal received\n%q\nwant 0 and %s", r.code, r.screen, summary)
	}
	r = runPTY(t, bin, env, 200, args...)
	want := "The export is already complete: 3 Users in " + shownOut + ", as " + shownCkpt + " records. Give --force to export again.\r\n"
	if r.code != 0 || r.screen != want {
		t.Errorf("again: exit %d, the terminal received\n%q\nwant 0 and\n%q", r.code, r.screen, want)
	}
}
