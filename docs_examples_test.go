package management_test

// The snippets of declarations of the README and the guides under docs/
// that readme_examples_test.go does not hold, exactly as they show them
// (TestReadmeSnippetsAreExamples checks that), and the tests that run them
// against the fake.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// reportBatteryLow reports a Thing's battery low, unless its battery
// status already says so; its other fields stay as they are.
func reportBatteryLow(ctx context.Context, client *management.Client, physicalID string) error {
	thing, err := client.Things.Get(ctx, physicalID)
	if err != nil {
		return err
	}
	for _, s := range thing.Statuses {
		if s.Name == "battery" && s.StatusValue == "low" {
			return nil
		}
	}
	_, err = client.Things.Update(ctx, physicalID, management.ThingUpdate{
		Statuses: []management.ThingStatus{{Name: "battery", StatusValue: "low", Date: management.NewTimestamp(time.Now())}},
	})
	return err
}

func TestReportBatteryLow(t *testing.T) {
	srv := newExampleServer() // thermo-42's battery is "ok"
	defer srv.Close()
	for range 2 {
		if err := reportBatteryLow(t.Context(), srv.Client(), "thermo-42"); err != nil {
			t.Fatal(err)
		}
	}
	thing, _ := srv.Thing("thermo-42")
	if len(thing.Statuses) != 1 || thing.Statuses[0].StatusValue != "low" || thing.CustomSettings["eco"] != true {
		t.Errorf("after reportBatteryLow, thermo-42 is %+v; want its battery low and its settings kept", thing)
	}
	if n := srv.Requests(managementtest.RouteUpdateThing); n != 1 {
		t.Errorf("%d updates, want 1: the second call finds the battery already low", n)
	}
	if err := reportBatteryLow(t.Context(), srv.Client(), "no-such-thing"); !errors.Is(err, management.ErrNotFound) {
		t.Errorf("reportBatteryLow of an unknown Thing = %v; want ErrNotFound", err)
	}
}

func TestGreetsAda(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada", FirstName: management.Ptr("Ada")}})

	user, err := srv.Client().Users.Get(t.Context(), "u-ada") // hand srv.Client() to the code under test
	if err != nil || *user.FirstName != "Ada" {
		t.Fatalf("Users.Get = %+v, %v; want Ada", user, err)
	}
}

// userWithin reads a User, giving up after d, retries and their waits
// included.
func userWithin(ctx context.Context, client *management.Client, id string, d time.Duration) (*management.UserDetails, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return client.Users.Get(ctx, id)
}

func TestUserWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		defer srv.Close()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		client := srv.Client()
		if u, err := userWithin(t.Context(), client, "u-ada", time.Second); err != nil || u.ID != "u-ada" {
			t.Fatalf("userWithin = %+v, %v; want Ada", u, err)
		}
		srv.DelayNext(managementtest.RouteGetUser, 1, time.Minute)
		start := time.Now()
		_, err := userWithin(t.Context(), client, "u-ada", time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("userWithin of a slow answer = %v after %v; want the deadline's error after 1s", err, time.Since(start))
		}
	})
}

// newBatchClient returns a Client for a nightly job: up to 8 retries,
// waiting 1 s to 2 min between attempts (a Retry-After up to 2 min is
// honoured).
func newBatchClient(cfg management.Config) (*management.Client, error) {
	cfg.MaxRetries = 8
	cfg.RetryWaitMin = time.Second
	cfg.RetryWaitMax = 2 * time.Minute
	return management.NewClient(cfg)
}

func TestNewBatchClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		defer srv.Close()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		client, err := newBatchClient(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		srv.FailNext(managementtest.RouteGetUser, 8, http.StatusServiceUnavailable, 90*time.Second)
		start := time.Now()
		if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
			t.Fatalf("Users.Get after 8 answers 503 = %v; want success on the ninth attempt", err)
		}
		if got, want := time.Since(start), 8*90*time.Second; got != want {
			t.Errorf("the call took %v, want %v: 8 waits of the 90 s Retry-After", got, want)
		}
	})
}

// newAuthenticator returns the middleware of a public API: however many
// random tokens arrive, at most 50 checks a second (in bursts of up to
// 100) reach the service.
func newAuthenticator(client *management.Client) *management.Authenticator {
	return &management.Authenticator{
		Client:     client,
		MissBudget: management.MissBudget{PerSecond: 50, Burst: 100},
	}
}

