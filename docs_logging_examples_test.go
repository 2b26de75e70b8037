package management_test

// The first snippets of docs/client.md, docs/middleware.md and
// docs/outages.md, which give the Client a logger (the SDK logs nothing
// without one), exactly as the guides show them
// (TestReadmeSnippetsAreExamples checks that), and what runs them.

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// ExampleConfigFromEnv_logger is docs/client.md's first snippet: a Client
// from the environment that logs to standard error.
func ExampleConfigFromEnv_logger() {
	srv := newExampleServer()
	defer srv.Close()
	for name, value := range map[string]string{
		management.EnvBaseURL:      srv.URL,
		management.EnvClientID:     srv.ClientID,
		management.EnvClientSecret: srv.ClientSecret,
	} {
		os.Setenv(name, value)
		defer os.Unsetenv(name)
	}
	ctx := context.Background()

	cfg, err := management.ConfigFromEnv()
	if err != nil {
		log.Fatal(err) // names every missing or malformed variable
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)) // nil: the SDK logs nothing

	client, err := management.NewClient(cfg) // one Client for the process, shared by every goroutine
	if err != nil {
		log.Fatal(err)
	}
	user, err := client.Users.Get(ctx, "u-ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(user.ID, user.EmailVerificationStatus)
	// Output: u-ada Verified
}

// newLoggingClient returns the service's one Client, configured from the
// environment, logging to standard error: without a Logger the SDK logs
// nothing, and checks the service could not answer, stale passes and the
// breakers would go unseen.
func newLoggingClient() (*management.Client, error) {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	return management.NewClient(cfg)
}

// TestNewLoggingClient: the Client of newLoggingClient writes to standard
// error what the SDK logs at Info, here a retry; a Client without a Logger
// writes nothing there.
func TestNewLoggingClient(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	t.Setenv(management.EnvBaseURL, srv.URL)
	t.Setenv(management.EnvClientID, srv.ClientID)
	t.Setenv(management.EnvClientSecret, srv.ClientSecret)
	t.Setenv(management.EnvRetryWaitMin, "1ms")
	t.Setenv(management.EnvRetryWaitMax, "2ms")

	logged := stderrOf(t, func() {
		client, err := newLoggingClient()
		if err != nil {
			t.Fatal(err)
		}
		srv.FailNext(managementtest.RouteGetUser, 1, http.StatusServiceUnavailable, 0)
		if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(logged, `level=INFO msg="management: retrying"`) {
		t.Errorf("standard error holds no retry record:\n%s", logged)
	}

	silent := stderrOf(t, func() {
		cfg, err := management.ConfigFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		client, err := management.NewClient(cfg) // Logger nil: the default
		if err != nil {
			t.Fatal(err)
		}
		srv.FailNext(managementtest.RouteGetUser, 1, http.StatusServiceUnavailable, 0)
		if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
			t.Fatal(err)
		}
	})
	if silent != "" {
		t.Errorf("a Client without a Logger wrote to standard error:\n%s", silent)
	}
}

// stderrOf returns what f writes to os.Stderr, which it replaces with a
// pipe meanwhile.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		read <- string(b)
	}()
	saved := os.Stderr
	os.Stderr = w
	func() {
		defer func() { os.Stderr = saved; w.Close() }() // t.Fatal in f included
		f()
	}()
	return <-read
}
