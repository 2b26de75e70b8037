package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The tests of this file run the built tool as an operator does, against
// a managementtest server that keeps its state from one run to the next.

// toolRun is what one run of the tool did.
type toolRun struct {
	code           int
	stdout, stderr string
}

// runTool runs the tool with env, stdin and args, and waits for it.
func runTool(t *testing.T, bin string, env []string, stdin string, args ...string) toolRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd)
}

// runCmd runs cmd, the tool, to its end and returns what it wrote.
func runCmd(t *testing.T, cmd *exec.Cmd) toolRun {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return toolRun{exitStatus(t, cmd.Run()), out.String(), errOut.String()}
}

// exitStatus is the exit status of a tool that ended with err, as its
// Wait or Run returned it.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// setEnv is env with each "NAME=value" of kv in place of NAME's earlier
// value, or without NAME when the value is empty.
func setEnv(env []string, kv ...string) []string {
	out := slices.Clone(env)
	for _, pair := range kv {
		name, value, _ := strings.Cut(pair, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		if value != "" {
			out = append(out, pair)
		}
	}
	return out
}

// TestExitCodes: 0 success, 1 failure, 2 usage, 4 refused credentials;
// the help lists them all, 130 included (TestInterruptedList).
func TestExitCodes(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 3)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{"success", env, []string{"users", "list"}, 0},
		{"not found", env, []string{"users", "get", "u-nobody"}, 1},
		{"unknown flag", env, []string{"users", "list", "--colour"}, 2},
		{"bad configuration", setEnv(env, management.EnvRetryWaitMin+"=10s", management.EnvRetryWaitMax+"=1s"), []string{"users", "list"}, 2},
		{"wrong secret", setEnv(env, management.EnvClientSecret+"=not-the-secret"), []string{"users", "list"}, 4},
		{"token refused", env, []string{"users", "get", "u-000001"}, 4},
	} {
		if c.name == "token refused" { // a fresh token is refused too
			srv.FailNext(managementtest.RouteGetUser, 2, http.StatusUnauthorized, 0)
		}
		if r := runTool(t, bin, c.env, "", c.args...); r.code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.name, r.code, c.code, r.stderr)
		}
	}
	help := runTool(t, bin, env, "", "--help").stdout
	for _, want := range []string{"0 success", "1 failure", "2 usage", "4 credentials refused", "130 interrupted", "fake serve exits 0"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not list %q:\n%s", want, help)
		}
	}
}

// TestInterruptedList: Ctrl-C during a list exits 130 and prints the
// --next-page link to resume from; the same command with that link lists
// the rest, each User once in all.
func TestInterruptedList(t *testing.T) {
	const n = 40
	bin := buildTool(t)
	srv, env := fakeService(t, n, managementtest.WithPageSize(10))
	// The first two pages at once, the third one slow: Ctrl-C lands while it is fetched.
	srv.DelayNext(managementtest.RouteListUsers, 2, time.Millisecond)
	srv.DelayNext(managementtest.RouteListUsers, 1, time.Minute)
	s := start(t, bin, env, "users", "list")
	waitUntil(t, s, "it could be interrupted", func() bool { return srv.Requests(managementtest.RouteListUsers) >= 3 })
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := exitStatus(t, <-s.done); code != 130 {
		t.Fatalf("exit %d, want 130; stderr %q", code, s.stderr)
	}
	m := regexp.MustCompile(`^management: interrupted after 20 Users: resume with --next-page '([^']+)'\n$`).FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("stderr = %q, want how to resume", s.stderr)
	}
	srv.ClearFaults()
	rest := runTool(t, bin, env, "", "users", "list", "--next-page", m[1])
	if rest.code != 0 {
		t.Fatalf("resume: exit %d, stderr %q", rest.code, rest.stderr)
	}
	seen := make(map[string]int)
	for _, line := range strings.Split(strings.TrimSpace(s.stdout.String()+rest.stdout), "\n") {
		var u management.User
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seen[u.ID]++
	}
	if len(seen) != n {
		t.Errorf("%d distinct Users in the two runs, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s listed %d times", id, k)
		}
	}
}

// TestVersion: version and --version print the same lines: the tool's
// module version from the binary's build information, the SDK's Version,
// and the revision exactly when the build recorded one.
func TestVersion(t *testing.T) {
	bin := buildTool(t)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	env := setEnv(os.Environ(), management.EnvBaseURL+"=")
	cmdOut := runTool(t, bin, env, "", "version")
	flagOut := runTool(t, bin, env, "", "--version")
	if cmdOut.code != 0 || flagOut.code != 0 || cmdOut.stdout != flagOut.stdout {
		t.Fatalf("version: exit %d %q; --version: exit %d %q", cmdOut.code, cmdOut.stdout, flagOut.code, flagOut.stdout)
	}
	lines := strings.Split(cmdOut.stdout, "\n")
	if want := "management " + info.Main.Version; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "SDK management-go " + management.Version; lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	rev := ""
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			rev = s.Value
		}
	}
	if shown := strings.Contains(cmdOut.stdout, "\nrevision "); shown != (rev != "") || !strings.Contains(cmdOut.stdout, rev) {
		t.Errorf("revision %q recorded; the output:\n%s", rev, cmdOut.stdout)
	}
}

