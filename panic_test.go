package management

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Containment of the code the SDK hosts (a RoundTripper, a TokenSource, a
// SharedStore, Observer hooks) when it panics or hangs in a goroutine of the
// SDK's own. A regression would kill the test binary, so the panicking
// cases run in a child process (TestPanicChild), which this test starts.

const panicChildEnv = "MANAGEMENT_TEST_PANIC_CHILD"

func TestHostedPanicsFailClosed(t *testing.T) {
	if os.Getenv(panicChildEnv) != "" {
		t.Skip("the parent's test")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestPanicChild")) {
		t.Fatalf("the child process failed (%v): a hosted panic escaped or a case failed:\n%s", err, out)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answerJSON is a 200 JSON answer of body to r.
func answerJSON(r *http.Request, status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// serviceTransport answers the token endpoint with mockToken and the
// authenticate endpoint with a valid APPUSER verdict, after calling hook
// (which may panic or block) for every authenticate request.
func serviceTransport(hook func(r *http.Request, body string)) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/auth/token") {
			return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
		}
		b, _ := io.ReadAll(r.Body)
		if hook != nil {
			hook(r, string(b))
		}
		return answerJSON(r, 200, `{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER"}`), nil
	})
}

// logBuffer is a concurrency-safe buffer for a logger.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestPanicChild(t *testing.T) {
	if os.Getenv(panicChildEnv) == "" {
		t.Skip("run by TestHostedPanicsFailClosed in a child process")
	}
	const forged = "Bearer eu-forged-token-1"
	tests := []struct {
		name string
		cfg  func(*Config)
		// panics is the number of panics a check meets: a hook called
		// for the token request and for the check's own panics in both
		// flights.
		panics int
	}{
		{"AuthCallsInFlight hook writes to a nil map", func(c *Config) {
			var gauge map[string]int
			c.Observer = &Observer{AuthCallsInFlight: func(context.Context, int) { gauge["calls"]++ }}
		}, 1},
		{"RoundTripper panics with its *http.Request", func(c *Config) {
			c.HTTPClient = &http.Client{Transport: serviceTransport(func(r *http.Request, _ string) { panic(r) })}
		}, 1},
		{"RoundTripper panics quoting its headers", func(c *Config) {
			c.HTTPClient = &http.Client{Transport: serviceTransport(func(r *http.Request, body string) {
				panic(fmt.Sprintf("boom: %v %s", r.Header, body))
			})}
		}, 1},
		{"TokenSource panics", func(c *Config) {
			c.ClientID, c.ClientSecret = "", ""
			c.TokenSource = panickingSource{}
		}, 1},
		{"OperationStart hook panics", func(c *Config) {
			c.Observer = &Observer{OperationStart: func(context.Context, Operation) context.Context { panic("hook") }}
		}, 1},
		{"OperationDone hook panics", func(c *Config) {
			c.Observer = &Observer{OperationDone: func(context.Context, Operation, OperationResult) { panic("hook") }}
		}, 2},
		{"AttemptStart hook panics", func(c *Config) {
			c.Observer = &Observer{AttemptStart: func(context.Context, Operation, Attempt) context.Context { panic("hook") }}
		}, 1},
		{"AttemptDone hook panics", func(c *Config) {
			c.Observer = &Observer{AttemptDone: func(context.Context, Operation, Attempt, AttemptResult) { panic("hook") }}
		}, 1},
		{"Retry hook panics", func(c *Config) {
			c.MaxRetries = 1
			c.Observer = &Observer{Retry: func(context.Context, Operation, RetryInfo) { panic("hook") }}
			c.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if strings.HasSuffix(r.URL.Path, "/auth/token") {
					return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
				}
				return answerJSON(r, 503, `{}`), nil
			})}
		}, 1},
		{"TokenSource's Invalidate panics on a 401", func(c *Config) {
			c.ClientID, c.ClientSecret = "", ""
			c.TokenSource = invalidatePanics{}
			c.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return answerJSON(r, 401, `{}`), nil
			})}
		}, 1},
	}
	for _, tt := range tests {
		// In a bubble, so that the flights' goroutines are done (they log
		// once they have answered) before the next request and before the
		// log is read.
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := &logBuffer{}
				cfg := Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
					Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
					HTTPClient: &http.Client{Transport: serviceTransport(nil)}}
				tt.cfg(&cfg)
				c, err := NewClient(cfg)
				if err != nil {
					t.Fatal(err)
				}
				a := &Authenticator{Client: c}
				var ran atomic.Int32
				h := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran.Add(1) }))
				for i := range 5 {
					w := httptest.NewRecorder()
					r := httptest.NewRequest(http.MethodGet, "/api", nil)
					r.Header.Set("Authorization", fmt.Sprintf("%s-%d", forged, i))
					h.ServeHTTP(w, r)
					// The flights log once they have answered, and count as
					// running until then: the next request comes after.
					synctest.Wait()
					if w.Code != http.StatusServiceUnavailable {
						t.Errorf("run %d: status %d, want 503", i, w.Code)
					}
				}
				if n := ran.Load(); n != 0 {
					t.Errorf("the protected handler ran %d times", n)
				}
				r := httptest.NewRequest(http.MethodGet, "/api", nil)
				r.Header.Set("Authorization", forged+"-check")
				if _, err := a.Check(r); !errors.Is(err, ErrAuthenticationUnavailable) || !strings.Contains(err.Error(), "panicked") {
					t.Errorf("Check = %v; want ErrAuthenticationUnavailable saying the call panicked", err)
				}
				synctest.Wait()
				text := logs.String()
				if n, want := strings.Count(text, `"level":"ERROR"`), 6*tt.panics; n != want {
					t.Errorf("%d Error records, want one a panic (%d):\n%s", n, want, text)
				}
				if !strings.Contains(text, `"stack":"goroutine`) {
					t.Errorf("no stack logged:\n%s", text)
				}
				for _, secret := range []string{mockToken, "eu-forged-token", mockSecret} {
					if strings.Contains(text, secret) {
						t.Errorf("the log holds %q:\n%s", secret, text)
					}
				}
			})
		})
	}
	t.Run("token request panics", func(t *testing.T) {
		var panics atomic.Bool
		panics.Store(true)
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if panics.Load() {
					panic(r)
				}
				if strings.HasSuffix(r.URL.Path, "/auth/token") {
					return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
				}
				return answerJSON(r, 200, `{"id":"u-1"}`), nil
			})}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Users.Get(t.Context(), "u-1"); err == nil || !strings.Contains(err.Error(), "management token request panicked") {
			t.Fatalf("Get = %v; want the token request's panic as an error", err)
		}
		panics.Store(false)
		if u, err := c.Users.Get(t.Context(), "u-1"); err != nil || u.ID != "u-1" {
			t.Errorf("after the panic: Get = %v, %v; want u-1 (the flight was removed)", u, err)
		}
	})
	t.Run("prefetch panics in the ranging goroutine", func(t *testing.T) {
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/auth/token"):
					return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
				case r.URL.RawQuery == "":
					return answerJSON(r, 200, `{"users":[{"id":"a"}],"next_page":"`+defaultPathPrefix+`/users?page=2"}`), nil
				}
				panic("page 2")
			})}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if p := recover(); p != "page 2" {
				t.Errorf("recovered %v; want the prefetch's panic, raised in the ranging goroutine", p)
			}
		}()
		for _, err := range c.Users.List(t.Context(), &ListOptions{Prefetch: true}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("1000 panics leave nothing behind", testPanicsLeaveNothingBehind)
	t.Run("shared store panics", testStorePanics)
	t.Run("Logger panics", testLoggerPanics)
}

