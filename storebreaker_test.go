package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/serviceconnect/management/internal/fleet"
)

// breakerLog records what an Observer's BreakerChange is told.
type breakerLog struct {
	mu   sync.Mutex
	seen []BreakerInfo
}

func (l *breakerLog) observer() *Observer {
	return &Observer{BreakerChange: func(_ context.Context, b BreakerInfo) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.seen = append(l.seen, b)
	}}
}

func (l *breakerLog) all() []BreakerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]BreakerInfo(nil), l.seen...)
}

// A store that hangs, ignoring its context, costs a replica one timeout,
// not one per check: with a new token checked every 7 ms, whatever the
// checks before it are doing, those that start before the first three
// operations are judged failed (twice SharedStoreTimeout from their start:
// an answer that late would still be the store's) wait for the store
// exactly one SharedStoreTimeout; every later one goes on at once (the probes, one after each
// cool-down, run in the background). Once the store answers, it is used
// again within one cool-down; the breaker's opening and closing are logged
// once each and told to the Observer.
func TestHungStoreCostsOneTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var logs logBuffer
		var seen breakerLog
		c, a := f.replica(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Observer: seen.observer()}, MissBudget{})
		a.MaxConcurrentChecks = 1000
		ctx := context.Background()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the token stored
		var hung atomic.Bool
		var calls atomic.Int64
		release := make(chan struct{})
		hung.Store(true)
		f.store.setHook(func(context.Context, string, string) error {
			calls.Add(1)
			if hung.Load() {
				<-release
			}
			return nil
		})
		const tick = 7 * time.Millisecond // no check starts as an operation times out
		waited := make([]time.Duration, 100)
		var wg sync.WaitGroup
		for i := range waited {
			wg.Go(func() {
				began := time.Now()
				if _, err := checkToken(ctx, a, fmt.Sprint("eu-", i)); err != nil {
					t.Error(err)
				}
				waited[i] = time.Since(began)
			})
			time.Sleep(tick) // the pace of the requests
		}
		wg.Wait()
		onset := 2*defaultSharedStoreTimeout + 2*tick // the third operation, started at 2 ticks, is judged failed
		for i, w := range waited {
			if began := time.Duration(i) * tick; (began < onset && w != defaultSharedStoreTimeout) || (began >= onset && w != 0) {
				t.Errorf("the check started at %v waited %v; want %v before %v, nothing after", began, w, defaultSharedStoreTimeout, onset)
			}
		}
		tried := calls.Load() // the operations of the onset, and one per probe
		if got := int(f.authn.Load()); got != len(waited) {
			t.Errorf("%d authenticate calls; want %d (each check on its own)", got, len(waited))
		}

		hung.Store(false)
		close(release)
		synctest.Wait()
		answered, before := time.Now(), calls.Load()
		probes := tried - int64(onset/tick) - 1
		coolDown := (defaultSharedStoreTimeout << max(probes, 0)) * 12 / 10 // doubled by each failed probe, jittered up to 20% more
		for i := 0; calls.Load() == before; i++ {
			if time.Since(answered) > coolDown {
				t.Fatalf("the store was not used within %v (one cool-down) after it answered again", coolDown)
			}
			if _, err := checkToken(ctx, a, fmt.Sprint("eu-after-", i)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tick)
		}
		synctest.Wait() // the probe's answer
		before = calls.Load()
		if _, err := checkToken(ctx, a, "eu-last"); err != nil || calls.Load() == before {
			t.Errorf("a check after the probe: %v, %d store calls; want the store used again", err, calls.Load()-before)
		}

		text := logs.String()
		if n := strings.Count(text, "level=WARN msg=\"management: shared store failing"); n != 1 {
			t.Errorf("%d Warn records of the failing store; want 1:\n%s", n, text)
		}
		if n := strings.Count(text, "level=INFO msg=\"management: shared store answering again"); n != 1 || !strings.Contains(text, "skipped=") {
			t.Errorf("%d Info records of the store answering again; want 1, with what was skipped:\n%s", n, text)
		}
		got := seen.all()
		if len(got) != 2 || got[0].Breaker != BreakerSharedStore || !got[0].Open || got[1].Open {
			t.Fatalf("the Observer was told %+v; want the store's breaker opening, then closing", got)
		}
		if !errors.Is(got[0].Err, context.DeadlineExceeded) || got[0].CoolDown < defaultSharedStoreTimeout*8/10 || got[0].CoolDown > defaultSharedStoreTimeout*12/10 {
			t.Errorf("opening %+v; want the timeout's error and a cool-down near SharedStoreTimeout", got[0])
		}
		if after := int64(len(waited)) - int64(onset/tick) - 1; got[1].Skipped < after-2 || got[1].OpenFor <= 0 { // the probes apart
			t.Errorf("closing %+v; want the skipped operations (at least one per check) and how long it was open", got[1])
		}
	})
}

