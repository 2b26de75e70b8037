package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	"github.com/spf13/cobra"
)

// TestFakeServeFillsOptions: the flags land in the options; a count not
// given is -1, and the global --debug comes along.
func TestFakeServeFillsOptions(t *testing.T) {
	streams, _, _, _ := Test()
	f := NewFactory(streams)
	var got *FakeServeOptions
	root := NewRootCmd(f)
	root.RemoveCommand(mustFind(t, root, "fake"))
	root.AddCommand(group(&cobra.Command{Use: "fake"}, NewCmdFakeServe(f, func(o *FakeServeOptions) error { got = o; return nil })))
	parseInto(t, root, "--debug", "fake", "serve", "--listen", "127.0.0.1:0", "--things", "0", "--page-size", "7", "--seed-users", "u.jsonl")
	want := FakeServeOptions{Listen: "127.0.0.1:0", Users: -1, Things: 0, PageSize: 7, SeedUsers: "u.jsonl", Debug: true, Grace: shutdownGrace}
	if diff := cmp.Diff(want, *got, cmpopts.IgnoreFields(FakeServeOptions{}, "IO")); diff != "" {
		t.Errorf("fake serve options (-want +got):\n%s", diff)
	}
}

// TestFakeServeUsage: flags that cannot go together, or make no sense,
// are usage errors, before anything listens.
func TestFakeServeUsage(t *testing.T) {
	clearEnv(t)
	seed := writeSeed(t, `{"id":"u-1"}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fake", "fake", "serve"}, "--fake runs a command against a fake inside the tool; fake serve is that fake as a service: leave --fake out"},
		{[]string{"--base-url", "https://x.example", "fake", "serve"}, "fake serve takes no --base-url"},
		{[]string{"fake", "serve", "--users", "3", "--seed-users", seed}, "--seed-users and --users both choose the users: give one of them"},
		{[]string{"fake", "serve", "--things", "0", "--seed-things", seed}, "--seed-things and --things both choose the things"},
		{[]string{"fake", "serve", "--users", "-1"}, "--users -1: give a count of 0 or more"},
		{[]string{"fake", "serve", "--things=-3"}, "--things -3: give a count of 0 or more"},
		{[]string{"fake", "serve", "--things", "100001"}, "--things 100001: at most 100000"},
		{[]string{"fake", "serve", "--page-size", "0"}, "--page-size 0: it must be at least 1"},
		{[]string{"fake", "serve", "--listen", "8080"}, `--listen "8080": want host:port with a port number`},
		{[]string{"fake", "serve", "--listen", "127.0.0.1:http"}, `--listen "127.0.0.1:http"`},
		{[]string{"fake", "serve", "--listen", "127.0.0.1:65536"}, `--listen "127.0.0.1:65536"`},
		{[]string{"fake", "serve", "--seed-users", writeSeed(t, `{"id":"u-1"}`, `{"id":"u-1"}`)}, `line 2: User "u-1" is on line 1 already`},
		{[]string{"fake", "serve", "extra"}, `fake serve takes no arguments; got "extra"`},
	} {
		// Should a case serve, the stop ends it soon, and the test fails.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		r := env{ctx: ctx}.run(t, c.args...)
		cancel()
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, r.code, r.stdout, r.stderr, ExitUsage, c.want)
		}
	}
}

// TestFakeServeAddressInUse: exit 1, saying what to do.
func TestFakeServeAddressInUse(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := runCLI(t, "fake", "serve", "--listen", ln.Addr().String())
	want := "management: cannot listen on " + ln.Addr().String() + ": the address is in use (another fake?): stop what listens there, or choose another with --listen (port 0 picks a free port)\n"
	if r.code != ExitFailure || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", r.code, r.stdout, r.stderr, ExitFailure, want)
	}
}

// TestAdvertised: the printed URL names the address listened on, and
// 127.0.0.1 for an unspecified one; only loopback goes without warning,
// which says what the fake exposes. (Tests listen on loopback only: the
// warning's text is checked here, where it is made.)
func TestAdvertised(t *testing.T) {
	for _, c := range []struct {
		ip       net.IP
		url      string
		loopback bool
	}{
		{net.IPv4(127, 0, 0, 1), "http://127.0.0.1:8080", true},
		{net.IPv4(127, 0, 0, 2), "http://127.0.0.2:8080", true},
		{net.IPv6loopback, "http://[::1]:8080", true},
		{net.IPv4zero, "http://127.0.0.1:8080", false},
		{net.IPv6unspecified, "http://127.0.0.1:8080", false},
		{nil, "http://127.0.0.1:8080", false},
		{net.ParseIP("192.0.2.7"), "http://192.0.2.7:8080", false},
		{net.ParseIP("2001:db8::7"), "http://[2001:db8::7]:8080", false},
	} {
		url, loopback := advertised(&net.TCPAddr{IP: c.ip, Port: 8080})
		if url != c.url || loopback != c.loopback {
			t.Errorf("%v: %s, loopback %t; want %s, %t", c.ip, url, loopback, c.url, c.loopback)
		}
	}
	want := "management: warning: the fake listens on 0.0.0.0:8080, beyond this machine's loopback: whoever reaches it with the printed credentials can use it, over plain HTTP. It guards nothing real; clients on other machines need MANAGEMENT_ALLOW_INSECURE_HTTP=true."
	if got := exposedWarning(&net.TCPAddr{IP: net.IPv4zero, Port: 8080}); got != want {
		t.Errorf("the warning for 0.0.0.0:8080:\n%s\nwant\n%s", got, want)
	}
}

// TestFakeServeStops: a stop exits 0, not the 130 of an interrupted
// command, and standard output holds the three lines alone.
func TestFakeServeStops(t *testing.T) {
	clearEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // stopped as soon as it serves
	r := env{ctx: ctx}.run(t, "fake", "serve", "--listen", "127.0.0.1:0")
	got := lines(r.stdout)
	if r.code != ExitOK || len(got) != 3 || !strings.HasPrefix(got[0], "MANAGEMENT_BASE_URL=http://127.0.0.1:") ||
		got[1] != "MANAGEMENT_CLIENT_ID="+fakeClientID || !strings.HasPrefix(got[2], "MANAGEMENT_CLIENT_SECRET=") {
		t.Errorf("exit %d, stdout %q; want %d and the three lines", r.code, r.stdout, ExitOK)
	}
	secret := strings.TrimPrefix(got[2], "MANAGEMENT_CLIENT_SECRET=")
	if !strings.HasSuffix(r.stderr, "management: the fake stopped\n") || strings.Contains(r.stderr, secret) {
		t.Errorf("stderr %q; want the stop said, and no secret", r.stderr)
	}
}

// TestStopEndsRequestsUnderWay: a stop lets a request under way end
// within the grace, and cuts off one that would outlast it.
func TestStopEndsRequestsUnderWay(t *testing.T) {
	s, _ := newServed(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	cfg := s.srv.Config()
	cfg.BaseURL, cfg.HTTPClient, cfg.MaxRetries = "http://"+ln.Addr().String(), nil, -1
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil { // the token, first
		t.Fatal(err)
	}
	s.srv.DelayNext(managementtest.RouteGetUser, 1, 100*time.Millisecond)
	s.srv.DelayNext(managementtest.RouteListThings, 1, time.Minute)
	got, listed := make(chan error, 1), make(chan error, 1)
	go func() { _, err := client.Users.Get(t.Context(), "u-ada"); got <- err }()
	go func() {
		for _, err := range client.Things.List(t.Context(), nil) {
			listed <- err
			return
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); s.srv.Requests(managementtest.RouteGetUser) < 2 || s.srv.Requests(managementtest.RouteListThings) < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the requests did not reach the fake")
		}
		time.Sleep(time.Millisecond)
	}

	var errOut bytes.Buffer
	start := time.Now()
	stop(hs, 300*time.Millisecond, &errOut)
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("the stop took %v with a grace of 300ms", d)
	}
	if err := <-got; err != nil {
		t.Errorf("the request that ends within the grace: %v", err)
	}
	if err := <-listed; err == nil {
		t.Error("the request delayed by a minute succeeded; want it cut off")
	}
	if want := "management: the fake stopped; the requests still under way after 300ms were cut off\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

// mustFind returns root's subcommand name.
func mustFind(t *testing.T, root *cobra.Command, name string) *cobra.Command {
	t.Helper()
	cmd, _, err := root.Find([]string{name})
	if err != nil || cmd == root {
		t.Fatalf("no command %q", name)
	}
	return cmd
}
