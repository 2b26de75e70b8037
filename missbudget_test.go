package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// A flood of random tokens spends no more than the miss budget on calls to
// the service; cached verdicts keep being served, and a new token gets
// through as soon as the budget allows.
func TestMissBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		var calls atomic.Int32
		mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER"})
		})
		a := &Authenticator{Client: c, MissBudget: MissBudget{PerSecond: 10, Burst: 5}}
		serve := func(token string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			a.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, r)
			return rec
		}
		if rec := serve("known"); rec.Code != http.StatusOK {
			t.Fatalf("first token: %d", rec.Code)
		}
		refused := 0
		for i := range 100 {
			rec := serve(fmt.Sprintf("random-%d", i))
			if rec.Code == http.StatusServiceUnavailable {
				refused++
				if rec.Header().Get("Retry-After") != "1" {
					t.Errorf("refusal without Retry-After: 1: %v", rec.Header())
				}
			}
		}
		if got := calls.Load(); got != 5 { // the burst: the first token took 1, then 4 more at once
			t.Errorf("%d calls reached the service; want 5 (the burst)", got)
		}
		if refused != 96 {
			t.Errorf("%d refused; want 96", refused)
		}
		if rec := serve("known"); rec.Code != http.StatusOK {
			t.Errorf("a cached token over budget: %d; want 200", rec.Code)
		}
		time.Sleep(100 * time.Millisecond) // the budget refills one check every 100 ms
		if rec := serve("new-user"); rec.Code != http.StatusOK {
			t.Errorf("a new token once the budget allows: %d; want 200", rec.Code)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer another")
		if _, err := a.Check(r); !errors.Is(err, ErrOverMissBudget) || !errors.Is(err, ErrAuthenticationUnavailable) {
			t.Errorf("Check over budget: %v; want ErrOverMissBudget, matching ErrAuthenticationUnavailable", err)
		}
	})
}

func TestNoMissBudgetByDefault(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate",
		httpmock.NewJsonResponderOrPanic(http.StatusOK, map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER"}))
	a := &Authenticator{Client: c}
	for i := range 50 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", fmt.Sprintf("Bearer t-%d", i))
		if _, err := a.Check(r); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
}

// BenchmarkFloodOverBudgetWithStore is the cost of a random token refused
// over the miss budget when a shared store is set: the store is read first
// (the verdict may be there), so each costs store calls, reported per op;
// ns/op is the time a concurrency slot is held, on an in-memory store.
func BenchmarkFloodOverBudgetWithStore(b *testing.B) {
	f := newTestFleet(b)
	_, a := f.replica(Config{}, MissBudget{PerSecond: 1e-9, Burst: 1})
	if _, err := checkToken(context.Background(), a, "first"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // its lease released, the token written back
	f.store.resetCalls()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := checkToken(context.Background(), a, fmt.Sprint("random-", i)); !errors.Is(err, ErrOverMissBudget) {
			b.Fatalf("check %d: %v; want ErrOverMissBudget", i, err)
		}
	}
	b.StopTimer()
	time.Sleep(10 * time.Millisecond) // the leases' releases, which run as each check ends
	b.ReportMetric(float64(f.store.callsTo(""))/float64(b.N), "store-calls/op")
	if f.authn.Load() != 1 {
		b.Errorf("%d authenticate calls; want 1", f.authn.Load())
	}
}
