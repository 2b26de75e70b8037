package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The tests of this file run the tool as operators do: built with go
// build, configured by the environment, against a managementtest server
// on loopback, killed and resumed.

// The tool, built once for the tests that run it.
var tool struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "management-cli-test-")
	if err != nil {
		panic(err)
	}
	tool.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildTool builds the tool with go build, once, and returns its path.
func buildTool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the tool: skipped with -short")
	}
	tool.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			tool.err = fmt.Errorf("the go command is needed to build the tool: %v", err)
			return
		}
		tool.bin = filepath.Join(tool.dir, "management")
		cmd := exec.Command(goBin, "build", "-o", tool.bin, ".")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			tool.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if tool.err != nil {
		t.Fatal(tool.err)
	}
	return tool.bin
}

// toolEnv is the process environment with the tool configured for srv,
// and nothing else of the tool's.
func toolEnv(srv *managementtest.Server) []string {
	return append(unconfigured(),
		management.EnvBaseURL+"="+srv.URL,
		management.EnvClientID+"="+srv.ClientID,
		management.EnvClientSecret+"="+srv.ClientSecret,
		management.EnvRetryWaitMin+"=1ms",
		management.EnvRetryWaitMax+"=10ms",
	)
}

// unconfigured is the process environment without any of the tool's
// variables: the tool as a newcomer first runs it.
func unconfigured() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MANAGEMENT_") {
			env = append(env, kv)
		}
	}
	return env
}

// seed adds n Users u-000000, u-000001, ... to srv and returns the
// length of one exported line.
func seed(srv *managementtest.Server, n int) int {
	for i := range n {
		id := fmt.Sprintf("u-%06d", i)
		srv.AddUser(management.UserDetails{User: management.User{ID: id, Email: management.Ptr(id + "@example.com")}})
	}
	u, _ := srv.User("u-000000")
	line, _ := json.Marshal(u.User)
	return len(line) + 1
}

// started is a running tool; its output is read once done has said it
// ended.
type started struct {
	cmd            *exec.Cmd
	done           chan error
	stdout, stderr *bytes.Buffer
}

// start starts the tool with env and args; done receives the error of its
// Wait.
func start(t *testing.T, bin string, env []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	s := &started{cmd: cmd, done: make(chan error, 1), stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	// A test that fails while the tool runs leaves no process behind; after
	// the test waited for it, the kill does nothing.
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s
}

// fileSize is the size of path, 0 when it does not exist yet.
func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// TestExportSurvivesSIGKILL exports 25 000 Users, killing the tool with
// SIGKILL at random points (while it writes, syncs, saves its checkpoint
// or waits for a page, by the output's size or by time) and running it
// again until it completes: the output holds every User exactly once.
// After every kill the output is at least as long as the checkpoint says,
// which resuming relies on.
func TestExportSurvivesSIGKILL(t *testing.T) {
	const n = 25000
	bin := buildTool(t)
	srv := managementtest.NewServer(managementtest.WithPageSize(500))
	defer srv.Close()
	lineLen := seed(srv, n)
	env := toolEnv(srv)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}

	seedValue := time.Now().UnixNano()
	t.Logf("random seed %d", seedValue)
	rng := rand.New(rand.NewPCG(uint64(seedValue), 0))
	kills, runs := 0, 0
	for ; runs < 20; runs++ {
		s := start(t, bin, env, args...)
		if kills < 5 {
			// Odd kills by time (start-up included), even ones by progress.
			var trigger func() bool
			if kills%2 == 1 {
				deadline := time.Now().Add(time.Duration(rng.IntN(300)) * time.Millisecond)
				trigger = func() bool { return time.Now().After(deadline) }
			} else {
				target := fileSize(out) + int64(rng.IntN(n*lineLen/3))
				trigger = func() bool { return fileSize(out) >= target }
			}
			if killWhen(t, s, trigger) {
				kills++
				checkInvariant(t, out, ckpt)
				continue
			}
		} else if err := <-s.done; err != nil {
			t.Fatalf("run %d: %v\n%s", runs+1, err, s.stderr)
		}
		// The last kill may have landed after the export was complete.
		if got := s.stderr.String(); !strings.HasPrefix(got, "Exported 25000 Users to ") && !strings.HasPrefix(got, "The export is already complete: 25000 Users") {
			t.Fatalf("run %d ended with: %s", runs+1, got)
		}
		break
	}
	t.Logf("%d kills in %d runs", kills, runs+1)
	if kills == 0 {
		t.Fatal("the tool was never killed: the test proved nothing")
	}
	checkAllOnce(t, out, n)
}

// waitUntil polls cond every millisecond until it holds (the fake service
// and the files notify nothing), failing the test if s ends before what.
func waitUntil(t *testing.T, s *started, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case err := <-s.done:
			t.Fatalf("the tool ended before %s: %v\n%s", what, err, s.stderr)
		case <-tick.C:
		}
	}
}

