package management

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// failingStore is a SharedStore that is down: every operation fails. (The
// SharedStore behaviour against a real Redis is tested in redisstore.) Its
// calls run in the SDK's goroutines, the token's write-back among them,
// which may outlive the call that started it: calls is atomic.
type failingStore struct{ calls atomic.Int64 }

var errStoreDown = errors.New("store down")

func (s *failingStore) Get(context.Context, string) ([]byte, error) {
	s.calls.Add(1)
	return nil, errStoreDown
}
func (s *failingStore) Set(context.Context, string, []byte, time.Duration) error {
	s.calls.Add(1)
	return errStoreDown
}
func (s *failingStore) Delete(context.Context, string) error { s.calls.Add(1); return errStoreDown }
func (s *failingStore) TryLock(context.Context, string, time.Duration) (func(context.Context) error, bool, error) {
	s.calls.Add(1)
	return nil, false, errStoreDown
}

func TestSharedStoreSetup(t *testing.T) {
	store := &failingStore{}
	src := staticSource("t")
	for name, cfg := range map[string]Config{
		"TokenSource without a key": {BaseURL: mockBaseURL, TokenSource: src, SharedStore: store},
		"a short key":               {BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, SharedStore: store, SharedStoreKey: []byte("short")},
		"a negative timeout":        {BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, SharedStore: store, SharedStoreTimeout: -1},
	} {
		if _, err := NewClient(cfg); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: NewClient err = %v; want ErrInvalidArgument", name, err)
		}
	}
	key := bytes.Repeat([]byte("k"), 32)
	if _, err := NewClient(Config{BaseURL: mockBaseURL, TokenSource: src, SharedStore: store, SharedStoreKey: key}); err != nil {
		t.Errorf("TokenSource with a key: %v", err)
	}

	// An Authenticator sharing verdicts needs a Client that can seal them.
	keyless, err := NewClient(Config{BaseURL: mockBaseURL, TokenSource: src})
	if err != nil {
		t.Fatal(err)
	}
	a := &Authenticator{Client: keyless, SharedStore: store}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer eu-1")
	if _, err := a.Check(r); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "SharedStoreKey") {
		t.Errorf("Check err = %v; want ErrInvalidArgument naming Config.SharedStoreKey", err)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "SharedStoreKey") {
			t.Errorf("Handler panic = %v; want one naming Config.SharedStoreKey", p)
		}
	}()
	a.Handler(http.NotFoundHandler())
}

// A store that is down fails no call, is never taken for a verdict, and is
// logged once however many calls meet it.
func TestFailingStoreFailsNoCall(t *testing.T) {
	synctest.Test(t, testFailingStoreFailsNoCall)
}

func testFailingStoreFailsNoCall(t *testing.T) {
	logs := &logBuffer{} // the write-back goroutine may log after the checks
	store := &failingStore{}
	c, mt := setup(t, Config{SharedStore: store, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate",
		jsonResponder(http.StatusOK, map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER"}))
	a := &Authenticator{Client: c, SharedStore: store}
	for i := range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer eu-"+string(rune('a'+i)))
		u, err := a.Check(r)
		if err != nil || u.ID != "u-1" {
			t.Fatalf("check %d: %v, %v; want u-1", i, u, err)
		}
	}
	if store.calls.Load() == 0 {
		t.Fatal("the store was never asked")
	}
	synctest.Wait()                                                            // the write-back, and the judgements of what it left
	if got := strings.Count(logs.String(), "shared store failing"); got != 1 { // the Client's breaker opened once
		t.Errorf("%d records of the failing store; want 1 (the breaker opening, for tokens and verdicts alike):\n%s", got, logs.String())
	}
	if strings.Contains(logs.String(), "eu-a") || strings.Contains(logs.String(), mockToken) {
		t.Error("a log record carries a token")
	}
}