// While the breaker is open, a check goes on as without a store, but a
// verdict stays in the in-process cache at most 5 s (sharedFirstLevelTTL),
// as with a store: another replica's Forget reaches it within that.
func TestOpenBreakerKeepsTheFirstLevelCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		_, a := f.replica(Config{}, MissBudget{})
		f.store.setHook(func(context.Context, string, string) error { return errStoreDown })
		ctx := context.Background()
		for _, after := range []time.Duration{0, sharedFirstLevelTTL - time.Millisecond, sharedFirstLevelTTL} {
			time.Sleep(after)
			if _, err := checkToken(ctx, a, "eu-1"); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.authn.Load(); got != 2 {
			t.Errorf("%d authenticate calls; want 2 (the verdict cached for %v, no longer)", got, sharedFirstLevelTTL)
		}
	})
}

// A call waits for the store at most SharedStoreTimeout in all (or half
// its time left), however many operations it makes, and the service's
// time is never eaten by the store's: with each operation taking 700 ms
// within a SharedStoreTimeout of 750 ms, a check still gets the service's
// verdict after 750 ms; with a Timeout of 600 or 800 ms and a store that
// hangs or whose leases are all held, a check asks the service within half
// its Timeout.
func TestStoreBudgetLeavesTheServiceItsTime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		timeout   time.Duration // Authenticator.Timeout; 0: the default
		hook      func(f *testFleet) func(ctx context.Context, op, key string) error
		wantAsked time.Duration // the latest the service may be asked
	}{
		{"operations of 700ms", 0, func(*testFleet) func(context.Context, string, string) error {
			return func(context.Context, string, string) error { time.Sleep(700 * time.Millisecond); return nil }
		}, 750 * time.Millisecond},
		{"Timeout 600ms, store hung", 600 * time.Millisecond, hangingHook, 300 * time.Millisecond},
		{"Timeout 800ms, store hung", 800 * time.Millisecond, hangingHook, 400 * time.Millisecond},
		{"Timeout 600ms, leases squatted", 600 * time.Millisecond, squattingHook, 300 * time.Millisecond},
		{"Timeout 800ms, leases squatted", 800 * time.Millisecond, squattingHook, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newTestFleet(t)
				c, a := f.replica(Config{SharedStoreTimeout: 750 * time.Millisecond}, MissBudget{})
				a.Timeout = tc.timeout
				if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the token stored and its lease released
				start := time.Now()
				var asked time.Duration
				f.mts[c].RegisterResponder(http.MethodPost, mockPrefix+"/authenticate",
					func(*http.Request) (*http.Response, error) {
						asked = time.Since(start)
						return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"is_token_valid": true, "user_id": "u-1", "user_role": "APPUSER"})
					})
				f.store.setHook(tc.hook(f))
				if _, err := checkToken(context.Background(), a, "eu-1"); err != nil {
					t.Fatalf("check: %v; want the service's verdict", err)
				}
				if asked == 0 || asked > tc.wantAsked {
					t.Errorf("the service was asked %v after the check started; want within %v", asked, tc.wantAsked)
				}
				time.Sleep(time.Second) // the operations left behind end
			})
		})
	}
}

// hangingHook hangs every store operation, ignoring its context, until
// the test ends.
func hangingHook(f *testFleet) func(context.Context, string, string) error {
	stop := make(chan struct{})
	f.t.Cleanup(func() { close(stop) })
	return func(context.Context, string, string) error { <-stop; return nil }
}

// squattingHook holds every lease another holder than the replica.
func squattingHook(f *testFleet) func(context.Context, string, string) error {
	return func(_ context.Context, op, key string) error {
		if op == "trylock" {
			f.store.squat(key, time.Minute)
		}
		return nil
	}
}