// A SharedStore that panics on every call, in the goroutine that bounds
// the call by SharedStoreTimeout, fails that store call only: the calls and
// checks go on without the store, the panic is logged at Error, redacted.
func testStorePanics(t *testing.T) {
	synctest.Test(t, testStorePanicsInBubble)
}

func testStorePanicsInBubble(t *testing.T) {
	logs := &logBuffer{}
	store := newMemStore()
	store.hook = func(_ context.Context, op, _ string) error {
		panic("store " + op + " with password " + mockSecret)
	}
	c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
		SharedStore: store, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		HTTPClient: &http.Client{Transport: serviceTransport(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{Client: c, SharedStore: store}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer eu-valid-1")
	if u, err := a.Check(r); err != nil || u.ID != "u-1" {
		t.Errorf("Check with a panicking store = %v, %v; want u-1", u, err)
	}
	if err := a.Forget(t.Context(), r.Header.Get("Authorization")); err != nil {
		t.Errorf("Forget with a panicking store = %v; want nil (logged)", err)
	}
	synctest.Wait() // the store calls' goroutines, the token's write-back included, are done
	if n := c.stores.Running(); n != 0 {
		t.Errorf("%d store calls counted as running after they panicked; want 0", n)
	}
	text := logs.String()
	if !strings.Contains(text, `"level":"ERROR"`) || !strings.Contains(text, "store get") {
		t.Errorf("the store's panic was not logged at Error:\n%s", text)
	}
	if strings.Contains(text, mockSecret) {
		t.Errorf("the log holds the client secret:\n%s", text)
	}
}

type panickingSource struct{}

func (panickingSource) Token(context.Context) (*Token, error) { panic("token source") }

// invalidatePanics is a TokenSource whose optional Invalidate panics.
type invalidatePanics struct{}

func (invalidatePanics) Token(context.Context) (*Token, error) {
	return &Token{AccessToken: mockToken}, nil
}
func (invalidatePanics) Invalidate(*Token) { panic("invalidate") }

// After 1 000 checks whose call panics, a valid token still passes: the
// flights are removed, the slots and leases released, nothing cached, and
// the gauge of calls in flight is back to 0.
func testPanicsLeaveNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gauge atomic.Int64
		store := newMemStore()
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			SharedStore: store,
			Observer:    &Observer{AuthCallsInFlight: func(_ context.Context, d int) { gauge.Add(int64(d)) }},
			HTTPClient: &http.Client{Transport: serviceTransport(func(r *http.Request, body string) {
				if strings.Contains(body, "boom") {
					panic(r)
				}
			})}})
		if err != nil {
			t.Fatal(err)
		}
		a := &Authenticator{Client: c, SharedStore: store, MaxConcurrentChecks: 2}
		for i := range 1000 {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Authorization", fmt.Sprintf("Bearer boom-%d", i))
			if _, err := a.Check(r); !errors.Is(err, ErrAuthenticationUnavailable) {
				t.Fatalf("check %d: %v; want ErrAuthenticationUnavailable", i, err)
			}
		}
		synctest.Wait() // the flights' goroutines, and the leases' releases, are done
		a.mu.Lock()
		calls, inflight, cached := a.calls, len(a.inflight), a.cache.Len()
		a.mu.Unlock()
		if calls != 0 || inflight != 0 || cached != 0 || gauge.Load() != 0 || store.held() != 0 {
			t.Errorf("left behind: %d calls, %d flights, %d cached, gauge %d, %d leases; want none",
				calls, inflight, cached, gauge.Load(), store.held())
		}
		// MaxConcurrentChecks is whole: two checks at once both get a verdict.
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("Authorization", fmt.Sprintf("Bearer eu-valid-%d", i))
				if u, err := a.Check(r); err != nil || u.ID != "u-1" {
					t.Errorf("valid token after the panics: %v, %v", u, err)
				}
			})
		}
		wg.Wait()
	})
}

