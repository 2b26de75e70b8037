package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// testFleet is replicas of one service sharing a memStore, each with its
// own Client (and mock transport) and Authenticator; the service's answers
// are counted across them.
type testFleet struct {
	t       testing.TB
	store   *memStore
	revoked atomic.Bool  // the authenticate endpoint answers invalid from now on
	authn   atomic.Int32 // authenticate calls
	slow    atomic.Int64 // how long the authenticate endpoint takes to answer (a time.Duration)
	tokens  atomic.Int32 // token requests
	life    int          // the tokens' lifetime in seconds
	mts     map[*Client]*httpmock.MockTransport
}

func newTestFleet(t testing.TB) *testFleet {
	return &testFleet{t: t, store: newMemStore(), life: 600, mts: map[*Client]*httpmock.MockTransport{}}
}

// replica starts one replica; cfg's zero fields get setup's values, and
// budget is its Authenticator's.
func (f *testFleet) replica(cfg Config, budget MissBudget) (*Client, *Authenticator) {
	cfg.SharedStore = f.store
	c, mt := setup(f.t, cfg)
	mt.RegisterResponder(http.MethodPost, tokenURL, func(*http.Request) (*http.Response, error) {
		n := f.tokens.Add(1)
		return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"access_token": fmt.Sprint("mgmt-", n), "token_type": "Bearer", "expires_in": f.life})
	})
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", func(*http.Request) (*http.Response, error) {
		f.authn.Add(1)
		time.Sleep(time.Duration(f.slow.Load()))
		if f.revoked.Load() {
			return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"is_token_valid": false})
		}
		return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER"})
	})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", jsonResponder(http.StatusOK, map[string]any{"id": "u-1"}))
	f.mts[c] = mt
	return c, &Authenticator{Client: c, SharedStore: f.store, MissBudget: budget}
}

// checkToken checks "Bearer <token>" within ctx.
func checkToken(ctx context.Context, a *Authenticator, token string) (*EndUser, error) {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return a.Check(r)
}

// Forget holds for the whole fleet: a check in flight on replica B whose
// answer from the service lands before A's Forget, but whose write lands
// after it, is never read by A, nor by a replica with nothing cached.
func TestForgetHoldsAcrossTheFleet(t *testing.T) {
	f := newTestFleet(t)
	_, a := f.replica(Config{}, MissBudget{})
	_, b := f.replica(Config{}, MissBudget{})
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.store.setHook(func(_ context.Context, op, key string) error {
		if op == "set" && strings.Contains(key, ":verdict:") && !strings.HasSuffix(key, ":epoch") {
			once.Do(func() { close(reached); <-release }) // B's write waits for A's Forget
		}
		return nil
	})
	ctx := context.Background()
	done := make(chan error)
	go func() {
		_, err := checkToken(ctx, b, "eu-1")
		done <- err
	}()
	<-reached
	f.revoked.Store(true) // the service revokes the token, then A forgets it
	if err := a.Forget(ctx, "Bearer eu-1"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("B's check, answered before the revocation: %v", err)
	}
	_, fresh := f.replica(Config{}, MissBudget{})
	for _, r := range []struct {
		name string
		auth *Authenticator
	}{{"A", a}, {"a fresh replica", fresh}} {
		if u, err := checkToken(ctx, r.auth, "eu-1"); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s after Forget: %v, %v; want ErrInvalidToken (B's late write not read)", r.name, u, err)
		}
	}
	if got := f.authn.Load(); got != 2 {
		t.Errorf("%d authenticate calls; want 2 (B, then A asks again and the fresh replica reads its verdict)", got)
	}
}