// A replay after a 401 does not wait on another replica's lease longer
// than it can afford: the refresh flight it joins, started while the token
// was still valid and so ready to wait up to tokenLease on a lease another
// replica holds, is hurried by it.
func TestReplayAfter401IsNotHeldByALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, _ := f.replica(Config{RefreshMargin: 100 * time.Second}, MissBudget{})
		ctx := context.Background()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Duration(f.life)*time.Second - 99*time.Second) // due for refresh, 99 s left: more than tokenLease
		f.store.squat(c.seal.ManagementTokenLeaseKey(), time.Minute)   // another replica refreshing
		f.mts[c].RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1",
			func(r *http.Request) (*http.Response, error) {
				if r.Header.Get("Authorization") == "Bearer mgmt-1" { // revoked by the service
					return httpmock.NewJsonResponse(http.StatusUnauthorized, map[string]any{"error_code": 401, "reason": "auth.unauthorized", "error_message": "token revoked"})
				}
				return httpmock.NewJsonResponse(http.StatusOK, map[string]any{"id": "u-1"})
			})
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatalf("Users.Get refused with 401 while another replica holds the token's lease: %v", err)
		}
		if took := time.Since(start); took > shortLeaseWait {
			t.Errorf("the replay waited %v; want at most %v", took, shortLeaseWait)
		}
		if got := f.tokens.Load(); got != 2 {
			t.Errorf("%d token requests; want 2 (the first, and this replica's own after the hurried wait)", got)
		}
	})
}

// Leases waited out in a row (squatted, or left by replicas that died)
// stop the replica from waiting on any lease for a cool-down: each new End
// User token is a new key, yet after three waits the checks go their own
// way at once. The Observer sees the lease breaker open.
func TestSquattedLeasesStopTheWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var seen breakerLog
		c, a := f.replica(Config{Observer: seen.observer()}, MissBudget{})
		ctx := context.Background()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		f.store.setHook(squattingHook(f))
		var took []time.Duration
		for i := range 10 {
			start := time.Now()
			if _, err := checkToken(ctx, a, fmt.Sprint("eu-", i)); err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		for i, d := range took {
			switch {
			case i < fleet.LeaseWaitsOut && d == 0:
				t.Errorf("check %d did not wait on the lease; want a wait (the first %d)", i, fleet.LeaseWaitsOut)
			case i >= fleet.LeaseWaitsOut && d != 0:
				t.Errorf("check %d waited %v; want none once %d leases were waited out in a row", i, d, fleet.LeaseWaitsOut)
			}
		}
		if took[0] != verdictLease || took[1] != defaultSharedStoreTimeout {
			t.Errorf("the first waits took %v; want verdictLease (no estimate of the service yet), then SharedStoreTimeout (the service answers at once)", took[:2])
		}
		got := seen.all()
		if len(got) != 1 || got[0].Breaker != BreakerLeaseWaits || !got[0].Open {
			t.Errorf("the Observer was told %+v; want the lease breaker opening", got)
		}
		time.Sleep(fleet.LeaseCoolDown * 12 / 10)
		start := time.Now()
		if _, err := checkToken(ctx, a, "eu-probe"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != defaultSharedStoreTimeout {
			t.Errorf("the check after the cool-down waited %v; want one wait, %v (the probe)", d, defaultSharedStoreTimeout)
		}
	})
}

// A lease whose holder stores its verdict after the waiter ran out of
// patience was alive, only slower than the waiter's patience (a busy host,
// a slow service): it does not count as waited out, and waits go on. Three
// such waits in a row opened the lease breaker, and the replica then asked
// the service for every token itself.
func TestSlowHolderIsNotWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var seen breakerLog
		_, a := f.replica(Config{Observer: seen.observer()}, MissBudget{})
		_, b := f.replica(Config{}, MissBudget{})
		ctx := context.Background()
		for i := range 3 { // a's estimate of the service: fast, so a waits little
			if _, err := checkToken(ctx, a, fmt.Sprint("eu-warm-", i)); err != nil {
				t.Fatal(err)
			}
		}
		f.slow.Store(int64(400 * time.Millisecond)) // the service slows down
		for i := range fleet.LeaseWaitsOut + 1 {
			tok := fmt.Sprint("eu-", i)
			var wg sync.WaitGroup
			wg.Go(func() { // b takes the lease and asks the service
				if _, err := checkToken(ctx, b, tok); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(10 * time.Millisecond)
			start := time.Now()
			if _, err := checkToken(ctx, a, tok); err != nil { // a waits, runs out of patience, asks too
				t.Fatal(err)
			}
			// The first ones run out of patience (a's estimate grows with
			// what its own calls take, and then it sees b's verdict).
			if took := time.Since(start); i < fleet.LeaseWaitsOut && took <= 400*time.Millisecond {
				t.Fatalf("check %d took %v; want a wait on b's lease, then a's own call", i, took)
			}
			wg.Wait()
		}
		if got := seen.all(); len(got) != 0 {
			t.Errorf("the Observer was told %+v; want the lease breaker closed (every holder stored its verdict)", got)
		}
	})
}