// A hook, RoundTripper or TokenSource that blocks past its context releases
// the waiters at their deadline; the calls it leaves behind are bounded
// (by MaxConcurrentChecks, and for token requests by maxTokenCalls) and
// logged.
func TestHangingHostedCodeIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		logs := &logBuffer{}
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			Logger:     slog.New(slog.NewTextHandler(logs, nil)),
			HTTPClient: &http.Client{Transport: serviceTransport(func(*http.Request, string) { <-release })}})
		if err != nil {
			t.Fatal(err)
		}
		a := &Authenticator{Client: c, MaxConcurrentChecks: 2, Timeout: time.Second}
		check := func(tok string) error {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			_, err := a.Check(r)
			return err
		}
		for i := range 2 {
			start := time.Now()
			if err := check(fmt.Sprintf("eu-hang-%d", i)); !errors.Is(err, ErrAuthenticationUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("check %d: %v; want ErrAuthenticationUnavailable at the deadline", i, err)
			}
			if d := time.Since(start); d > time.Second+abandonGrace {
				t.Errorf("check %d answered after %v; want at most Timeout and the grace", i, d)
			}
		}
		if err := check("eu-hang-3"); !errors.Is(err, ErrTooManyChecks) {
			t.Errorf("a third check while two calls hang: %v; want ErrTooManyChecks (the calls left behind are bounded)", err)
		}
		synctest.Wait() // the timers log once they have answered
		if n := strings.Count(logs.String(), "left running"); n != 2 {
			t.Errorf("%d records of a call left running, want 2:\n%s", n, logs)
		}
		close(release)
		synctest.Wait()
		if err := check("eu-after"); err != nil {
			t.Errorf("once the calls returned: %v; want a verdict", err)
		}
	})
}

func TestHangingTokenRequestsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				<-release // ignores the request's context
				return answerJSON(r, 500, `{}`), nil
			})}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range maxTokenCalls {
			if _, err := c.Users.Get(context.Background(), "u-1"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("call %d: %v; want the token request's deadline", i, err)
			}
		}
		start := time.Now()
		if _, err := c.Users.Get(context.Background(), "u-1"); err == nil || !strings.Contains(err.Error(), "still running") || time.Since(start) != 0 {
			t.Errorf("with %d token requests left running: %v after %v; want an error at once", maxTokenCalls, err, time.Since(start))
		}
		close(release)
		synctest.Wait()
	})
}

// A zero Client, or a nil *Client, says to use NewClient.
func TestZeroClientSaysUseNewClient(t *testing.T) {
	var nilClient *Client
	for name, c := range map[string]*Client{"zero": {}, "nil": nilClient} {
		if _, err := c.Authenticate(t.Context(), "Bearer eu-12345678"); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "use NewClient") {
			t.Errorf("%s Client: Authenticate = %v; want ErrInvalidArgument saying to use NewClient", name, err)
		}
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "use NewClient") {
				t.Errorf("zero Client's Users.Get panicked with %v; want a panic saying to use NewClient", p)
			}
		}()
		_, _ = (&Client{}).Users.Get(t.Context(), "u-1")
	}()
	for name, c := range map[string]*Client{"zero": {}, "nil": nil} {
		a := &Authenticator{Client: c}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer eu-12345678")
		if _, err := a.Check(r); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "use NewClient") {
			t.Errorf("Authenticator of a %s Client: Check = %v; want ErrInvalidArgument saying to use NewClient", name, err)
		}
		if err := a.Forget(t.Context(), "Bearer eu-12345678"); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "use NewClient") {
			t.Errorf("Authenticator of a %s Client: Forget = %v; want ErrInvalidArgument saying to use NewClient", name, err)
		}
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "use NewClient") {
					t.Errorf("Authenticator of a %s Client: Handler panicked with %v; want a panic saying to use NewClient", name, p)
				}
			}()
			a.Handler(http.NotFoundHandler())
		}()
	}
}