// Verdicts shared before and after a Forget: the epoch Forget sets is
// honoured by every replica, and sharing goes on under it.
func TestSharingGoesOnAfterForget(t *testing.T) {
	f := newTestFleet(t)
	_, a := f.replica(Config{}, MissBudget{})
	ctx := context.Background()
	if _, err := checkToken(ctx, a, "eu-1"); err != nil {
		t.Fatal(err)
	}
	seal := a.Client.seal
	legacy := seal.LegacyVerdictKey("Bearer eu-1") // as a replica not yet upgraded stored it
	f.store.put(legacy, []byte("sealed"), time.Minute)
	unfolded := seal.UnfoldedVerdictStem("Bearer eu-1") // as a replica of the layout before spellings stored it
	f.store.put(unfolded, []byte("sealed"), time.Minute)
	if err := a.Forget(ctx, "Bearer eu-1"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.store.keys(), legacy) {
		t.Error("Forget left the verdict of the layout before hash tags")
	}
	if slices.Contains(f.store.keys(), unfolded) {
		t.Error("Forget left the verdict of the layout before spellings")
	}
	// The layout before spellings reads the epoch of the value as
	// received: set for "Bearer eu-1", and one with the lower-case
	// scheme's ("bearer eu-1"), so that replicas not yet upgraded honour
	// the Forget for both spellings.
	for _, h := range []string{"Bearer eu-1", "bearer eu-1"} {
		if !slices.Contains(f.store.keys(), seal.UnfoldedVerdictStem(h)+":epoch") {
			t.Errorf("no epoch for %q where a replica of the layout before spellings reads it", h)
		}
	}
	if _, err := checkToken(ctx, a, "eu-1"); err != nil { // asks again, stores under the new epoch
		t.Fatal(err)
	}
	_, fresh := f.replica(Config{}, MissBudget{})
	if _, err := checkToken(ctx, fresh, "eu-1"); err != nil {
		t.Fatal(err)
	}
	if got := f.authn.Load(); got != 2 {
		t.Errorf("%d authenticate calls; want 2 (the fresh replica reads the verdict stored after Forget)", got)
	}
	// An epoch of a foreign shape is not trusted: the check asks the service.
	for _, k := range f.store.keys() {
		if strings.HasSuffix(k, ":epoch") {
			f.store.put(k, []byte("{not-an-epoch}"), time.Minute)
		}
	}
	_, other := f.replica(Config{}, MissBudget{})
	if _, err := checkToken(ctx, other, "eu-1"); err != nil {
		t.Fatal(err)
	}
	if got := f.authn.Load(); got != 3 {
		t.Errorf("%d authenticate calls; want 3 (a foreign epoch is a failing store)", got)
	}
}

// MissBudget is spent only by checks that reach the service: verdicts
// other replicas stored are read whatever the budget.
func TestMissBudgetSpentOnlyOnTheService(t *testing.T) {
	f := newTestFleet(t)
	_, a := f.replica(Config{}, MissBudget{})
	_, b := f.replica(Config{}, MissBudget{PerSecond: 0.001, Burst: 1})
	ctx := context.Background()
	for i := range 10 {
		if _, err := checkToken(ctx, a, fmt.Sprint("eu-", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if _, err := checkToken(ctx, b, fmt.Sprint("eu-", i)); err != nil {
			t.Errorf("a token whose verdict is in the store, on a replica with a budget of 1: %v", err)
		}
	}
	if _, err := checkToken(ctx, b, "new-1"); err != nil {
		t.Errorf("the first new token: %v; want it within the budget", err)
	}
	if _, err := checkToken(ctx, b, "new-2"); !errors.Is(err, ErrOverMissBudget) {
		t.Errorf("the second new token: %v; want ErrOverMissBudget", err)
	}
	if got := f.authn.Load(); got != 11 {
		t.Errorf("%d authenticate calls; want 11", got)
	}
}

// A check after Forget does not wait behind the lease of a check that
// another replica started before it: leases are per epoch.
func TestCheckAfterForgetDoesNotWaitOnTheOldLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, a := f.replica(Config{}, MissBudget{})
		f.store.squat(c.seal.VerdictSlot("Bearer eu-1")+":lease", time.Minute) // B, asking the service
		ctx := context.Background()
		if err := a.Forget(ctx, "Bearer eu-1"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := checkToken(ctx, a, "eu-1"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the check after Forget took %v; want no wait", took)
		}
	})
}
