package management

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A Config.Logger is hosted code too: its slog.Handler may panic. In a
// goroutine of the SDK's own, that panic must neither kill the process nor
// keep a waiter; a panic while logging a panic is dropped.

// panickingHandler is a slog.Handler that panics on each record whose
// message contains on and hands the others to Handler (nil: drops them).
type panickingHandler struct {
	slog.Handler
	on string
}

func (h panickingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h panickingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.on) {
		panic("slog handler: " + r.Message)
	}
	if h.Handler == nil {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h panickingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panickingHandler) WithGroup(string) slog.Handler      { return h }

// panickingLogger is a Logger whose handler panics on the records whose
// message contains on, and drops the others.
func panickingLogger(on string) *slog.Logger { return slog.New(panickingHandler{on: on}) }

// checkWithStore checks a valid token with an Authenticator whose store
// runs hook before each operation, and wants the verdict: a store that
// fails or panics fails no check. It returns the Authenticator's Client.
func checkWithStore(t *testing.T, cfg Config, hook func(context.Context, string, string) error) *Client {
	t.Helper()
	store := newMemStore()
	store.hook = hook
	c, err := NewClient(cfg)
	must(t, err)
	a := &Authenticator{Client: c, SharedStore: store}
	if u, err := a.Check(checkRequest("Bearer eu-1")); err != nil || u.ID != "u-1" {
		t.Errorf("Check = %v, %v; want u-1 (the store fails, the check goes on without it)", u, err)
	}
	return c
}

// failingOn is a memStore hook that fails each operation op.
func failingOn(op string) func(context.Context, string, string) error {
	return func(_ context.Context, o, _ string) error {
		if o == op {
			return errors.New("store down")
		}
		return nil
	}
}

// checkRequest is a request whose Authorization header is header.
func checkRequest(header string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", header)
	return r
}

// testLoggerPanics runs in the child process (TestPanicChild): each case
// killed the process before its fix. Each waits (synctest) for the
// goroutines it started, so that a panic in one of them is this case's.
func testLoggerPanics(t *testing.T) {
	cfg := func(logger *slog.Logger, rt http.RoundTripper) Config {
		return Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
			Logger: logger, HTTPClient: &http.Client{Transport: rt}}
	}
	// The flight's recover logs the panic of the code it hosts, with
	// nothing above it.
	t.Run("while the flight logs a panic", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, err := NewClient(cfg(panickingLogger("panicked"), serviceTransport(func(r *http.Request, _ string) { panic("transport") })))
			must(t, err)
			a := &Authenticator{Client: c}
			if _, err := a.Check(checkRequest("Bearer eu-1")); !errors.Is(err, ErrAuthenticationUnavailable) || !strings.Contains(err.Error(), "panicked") {
				t.Errorf("Check = %v; want ErrAuthenticationUnavailable saying the call panicked", err)
			}
			synctest.Wait()
		})
	})
	// The abandon timer (time.AfterFunc) logs the call it leaves running.
	t.Run("in the abandon timer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			c, err := NewClient(cfg(panickingLogger("left running"), serviceTransport(func(*http.Request, string) { <-release })))
			must(t, err)
			a := &Authenticator{Client: c, Timeout: time.Second}
			if _, err := a.Check(checkRequest("Bearer eu-1")); !errors.Is(err, ErrAuthenticationUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Check = %v; want ErrAuthenticationUnavailable at the deadline", err)
			}
			close(release)
			synctest.Wait()
		})
	})
	// The token's write-back goroutine logs a store that fails.
	t.Run("in the token write-back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newMemStore()
			store.hook = failingOn("set")
			config := cfg(panickingLogger("shared store failing"), serviceTransport(nil))
			config.SharedStore = store
			c, err := NewClient(config)
			must(t, err)
			if _, err := c.Authenticate(t.Context(), "Bearer eu-1"); err != nil {
				t.Errorf("Authenticate = %v; want a verdict", err)
			}
			synctest.Wait()
			if n := store.held(); n != 0 {
				t.Errorf("%d leases held after the write-back; want it released though the log panicked", n)
			}
		})
	})
	// The verdict lease's unlock (context.AfterFunc) logs a store that
	// fails.
	t.Run("in the verdict lease's unlock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			checkWithStore(t, cfg(panickingLogger("shared store failing"), serviceTransport(nil)), failingOn("unlock"))
			synctest.Wait()
		})
	})
	// The breaker's probe runs in a goroutine of its own, and its success
	// logs the store answering again.
	t.Run("in the breaker's probe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			hook := func(context.Context, string, string) error {
				if down.Load() {
					return errors.New("store down")
				}
				return nil
			}
			c, err := NewClient(cfg(panickingLogger("answering again"), serviceTransport(nil)))
			must(t, err)
			store := newMemStore()
			store.hook = hook
			a := &Authenticator{Client: c, SharedStore: store}
			for i := range storeFailures { // failures in a row open the breaker
				if _, err := a.Check(checkRequest(fmt.Sprint("Bearer eu-", i))); err != nil {
					t.Error(err)
				}
			}
			if !c.stores.Breaker.IsOpen() {
				t.Fatal("the store's failures did not open the breaker")
			}
			down.Store(false)
			time.Sleep(time.Second)                                             // past the cool-down
			if _, err := a.Check(checkRequest("Bearer eu-probe")); err != nil { // starts the probe
				t.Error(err)
			}
			synctest.Wait()
			if c.stores.Breaker.IsOpen() {
				t.Error("the probe's success did not close the breaker")
			}
		})
	})
	// A store call its caller left early (its budget spent) is judged
	// when its time is up, by a timer (context.AfterFunc): the third such
	// timeout opens the breaker, which logs.
	t.Run("in the judgement of a store call its caller left", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			store := newMemStore()
			store.hook = func(context.Context, string, string) error { <-release; return nil }
			c, err := NewClient(cfg(panickingLogger("shared store failing"), serviceTransport(nil)))
			must(t, err)
			a := &Authenticator{Client: c, SharedStore: store}
			for i := range storeFailures {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // a budget of 50ms
				r := checkRequest(fmt.Sprint("Bearer eu-", i)).WithContext(ctx)
				if _, err := a.Check(r); err != nil {
					t.Error(err)
				}
				cancel()
			}
			time.Sleep(2 * defaultSharedStoreTimeout) // the calls' time is up
			synctest.Wait()
			if !c.stores.Breaker.IsOpen() {
				t.Error("three store calls without an answer in their time did not open the breaker")
			}
			close(release)
			synctest.Wait()
		})
	})
	// The store call's goroutine logs the store's panic.
	t.Run("while a store call logs its panic", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := checkWithStore(t, cfg(panickingLogger("panicked"), serviceTransport(nil)),
				func(context.Context, string, string) error { panic("store") })
			synctest.Wait()
			if n := c.stores.Running(); n != 0 {
				t.Errorf("%d store calls counted as running; want 0", n)
			}
		})
	})
	// The prefetch's goroutine hands any panic to the ranging goroutine, a
	// Logger's (here on the retry of page 2) as any other.
	t.Run("in the prefetch", func(t *testing.T) {
		var page2 atomic.Int32
		config := cfg(panickingLogger("retrying"), roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/auth/token"):
				return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
			case r.URL.RawQuery == "":
				return answerJSON(r, 200, `{"users":[{"id":"a"}],"next_page":"`+defaultPathPrefix+`/users?page=2"}`), nil
			}
			page2.Add(1)
			return answerJSON(r, 503, `{}`), nil
		}))
		config.MaxRetries = 1
		c, err := NewClient(config)
		must(t, err)
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), "slog handler") {
				t.Errorf("recovered %v; want the handler's panic, raised in the ranging goroutine", p)
			}
		}()
		for _, err := range c.Users.List(t.Context(), &ListOptions{Prefetch: true}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// blockingHandler is a slog.Handler that blocks on each record whose
// message contains on until release is closed, and drops the others.
type blockingHandler struct {
	on      string
	release chan struct{}
}

func (h blockingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h blockingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.on) {
		<-h.release
	}
	return nil
}

