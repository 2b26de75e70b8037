package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
)

// The tests of this file run management fake serve as a test in another
// language would: a process, its three lines read from standard output,
// the API reached with the SDK and the control endpoints with plain HTTP,
// then a signal.

// fakeProc is a running fake serve.
type fakeProc struct {
	cmd    *exec.Cmd
	cfg    management.Config // from the three lines; no retries
	done   chan error
	rest   *lockedBuffer // standard output after the three lines
	stderr *lockedBuffer
}

// lockedBuffer is a bytes.Buffer that a process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startFake starts fake serve with args and reads its three lines.
func startFake(t *testing.T, bin string, args ...string) *fakeProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"fake", "serve"}, args...)...)
	cmd.Env = unconfigured()
	p := &fakeProc{cmd: cmd, done: make(chan error, 1), rest: new(lockedBuffer), stderr: new(lockedBuffer)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan []string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		var got []string
		for range 3 {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			got = append(got, line)
		}
		lines <- got
		_, _ = io.Copy(p.rest, r)
		p.done <- cmd.Wait() // after the pipe is read to its end, as Wait requires
	}()
	var got []string
	select {
	case got = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatalf("fake serve printed no three lines in 20s; stderr:\n%s", p.stderr)
	}
	if len(got) != 3 {
		t.Fatalf("fake serve printed %q, then ended; stderr:\n%s", got, p.stderr)
	}
	for i, name := range []string{management.EnvBaseURL, management.EnvClientID, management.EnvClientSecret} {
		value, ok := strings.CutPrefix(strings.TrimSuffix(got[i], "\n"), name+"=")
		if !ok || value == "" {
			t.Fatalf("line %d is %q; want %s=...", i+1, got[i], name)
		}
		*[]*string{&p.cfg.BaseURL, &p.cfg.ClientID, &p.cfg.ClientSecret}[i] = value
	}
	p.cfg.MaxRetries = -1 // a fault is felt, not retried away
	return p
}

// stop sends sig and checks that the fake exits 0 with nothing more on
// standard output.
func (p *fakeProc) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("after %v, fake serve ended with %v; want exit 0\nstderr:\n%s", sig, err, p.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("fake serve still runs 10s after %v", sig)
	}
	if rest := p.rest.String(); rest != "" {
		t.Errorf("standard output after the three lines: %q", rest)
	}
}