// killWhen kills s with SIGKILL as soon as trigger says so, polling every
// millisecond; it reports false when s ended first, successfully.
// A kill that lands as the tool exits successfully counts as no kill.
func killWhen(t *testing.T, s *started, trigger func() bool) bool {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-s.done:
			if err != nil {
				t.Fatalf("the tool failed: %v\n%s", err, s.stderr)
			}
			return false
		case <-tick.C:
			if !trigger() {
				continue
			}
			if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			// The tool may have ended on its own just before the kill.
			err := <-s.done
			var exit *exec.ExitError
			switch {
			case err == nil:
				return false
			case !errors.As(err, &exit) || exit.ExitCode() != -1: // -1: ended by a signal
				t.Fatalf("the tool failed: %v\n%s", err, s.stderr)
			}
			return true
		}
	}
}

// checkInvariant: once the output holds a byte, a checkpoint vouches for
// it: the output is at least as long as the checkpoint says, and its bytes
// up to there have the hash the checkpoint records.
func checkInvariant(t *testing.T, out, ckpt string) {
	t.Helper()
	data, err := os.ReadFile(ckpt)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(data) == 0 { // none yet, or created and not yet written
		if size := fileSize(out); size > 0 {
			t.Fatalf("the output holds %d bytes that no checkpoint vouches for", size)
		}
		return
	}
	var c struct {
		Offset int64  `json:"offset"`
		SHA256 string `json:"output_sha256"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("the checkpoint is not whole: %v\n%s", err, data)
	}
	output, err := os.ReadFile(out)
	if err != nil && !(errors.Is(err, os.ErrNotExist) && c.Offset == 0) {
		t.Fatal(err)
	}
	if int64(len(output)) < c.Offset {
		t.Fatalf("the output is %d bytes, the checkpoint records %d", len(output), c.Offset)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(output[:c.Offset])); sum != c.SHA256 {
		t.Fatalf("the output's first %d bytes hash to %s, the checkpoint records %s", c.Offset, sum, c.SHA256)
	}
}

// checkAllOnce: the export holds u-000000 to u-(n-1), each once.
func checkAllOnce(t *testing.T, out string, n int) {
	t.Helper()
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := make(map[string]bool, n)
	sc := bufio.NewScanner(f)
	count := 0
	for sc.Scan() {
		count++
		var u management.User
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatalf("line %d is not a User: %v: %q", count, err, sc.Text())
		}
		if seen[u.ID] {
			t.Fatalf("line %d: %s is exported twice", count, u.ID)
		}
		seen[u.ID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n || len(seen) != n {
		t.Fatalf("%d lines, %d distinct Users; want %d", count, len(seen), n)
	}
}

// TestExportToPipeIsQuiet: with standard error a pipe, an export prints
// its one-line summary and nothing else: no bar, no escape sequence.
func TestExportToPipeIsQuiet(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, 3000)
	srv.DelayNext(managementtest.RouteListUsers, 10, 40*time.Millisecond)
	s := start(t, bin, toolEnv(srv), "users", "export", "--out", filepath.Join(t.TempDir(), "u.jsonl"))
	if err := <-s.done; err != nil {
		t.Fatalf("%v\n%s", err, s.stderr)
	}
	got := s.stderr.String()
	if !strings.HasPrefix(got, "Exported 3000 Users to ") || strings.Count(got, "\n") != 1 || strings.ContainsAny(got, "\x1b\r") {
		t.Errorf("stderr = %q, want the summary line alone", got)
	}
}

// TestExportInterruptedBySIGINT: Ctrl-C stops an export cleanly, exit
// 130, saying how to resume; the same command then completes it.
func TestExportInterruptedBySIGINT(t *testing.T) {
	const n = 3000
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, n)
	srv.DelayNext(managementtest.RouteListUsers, n/100, 30*time.Millisecond)
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "users.jsonl"), filepath.Join(dir, "users.ckpt")
	args := []string{"users", "export", "--out", out, "--checkpoint", ckpt}

	s := start(t, bin, toolEnv(srv), args...)
	// The checkpoint is written: the export is under way.
	waitUntil(t, s, "it could be interrupted", func() bool { return fileSize(ckpt) > 0 })
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := <-s.done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130\n%s", err, s.stderr)
	}
	if got := s.stderr.String(); !strings.HasPrefix(got, "management: interrupted after ") || !strings.HasSuffix(got, ": run the same command to resume\n") {
		t.Fatalf("stderr = %q", got)
	}

	s = start(t, bin, toolEnv(srv), args...)
	if err := <-s.done; err != nil {
		t.Fatalf("resume: %v\n%s", err, s.stderr)
	}
	checkAllOnce(t, out, n)
}

// fakeService starts a fake service on a loopback port holding users Users
// (see seed), closed when the test ends, and returns it with the
// environment that points the tool at it.
func fakeService(t *testing.T, users int, opts ...managementtest.Option) (*managementtest.Server, []string) {
	t.Helper()
	srv := managementtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	seed(srv, users)
	return srv, toolEnv(srv)
}