func TestNewAuthenticator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		defer srv.Close()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		ada := "Bearer " + srv.IssueEndUserToken("u-ada")
		auth := newAuthenticator(srv.Client())
		check := func(header string) error {
			r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
			r.Header.Set("Authorization", header)
			_, err := auth.Check(r)
			return err
		}
		if err := check(ada); err != nil {
			t.Fatal(err)
		}
		refused := 0
		for i := range 200 {
			if errors.Is(check("Bearer random-"+strings.Repeat("x", i)), management.ErrOverMissBudget) {
				refused++
			}
		}
		if err := check(ada); err != nil {
			t.Errorf("Ada's cached token after the flood: %v; want it served", err)
		}
		if n := srv.Requests(managementtest.RouteAuthenticate); n != 100 || refused != 101 {
			t.Errorf("a flood of 200 random tokens: %d reached the service and %d were refused; want 100 and 101 (the burst after Ada's check)", n, refused)
		}
	})
}

// signOut forgets the request's End User token, which the identity
// provider has just revoked, so that it is not accepted for the rest of
// CacheTTL.
func signOut(auth *management.Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := auth.Forget(r.Context(), r.Header.Get("Authorization")); err != nil {
			http.Error(w, "sign-out failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestSignOut(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	token := srv.IssueEndUserToken("u-ada")
	auth := &management.Authenticator{Client: srv.Client()}
	mux := http.NewServeMux()
	mux.Handle("GET /me", auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	mux.Handle("POST /sign-out", signOut(auth))
	status := func(method, path string) int {
		r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w.Code
	}
	if got := status("GET", "/me"); got != http.StatusOK {
		t.Fatalf("GET /me with Ada's token = %d, want 200", got)
	}
	srv.RevokeEndUserToken(token)
	if got := status("GET", "/me"); got != http.StatusOK {
		t.Fatalf("GET /me with the revoked token, still cached = %d, want 200", got)
	}
	if got := status("POST", "/sign-out"); got != http.StatusNoContent {
		t.Fatalf("POST /sign-out = %d, want 204", got)
	}
	if got := status("GET", "/me"); got != http.StatusUnauthorized {
		t.Errorf("GET /me after sign-out = %d, want 401", got)
	}
}

// newLoggedClient returns a Client that writes its log records, Debug
// included, as JSON lines to w.
func newLoggedClient(cfg management.Config, w io.Writer) (*management.Client, error) {
	cfg.Logger = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return management.NewClient(cfg)
}

func TestNewLoggedClient(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	var out bytes.Buffer
	client, err := newLoggedClient(srv.Config(), &out)
	if err != nil {
		t.Fatal(err)
	}
	srv.FailNext(managementtest.RouteGetUser, 1, http.StatusBadGateway, 0)
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for line := range strings.Lines(out.String()) {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		msgs = append(msgs, rec.Level+" "+rec.Msg)
	}
	for _, want := range []string{"DEBUG management: attempt", "INFO management: retrying"} {
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("the log has no %q record:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), srv.ClientSecret) {
		t.Errorf("the log holds the client secret:\n%s", out.String())
	}
}

// retriedCalls returns an Observer that logs each operation that needed
// more than one attempt: its route (never its ids), final status, attempts
// and the time spent waiting between them.
func retriedCalls(logger *slog.Logger) *management.Observer {
	return &management.Observer{
		OperationDone: func(ctx context.Context, op management.Operation, r management.OperationResult) {
			if r.Attempts > 1 {
				logger.WarnContext(ctx, "management call retried", "route", op.Name(), "status", r.Status, "attempts", r.Attempts, "waited", r.RetryWait)
			}
		},
	}
}

func TestRetriedCalls(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	var out bytes.Buffer
	cfg := srv.Config()
	cfg.Observer = retriedCalls(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "time" || a.Key == "waited" {
				return slog.Attr{} // they vary from run to run
			}
			return a
		},
	})))
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil { // one attempt: not logged
		t.Fatal(err)
	}
	srv.FailNext(managementtest.RouteGetUser, 2, http.StatusServiceUnavailable, 0)
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	want := `level=WARN msg="management call retried" route="GET /users/{user_id}" status=200 attempts=3` + "\n"
	if out.String() != want {
		t.Errorf("retriedCalls logged\n%s\nwant\n%s", out.String(), want)
	}
}

func TestAnHourOfTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer() // tokens live 10 minutes
		defer srv.Close()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		client := srv.Client()
		for range 6 {
			if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Minute) // the fake clock: no real wait
		}
		if n := srv.Requests(managementtest.RouteToken); n != 6 {
			t.Errorf("%d token requests in an hour, want 6: one per token lifetime", n)
		}
	})
}