// configField matches a management.Config field, which an operator never
// sees: messages name environment variables and flags instead.
var configField = regexp.MustCompile(`Config\.|\b(BaseURL|ClientID|ClientSecret|PathPrefix|RetryWaitM\w+|AllowInsecureHTTP|TokenSource)\b`)

// TestMessagesForOperators: configuration the SDK refuses, and a base URL
// or prefix that the token endpoint's answer (a 404, a redirect) shows
// wrong, are told in environment variables and flags, never Config fields;
// both exit 2.
func TestMessagesForOperators(t *testing.T) {
	bin := buildTool(t)
	srv := managementtest.NewServer()
	defer srv.Close()
	seed(srv, 1)
	elsewhere := managementtest.NewServer(managementtest.WithPathPrefix("/other/prefix"))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.RedirectHandler("https://login.example.com/auth/token", http.StatusTemporaryRedirect))
	defer redirect.Close()

	env := toolEnv(srv)
	const help = "\nRun 'management users list --help' for usage.\n"
	for _, c := range []struct {
		name string
		env  []string
		code int
		want string // the whole of standard error
	}{
		{"http to a remote host", setEnv(env, management.EnvBaseURL+"=http://management.example.com"), 2,
			"management: invalid argument: MANAGEMENT_BASE_URL uses http:// to a host that is not loopback; use https or set MANAGEMENT_ALLOW_INSECURE_HTTP=true" + help},
		{"retry waits", setEnv(env, management.EnvRetryWaitMin+"=10s", management.EnvRetryWaitMax+"=1s"), 2,
			"management: invalid argument: MANAGEMENT_RETRY_WAIT_MIN (10s) is longer than MANAGEMENT_RETRY_WAIT_MAX (1s)" + help},
		{"prefix without a slash", setEnv(env, management.EnvPathPrefix+"=api"), 2,
			"management: invalid argument: MANAGEMENT_PATH_PREFIX must be a path starting with /" + help},
		{"a zero wait", setEnv(env, management.EnvRetryWaitMin+"=0s"), 2,
			"management: configuration: MANAGEMENT_RETRY_WAIT_MIN is not a positive duration (unset, it is 250ms)" + help},
		{"malformed and missing", setEnv(env, management.EnvMaxRetries+"=none", management.EnvClientSecret+"="), 2,
			"management: configuration: MANAGEMENT_MAX_RETRIES is not an integer; MANAGEMENT_CLIENT_SECRET (or --client-secret-stdin) is not set" + help},
	} {
		r := runTool(t, bin, c.env, "", "users", "list")
		if r.code != c.code || r.stderr != c.want || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr\n%q\nwant %d, nothing, and\n%q", c.name, r.code, r.stdout, r.stderr, c.code, c.want)
		}
	}
	// The SDK's texts of the token endpoint's answers (its body withheld,
	// and so on), as the SDK's tests have them; here, what points the
	// operator to the variables.
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"token endpoint 404", setEnv(env, management.EnvBaseURL+"="+elsewhere.URL, management.EnvClientID+"="+elsewhere.ClientID),
			[]string{"management: POST /auth/token: 404", "check " + management.EnvBaseURL + " (or --base-url) and " + management.EnvPathPrefix}},
		{"token endpoint redirect", setEnv(env, management.EnvBaseURL+"="+redirect.URL),
			[]string{"management: POST /auth/token: 307", "redirect to another origin", "check " + management.EnvBaseURL + " (or --base-url) and " + management.EnvPathPrefix}},
	} {
		r := runTool(t, bin, c.env, "", "users", "list")
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
			t.Errorf("%s: exit %d, stderr %q; want 2 (configuration) and one line", c.name, r.code, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, r.stderr, w)
			}
		}
		if m := configField.FindString(r.stderr); m != "" {
			t.Errorf("%s: stderr names %q: %q", c.name, m, r.stderr)
		}
	}
}