// Forget tries the store even while the breaker is open, within one
// SharedStoreTimeout in all, and logs at Error when it could not: the
// other replicas may then accept the token until their verdict expires.
func TestForgetTriesTheStoreOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var logs logBuffer
		_, a := f.replica(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, MissBudget{})
		ctx := context.Background()
		f.store.setHook(func(_ context.Context, op, _ string) error {
			if op == "get" {
				return errStoreDown
			}
			return nil
		})
		for i := range storeFailures { // failures in a row open the breaker
			if _, err := checkToken(ctx, a, fmt.Sprint("eu-", i)); err != nil {
				t.Fatal(err)
			}
		}
		if !a.Client.stores.Breaker.IsOpen() {
			t.Fatal("the store's breaker is closed")
		}
		f.store.resetCalls()
		if err := a.Forget(ctx, "Bearer eu-1"); err != nil {
			t.Fatal(err)
		}
		if got := f.store.callsTo(a.Client.seal.VerdictStem("Bearer eu-1") + ":epoch"); got != 1 {
			t.Errorf("Forget made %d calls on the epoch while the breaker was open; want 1", got)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("an Error record for a Forget that reached the store:\n%s", logs.String())
		}

		f.store.setHook(hangingHook(f))
		start := time.Now()
		if err := a.Forget(ctx, "Bearer eu-1"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != defaultSharedStoreTimeout {
			t.Errorf("Forget on a hung store took %v; want one SharedStoreTimeout, %v", took, defaultSharedStoreTimeout)
		}
		if !strings.Contains(logs.String(), "level=ERROR msg=\"management: Forget could not") {
			t.Errorf("no Error record of the Forget that could not reach the store:\n%s", logs.String())
		}
	})
}

// A caller that needs a token now and joins a token fetch stuck on a hung
// store cuts the store's wait to what it can afford itself: a Users.Get
// with 400 ms left does not wait the fetch's SharedStoreTimeout of 750 ms,
// but 200 ms (half its time), and gets the token the fetch then requests.
func TestJoinerCutsAHungStoreWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, _ := f.replica(Config{SharedStoreTimeout: 750 * time.Millisecond}, MissBudget{})
		f.store.setHook(hangingHook(f))
		first := make(chan error, 1)
		go func() {
			_, err := c.Users.Get(context.Background(), "u-1") // starts the token fetch, which reads the store
			first <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatalf("a Users.Get with 400ms left, joining a fetch stuck on the store: %v", err)
		}
		if took := time.Since(start); took != 200*time.Millisecond {
			t.Errorf("it took %v; want 200ms (half its time left)", took)
		}
		if err := <-first; err != nil {
			t.Errorf("the Users.Get that started the fetch: %v", err)
		}
	})
}

// A token refreshed while the current one still serves waits on the
// lease of the replica refreshing it whatever the lease breaker says: dead
// verdict leases (as a Redis stopped and continued leaves them) must not
// cost the fleet a token request per replica.
func TestUnhurriedRefreshWaitsWhileLeaseWaitsAreOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, a := f.replica(Config{RefreshMargin: 100 * time.Second}, MissBudget{})
		ctx := context.Background()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		refreshAt := time.Now().Add(time.Duration(f.life)*time.Second - 100*time.Second)
		time.Sleep(time.Until(refreshAt) - 2*time.Second)
		f.store.setHook(func(_ context.Context, op, key string) error {
			if op == "trylock" && strings.Contains(key, ":verdict:") {
				f.store.squat(key, time.Minute)
			}
			return nil
		})
		for i := range fleet.LeaseWaitsOut {
			if _, err := checkToken(ctx, a, fmt.Sprint("eu-", i)); err != nil {
				t.Fatal(err)
			}
		}
		if !c.stores.Leases.IsOpen() {
			t.Fatal("the lease breaker did not open")
		}
		time.Sleep(time.Until(refreshAt) + time.Second)
		// Another replica refreshes the token, and stores it 100 ms later.
		f.store.squat(c.seal.ManagementTokenLeaseKey(), time.Minute)
		go func() {
			time.Sleep(100 * time.Millisecond)
			plain, _ := json.Marshal(storedToken{AccessToken: "mgmt-other", TokenType: "Bearer",
				Expiry: time.Now().Add(time.Hour), RefreshAt: time.Now().Add(50 * time.Minute)})
			key := c.seal.ManagementTokenKey()
			f.store.put(key, c.seal.Seal(key, plain), time.Hour)
		}()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil { // starts the refresh, served by the current token
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the refresh's wait on the lease
		if got := f.tokens.Load(); got != 1 {
			t.Errorf("%d token requests; want 1 (the refresh took the other replica's token)", got)
		}
	})
}

