package managementtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// helperT is a testing.TB for running a test helper: it notes failures
// and cleanups instead of failing the test that runs it.
type helperT struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	fatal    bool
	cleanups []func()
}

func (h *helperT) Helper() {}
func (h *helperT) Error(args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errors = append(h.errors, fmt.Sprint(args...))
}
func (h *helperT) Errorf(format string, args ...any) { h.Error(fmt.Sprintf(format, args...)) }
func (h *helperT) Fatal(args ...any) {
	h.Error(args...)
	h.fatal = true
	runtime.Goexit()
}
func (h *helperT) Fatalf(format string, args ...any) { h.Fatal(fmt.Sprintf(format, args...)) }
func (h *helperT) Cleanup(f func())                  { h.cleanups = append(h.cleanups, f) }

// cleanup runs the cleanups, last first.
func (h *helperT) cleanup() {
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
	h.cleanups = nil
}

// run calls f with h on a goroutine of its own, as Fatal needs.
func (h *helperT) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(h)
	}()
	<-done
}

// useCassette runs UseCassette with a helperT.
func useCassette(t *testing.T, path string, opts managementtest.RecordOptions) (management.Config, *helperT) {
	h := &helperT{TB: t}
	var cfg management.Config
	h.run(func(tb testing.TB) { cfg = managementtest.UseCassette(tb, path, opts) })
	return cfg, h
}

// Record once (the cassette is missing), then replay it with no service;
// "all" records it again; replay is the default, and a missing cassette
// then fails the test.
func TestUseCassette(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithPageSize(2))
	defer srv.Close()
	seedSandbox(srv)
	path := filepath.Join(t.TempDir(), "testdata", "scenario.json")
	opts := managementtest.RecordOptions{
		AllowedBaseURLs: []string{srv.URL},
		AllowWrites:     true,
		Live:            func() (management.Config, error) { return srv.Config(), nil },
	}
	run := func(h *helperT, cfg management.Config, tokens [2]string) string {
		t.Helper()
		if h.fatal || len(h.errors) > 0 {
			t.Fatalf("UseCassette failed: %q", h.errors)
		}
		client, err := management.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		saw := scenario(t.Context(), client, tokens)
		h.cleanup()
		if len(h.errors) > 0 {
			t.Fatalf("the test failed at its end: %q", h.errors)
		}
		return saw
	}

	t.Setenv(managementtest.EnvRecord, "once")
	cfg, h := useCassette(t, path, opts)
	recorded := run(h, cfg, [2]string{srv.IssueEndUserToken("u-2"), "nobody"})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no cassette was written: %v", err)
	}

	srv.Close()
	for _, mode := range []string{"once", "", "replay"} {
		t.Setenv(managementtest.EnvRecord, mode)
		replayOpts := opts
		if mode == "replay" {
			replayOpts = managementtest.RecordOptions{} // a replay reads none of them: no AllowedBaseURLs needed
		}
		cfg, h = useCassette(t, path, replayOpts)
		if got := run(h, cfg, [2]string{"token-a", "token-b"}); got != recorded {
			t.Errorf("%s=%q: the replay saw\n%s\nthe recording\n%s", managementtest.EnvRecord, mode, got, recorded)
		}
	}

	// A replay that asks for more than was recorded fails the test when
	// it ends.
	cfg, h = useCassette(t, path, opts)
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.Users.Get(t.Context(), "u-2")
	h.cleanup()
	if len(h.errors) != 1 || !strings.Contains(h.errors[0], "has no answer left for GET") {
		t.Errorf("a replay with a request not recorded failed with %q; want one error naming the request", h.errors)
	}

	// Recording again needs the service: "all" records even though the
	// cassette is there, and fails where the sandbox is down.
	t.Setenv(managementtest.EnvRecord, "all")
	cfg, h = useCassette(t, path, opts)
	client, err = management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-1"); err == nil {
		t.Error("with EnvRecord=all, a request was answered with the fake stopped")
	}
	h.cleanup()

	for _, tc := range []struct{ mode, path, want string }{
		{"", filepath.Join(t.TempDir(), "missing.json"), "UseCassette and MANAGEMENTTEST_RECORD=once, against a sandbox"},
		{"sometimes", path, "want replay, once or all"},
	} {
		t.Setenv(managementtest.EnvRecord, tc.mode)
		_, h = useCassette(t, tc.path, opts)
		if !h.fatal || len(h.errors) != 1 || !strings.Contains(h.errors[0], tc.want) {
			t.Errorf("%s=%q, %s: UseCassette failed with %q; want %q", managementtest.EnvRecord, tc.mode, tc.path, h.errors, tc.want)
		}
	}
}

// Recording checks the live Config's base URL against the allowed ones
// before anything is sent.
func TestUseCassetteRecordsOnlyWhereAllowed(t *testing.T) {
	t.Setenv(managementtest.EnvRecord, "once")
	path := filepath.Join(t.TempDir(), "c.json")
	_, h := useCassette(t, path, managementtest.RecordOptions{
		AllowedBaseURLs: []string{"https://sandbox.example.com"},
		Live: func() (management.Config, error) {
			return management.Config{BaseURL: "https://prod.example.com", ClientID: "id", ClientSecret: "secret"}, nil
		},
	})
	if !h.fatal || len(h.errors) != 1 || !strings.Contains(h.errors[0], "is not among RecordOptions.AllowedBaseURLs") {
		t.Errorf("UseCassette against another base URL failed with %q", h.errors)
	}
	t.Setenv(management.EnvBaseURL, "")
	_, h = useCassette(t, path, managementtest.RecordOptions{AllowedBaseURLs: []string{"https://sandbox.example.com"}})
	if !h.fatal || len(h.errors) != 1 || !strings.Contains(h.errors[0], "needs the sandbox's Config") || !strings.Contains(h.errors[0], management.EnvBaseURL) {
		t.Errorf("UseCassette without a Config in the environment failed with %q", h.errors)
	}
}