// TestMaxRetriesZero: MANAGEMENT_MAX_RETRIES=0 is no retries, as an
// operator reads it: one attempt; unset, the default four retries.
func TestMaxRetriesZero(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 1)
	for _, c := range []struct {
		value    string
		attempts int
	}{{"0", 1}, {"", 5}} {
		srv.ClearFaults()
		srv.FailNext(managementtest.RouteListUsers, 10, http.StatusServiceUnavailable, 0)
		before := srv.Requests(managementtest.RouteListUsers)
		r := runTool(t, bin, setEnv(env, management.EnvMaxRetries+"="+c.value), "", "users", "list")
		const want = "management: GET /users: 503 MANAGEMENTTEST.INJECTED_FAULT: managementtest: injected failure\n"
		if got := srv.Requests(managementtest.RouteListUsers) - before; r.code != 1 || got != c.attempts || r.stderr != want {
			t.Errorf("%s=%q: exit %d, %d attempt(s), stderr\n%q\nwant 1, %d, and\n%q", management.EnvMaxRetries, c.value, r.code, got, r.stderr, c.attempts, want)
		}
	}
}

// TestRequestIDShown: a failed call's message quotes the answer's request
// id, the short not-found message included.
func TestRequestIDShown(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 1)
	answer := func(status int, body string) managementtest.Response {
		return managementtest.Response{Status: status, Header: http.Header{"X-Request-Id": {"req-4711"}, "Content-Type": {"application/json"}}, Body: body}
	}
	srv.FailNextWith(managementtest.RouteGetUser, 1, answer(404, `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"User u-x was not found"}`))
	if r := runTool(t, bin, env, "", "users", "get", "u-x"); r.code != 1 || r.stderr != "management: user u-x not found (request id req-4711)\n" {
		t.Errorf("404: exit %d, stderr %q", r.code, r.stderr)
	}
	srv.FailNextWith(managementtest.RouteListThings, 1, answer(409, `{"reason":"X.CONFLICT","error_message":"busy \u001b[2J"}`))
	if r := runTool(t, bin, env, "", "things", "list"); r.code != 1 || !strings.HasSuffix(r.stderr, `: 409 X.CONFLICT: busy \x1b[2J (request id req-4711)`+"\n") {
		t.Errorf("409: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestAssociateAcrossRuns: the first associate creates the Thing and says
// so, the second says it already existed; disassociate confirms, and the
// next read shows the association gone.
func TestAssociateAcrossRuns(t *testing.T) {
	bin := buildTool(t)
	_, env := fakeService(t, 1)
	args := []string{"users", "associate", "u-000000", "cam-9", "--model", "C-9", "--firmware-version", "1.0"}
	for i, want := range []string{
		"Associated Thing cam-9 with User u-000000: a new Thing, created now\n",
		"Associated Thing cam-9 with User u-000000: it already existed, and may have been associated already\n",
	} {
		if r := runTool(t, bin, env, "", args...); r.code != 0 || r.stderr != want || !strings.Contains(r.stdout, `"physical_id":"cam-9"`) {
			t.Errorf("associate %d: exit %d, stderr %q, stdout %q; want %q", i+1, r.code, r.stderr, r.stdout, want)
		}
	}
	if r := runTool(t, bin, env, "", "users", "disassociate", "u-000000", "cam-9"); r.code != 0 || r.stderr != "Disassociated Thing cam-9 from User u-000000\n" || r.stdout != "" {
		t.Errorf("disassociate: exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
	}
	if r := runTool(t, bin, env, "", "users", "get", "u-000000", "--jq", ".associated_things | length"); r.code != 0 || r.stdout != "0\n" {
		t.Errorf("after disassociate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestJSONNullAndJQ: token check's JSON has null where the service has
// null; --jq filters JSON output, and a bad expression is a usage error
// before any request.
func TestJSONNullAndJQ(t *testing.T) {
	bin := buildTool(t)
	srv, env := fakeService(t, 3)

	r := runTool(t, bin, setEnv(env, "MANAGEMENT_END_USER_TOKEN=not-a-token"), "", "token", "check", "-o", "json")
	var verdict map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &verdict); err != nil || r.code != 1 {
		t.Fatalf("token check: exit %d, %v: %q", r.code, err, r.stdout)
	}
	for _, k := range []string{"user_id", "user_role"} {
		if v, ok := verdict[k]; !ok || v != nil {
			t.Errorf("%s = %#v (present %t), want null", k, v, ok)
		}
	}

	r = runTool(t, bin, env, "", "users", "list", "-o", "json", "--jq", ".[].id")
	if r.code != 0 || r.stdout != "u-000002\nu-000001\nu-000000\n" {
		t.Errorf("--jq .[].id: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	before := srv.Requests(managementtest.RouteListUsers)
	for _, args := range [][]string{{"--jq", ".[] |"}, {"-o", "csv", "--jq", "."}} {
		r = runTool(t, bin, env, "", append([]string{"users", "list"}, args...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "management: --jq ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming --jq", args, r.code, r.stderr)
		}
	}
	if n := srv.Requests(managementtest.RouteListUsers) - before; n != 0 {
		t.Errorf("%d requests for rejected --jq flags, want none", n)
	}
}