// client returns an SDK client of the fake.
func (p *fakeProc) client(t *testing.T) *management.Client {
	t.Helper()
	c, err := management.NewClient(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// control sends a control request, with the fake's credentials unless
// noAuth, and returns the status and body.
func (p *fakeProc) control(t *testing.T, method, path, body string, noAuth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.cfg.BaseURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !noAuth {
		req.SetBasicAuth(p.cfg.ClientID, p.cfg.ClientSecret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// must sends a control request that must get status want.
func (p *fakeProc) must(t *testing.T, method, path, body string, want int) string {
	t.Helper()
	status, got := p.control(t, method, path, body, false)
	if status != want {
		t.Fatalf("%s %s %s: %d %s; want %d", method, path, body, status, got, want)
	}
	return got
}

// TestFakeServe drives fake serve as a test in another language does:
// the SDK lists, reads, updates and authenticates; plain HTTP issues and
// revokes a token, stages a fault and clears it, reads the log and meets
// each refusal; SIGTERM ends it with exit 0.
func TestFakeServe(t *testing.T) {
	bin := buildTool(t)
	p := startFake(t, bin, "--listen", "127.0.0.1:0")
	if !strings.HasPrefix(p.cfg.BaseURL, "http://127.0.0.1:") || strings.HasSuffix(p.cfg.BaseURL, ":0") || p.cfg.ClientID != "management-cli-fake" {
		t.Errorf("the three lines: %s, %s; want a free port on 127.0.0.1 and the fake's client", p.cfg.BaseURL, p.cfg.ClientID)
	}
	client, ctx := p.client(t), t.Context()

	var ids []string
	for u, err := range client.Users.List(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	if want := []string{"u-katherine", "u-alan", "u-anon-1", "u-grace", "u-ada"}; !cmp.Equal(ids, want) {
		t.Errorf("Users.List: %v, want the Users of --fake, newest first: %v", ids, want)
	}
	if ada, err := client.Users.Get(ctx, "u-ada"); err != nil || *ada.Email != "ada@example.com" || len(ada.AssociatedThings) != 1 {
		t.Errorf("Users.Get(u-ada): %+v, %v", ada, err)
	}
	if th, err := client.Things.Update(ctx, "thermo-42", management.ThingUpdate{Name: management.Ptr("Porch")}); err != nil || th.Name != "Porch" {
		t.Errorf("Things.Update: %+v, %v", th, err)
	}

	var issued struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(p.must(t, "POST", "/_fake/end-user-tokens", `{"user_id":"u-ada"}`, 201)), &issued); err != nil || issued.AccessToken == "" {
		t.Fatalf("the issued token: %v", err)
	}
	if auth, err := client.Authenticate(ctx, "Bearer "+issued.AccessToken); err != nil || !auth.Valid || auth.UserID != "u-ada" {
		t.Errorf("Authenticate the issued token: %+v, %v; want Ada's", auth, err)
	}
	p.must(t, "POST", "/_fake/end-user-tokens/revoke", `{"access_token":"`+issued.AccessToken+`"}`, 204)
	if auth, err := client.Authenticate(ctx, "Bearer "+issued.AccessToken); err != nil || auth.Valid {
		t.Errorf("Authenticate the revoked token: %+v, %v; want invalid", auth, err)
	}

	p.must(t, "POST", "/_fake/faults", `{"route":"GET /things/{thing_physical_id}","count":5,"status":500,"retry_after":"2s"}`, 204)
	var apiErr *management.APIError
	if _, err := client.Things.Get(ctx, "lamp-7"); !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.RetryAfter != 2*time.Second {
		t.Errorf("Things.Get during the fault: %v; want a 500 asking for 2s", err)
	}
	p.must(t, "DELETE", "/_fake/faults", "", 204)
	if _, err := client.Things.Get(ctx, "lamp-7"); err != nil {
		t.Errorf("Things.Get once the faults were cleared: %v", err)
	}

	// Each refusal, before the log is read: none of them is in it.
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"no credentials", "POST", "/_fake/reset", "", 401, "Basic credentials"},
		{"too large", "POST", "/_fake/users", `{"id":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "1 MiB"},
		{"malformed JSON", "POST", "/_fake/faults", `{"route": "GET /users",`, 400, "the body is not"},
		{"unknown route", "POST", "/_fake/faults", `{"route":"GET /user","status":500}`, 400, `unknown route \"GET /user\"; the routes are POST /auth/token, GET /users,`},
		{"unknown user", "POST", "/_fake/end-user-tokens", `{"user_id":"u-nobody"}`, 404, `no User \"u-nobody\"`},
		{"count below 1", "POST", "/_fake/faults", `{"route":"GET /users","count":0,"status":500}`, 400, "count is 0"},
		{"status outside 100-599", "POST", "/_fake/faults", `{"route":"GET /users","status":600}`, 400, "status 600 is outside 100 to 599"},
		{"retry_after unparsable", "POST", "/_fake/faults", `{"route":"GET /users","status":503,"retry_after":"soon"}`, 400, `retry_after \"soon\" is not a Go duration`},
		{"delay unparsable", "POST", "/_fake/faults", `{"route":"GET /users","delay":"5"}`, 400, `delay \"5\" is not a Go duration`},
		{"unknown endpoint", "POST", "/_fake/fault", `{}`, 400, "no control endpoint POST /_fake/fault; the control endpoints are"},
	} {
		status, body := p.control(t, c.method, c.path, c.body, c.name == "no credentials")
		if status != c.status || !strings.Contains(body, c.want) || !json.Valid([]byte(body)) {
			t.Errorf("%s: %d %s; want %d and a JSON error with %q", c.name, status, body, c.status, c.want)
		}
	}

	log := p.must(t, "GET", "/_fake/requests", "", 200)
	var entries []struct {
		Method, Route, Path, Time string
		Status                    int
	}
	if err := json.Unmarshal([]byte(log), &entries); err != nil || len(entries) != 8 {
		t.Fatalf("GET /_fake/requests: %v, %d entries; want the 8 of the SDK:\n%s", err, len(entries), log)
	}
	fault := entries[6] // token, list, get, update, authenticate twice, then the fault
	if fault.Method != "GET" || fault.Route != "GET /things/{thing_physical_id}" || fault.Path != "/v2/api/management/service_connect/things/lamp-7" ||
		fault.Status != 500 || len(fault.Time) != len("2026-01-05T09:00:00.000Z") {
		t.Errorf("the faulted request is logged as %+v", fault)
	}
	for _, secret := range []string{p.cfg.ClientSecret, issued.AccessToken, "Bearer", "Basic", "/_fake/"} {
		if strings.Contains(log, secret) {
			t.Errorf("the request log holds %q:\n%s", secret, log)
		}
	}

	p.must(t, "POST", "/_fake/reset", "", 204)
	if th, err := client.Things.Get(ctx, "thermo-42"); err != nil || th.Name != "Hall thermostat" {
		t.Errorf("thermo-42 after reset: %+v, %v; want its starting name", th, err)
	}

	p.stop(t, syscall.SIGTERM)
	stderr := p.stderr.String()
	for _, secret := range []string{p.cfg.ClientSecret, issued.AccessToken} {
		if strings.Contains(stderr, secret) {
			t.Errorf("standard error holds a credential:\n%s", stderr)
		}
	}
	if !strings.HasSuffix(stderr, "management: the fake stopped\n") || strings.Contains(stderr, "warning") {
		t.Errorf("standard error:\n%s\nwant no warning, and the stop said", stderr)
	}
}

// TestFakeServeSeeds: the Users and Things one fake serves, generated,
// exported with the tool, seed another that serves them the same; SIGINT
// ends either with exit 0.
func TestFakeServeSeeds(t *testing.T) {
	bin := buildTool(t)
	dir := t.TempDir()
	first := startFake(t, bin, "--listen", "127.0.0.1:0", "--users", "30", "--things", "4", "--page-size", "7")
	env := append(unconfigured(), management.EnvBaseURL+"="+first.cfg.BaseURL,
		management.EnvClientID+"="+first.cfg.ClientID, management.EnvClientSecret+"="+first.cfg.ClientSecret)
	for _, kind := range []string{"users", "things"} {
		if r := runIn(t, bin, env, dir, kind, "export", "--out", kind+".jsonl"); r.code != 0 {
			t.Fatalf("%s export: exit %d\n%s", kind, r.code, r.stderr)
		}
	}
	want := listAll(t, first.client(t))
	first.stop(t, os.Interrupt)

	second := startFake(t, bin, "--listen", "127.0.0.1:0", "--page-size", "3",
		"--seed-users", filepath.Join(dir, "users.jsonl"), "--seed-things", filepath.Join(dir, "things.jsonl"))
	if got := listAll(t, second.client(t)); !cmp.Equal(want, got) {
		t.Errorf("the seeded fake lists otherwise (-first +seeded):\n%s", cmp.Diff(want, got))
	}
	if len(want.Users) != 30 || len(want.Things) != 4 || want.Users[0].ID != "u-30" || want.Things[3].PhysicalID != "thing-1" {
		t.Errorf("the generated data: %d Users from %s, %d Things to %s; want 30 from u-30 and 4 to thing-1",
			len(want.Users), want.Users[0].ID, len(want.Things), want.Things[3].PhysicalID)
	}
	second.stop(t, os.Interrupt)
}

// listed is what a fake's lists hold.
type listed struct {
	Users  []management.User
	Things []management.Thing
}

func listAll(t *testing.T, c *management.Client) listed {
	t.Helper()
	var l listed
	for u, err := range c.Users.List(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		l.Users = append(l.Users, *u)
	}
	for th, err := range c.Things.List(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		l.Things = append(l.Things, *th)
	}
	return l
}

// TestFakeServeRefusesToStart: what cannot be served is said on standard
// error, with nothing on standard output: exit 2 for usage, 1 for an
// address in use.
func TestFakeServeRefusesToStart(t *testing.T) {
	bin := buildTool(t)
	dir := t.TempDir()
	seed := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(seed, []byte(`{"id":"u-1","email":null,"first_name":null,"last_name":null,"created_at":"2026-01-05T09:00:00.000Z","updated_at":"2026-01-05T09:00:00.000Z"}`+"\n{\"id\":\"u-2\",\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--fake", "fake", "serve", "--listen", "127.0.0.1:0"}, 2, "leave --fake out"},
		{[]string{"fake", "serve", "--listen", "127.0.0.1:0", "--users", "3", "--seed-users", seed}, 2, "--seed-users and --users both choose the users"},
		{[]string{"fake", "serve", "--listen", "127.0.0.1:0", "--seed-users", seed}, 2, "--seed-users " + seed + ": line 2: not a User"},
		{[]string{"fake", "serve", "--listen", busy.Addr().String()}, 1, "cannot listen on " + busy.Addr().String() + ": the address is in use"},
	} {
		r := runIn(t, bin, unconfigured(), dir, c.args...)
		if r.code != c.code || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, r.code, r.stdout, r.stderr, c.code, c.want)
		}
	}
}