// The store breaker judges the store, not the caller's patience: a store
// whose every operation takes 120 ms, within SharedStoreTimeout (200 ms),
// is slow, not failing. A check's second read, cut at the 80 ms left of
// its budget, answers in the background within its time: the breaker stays
// closed (it opened on the first such read when a cut operation given a
// quarter of the timeout counted as a timeout).
func TestSlowStoreIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var seen breakerLog
		_, a := f.replica(Config{Observer: seen.observer()}, MissBudget{})
		f.store.setHook(func(context.Context, string, string) error {
			time.Sleep(defaultSharedStoreTimeout * 3 / 5) // ignoring ctx, as a busy network client
			return nil
		})
		for i := range 5 {
			if _, err := checkToken(context.Background(), a, fmt.Sprint("eu-", i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(defaultSharedStoreTimeout)
		synctest.Wait()
		if got := seen.all(); len(got) != 0 {
			t.Errorf("the Observer was told %+v; want the store's breaker closed throughout", got)
		}
	})
}

// A lone timeout on a saturated host, followed by answers, leaves the
// store in use: one operation that hangs past SharedStoreTimeout costs its
// check the store, and the next check reads the verdict another replica
// stored, rather than ask the service.
func TestLoneStoreTimeoutKeepsSharing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var seen breakerLog
		_, a := f.replica(Config{Observer: seen.observer()}, MissBudget{})
		_, b := f.replica(Config{}, MissBudget{})
		ctx := context.Background()
		if _, err := checkToken(ctx, b, "eu-shared"); err != nil { // b stores the verdict
			t.Fatal(err)
		}
		var once atomic.Bool
		f.store.setHook(func(context.Context, string, string) error {
			if once.CompareAndSwap(false, true) {
				time.Sleep(time.Second) // a moment the host did not run the reader
			}
			return nil
		})
		if _, err := checkToken(ctx, a, "eu-1"); err != nil { // its first read times out
			t.Fatal(err)
		}
		before := f.authn.Load()
		if _, err := checkToken(ctx, a, "eu-shared"); err != nil {
			t.Fatal(err)
		}
		if got := f.authn.Load() - before; got != 0 {
			t.Errorf("%d authenticate calls for a verdict in the store, after a lone timeout; want 0", got)
		}
		if got := seen.all(); len(got) != 0 {
			t.Errorf("the Observer was told %+v; want the store's breaker closed", got)
		}
		time.Sleep(time.Second)
	})
}

// A store failing on part of its keys (a Cluster node down: the verdicts
// of half the tokens) still opens the breaker, though the operations on
// its other keys answer between the failures.
func TestStoreFailingOnPartOfItsKeysOpensTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		var seen breakerLog
		_, a := f.replica(Config{Observer: seen.observer()}, MissBudget{})
		ctx := context.Background()
		if _, err := checkToken(ctx, a, "eu-first"); err != nil { // a is set up
			t.Fatal(err)
		}
		seal := a.shared.store.Sealer()
		f.store.setHook(func(_ context.Context, _, key string) error {
			for i := range 100 {
				if strings.HasPrefix(key, seal.VerdictStem(fmt.Sprint("Bearer eu-bad-", i))) {
					return errStoreDown
				}
			}
			return nil
		})
		for i := range 100 {
			for _, tok := range []string{fmt.Sprint("eu-bad-", i), fmt.Sprint("eu-good-", i)} {
				if _, err := checkToken(ctx, a, tok); err != nil {
					t.Fatal(err)
				}
			}
			if got := seen.all(); len(got) > 0 {
				if !got[0].Open || got[0].Breaker != BreakerSharedStore {
					t.Fatalf("the Observer was told %+v; want the store's breaker opening", got)
				}
				return
			}
		}
		t.Error("the store's breaker did not open on a store failing on half its keys")
	})
}