func (h blockingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h blockingHandler) WithGroup(string) slog.Handler      { return h }

// A Logger whose handler panics, or blocks, on the record of a token
// refresh that succeeded after a run of failures does not keep the callers
// waiting for that refresh: the flight publishes its result before it
// logs.
func TestRefreshLogReleasesWaiters(t *testing.T) {
	const record = "succeeded again"
	t.Run("panics", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			logs := &logBuffer{}
			testRefreshLog(t, slog.NewJSONHandler(logs, nil), record)
			synctest.Wait()
			if text := logs.String(); !strings.Contains(text, "token refresh failed") || !strings.Contains(text, "panicked in the background") {
				t.Errorf("want the run of failures logged, and the handler's panic at Error:\n%s", text)
			}
		})
	})
	t.Run("blocks", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			testRefreshLog(t, blockingHandler{on: record, release: release}, "")
			close(release)
			synctest.Wait()
		})
	})
}

// testRefreshLog has a token refresh fail while the token is valid (a run
// of failures starts), then waits, once the token has expired, for a
// refresh that succeeds (the run ends, logged at Info). With panicOn set,
// the handler panics on that record, else h handles it.
func testRefreshLog(t *testing.T, h slog.Handler, panicOn string) {
	var failing atomic.Bool
	if panicOn != "" {
		h = panickingHandler{Handler: h, on: panicOn}
	}
	c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1,
		Logger: slog.New(h),
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch {
			case !strings.HasSuffix(r.URL.Path, "/auth/token"):
				return answerJSON(r, 200, `{"id":"u-1"}`), nil
			case failing.Load():
				return answerJSON(r, 503, `{}`), nil
			}
			return answerJSON(r, 200, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":60}`), nil
		})}})
	must(t, err)
	get := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}
	must(t, get()) // a token that expires at 60 s, due for refresh at 54 s
	failing.Store(true)
	time.Sleep(55 * time.Second)
	must(t, get()) // served the current token; its refresh fails: a run of failures starts
	synctest.Wait()
	failing.Store(false)
	time.Sleep(6 * time.Second) // expired: the next call waits for the refresh, which succeeds
	start := time.Now()
	if err := get(); err != nil {
		t.Errorf("waiting for a refresh whose log panicked or blocked: %v after %v; want the token", err, time.Since(start))
	}
}
