package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// stubStore answers every operation with what answer says, after it
// returns (it may block, ignoring ctx as a hung network client does), and
// counts them.
type stubStore struct {
	answer func(ctx context.Context) error
	calls  atomic.Int64
}

func (s *stubStore) do(ctx context.Context) error {
	s.calls.Add(1)
	return s.answer(ctx)
}

func (s *stubStore) Get(ctx context.Context, _ string) ([]byte, error) { return nil, s.do(ctx) }
func (s *stubStore) Set(ctx context.Context, _ string, _ []byte, _ time.Duration) error {
	return s.do(ctx)
}
func (s *stubStore) Delete(ctx context.Context, _ string) error { return s.do(ctx) }
func (s *stubStore) TryLock(ctx context.Context, _ string, _ time.Duration) (func(context.Context) error, bool, error) {
	return func(context.Context) error { return nil }, true, s.do(ctx)
}

// hangs is an answer that blocks until release is closed, whatever ctx.
func hangs(release chan struct{}) func(context.Context) error {
	return func(context.Context) error { <-release; return nil }
}

func newGuard(timeout time.Duration) *Guard {
	return &Guard{Timeout: timeout,
		Breaker:  &Breaker{Threshold: 1, CoolDown: timeout, MaxCoolDown: 30 * time.Second},
		Panicked: func() error { return errors.New("panicked") },
		LogPanic: func(context.Context, any, bool) {}}
}

// Each call on a store that hangs takes exactly the Guard's timeout, and
// the store sees a context that ends after Judged (twice that): the call
// is abandoned, counted, and ends when the store answers.
func TestCallAbandonedAtTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		saw := make(chan time.Duration, 1)
		store := &stubStore{answer: func(ctx context.Context) error {
			d, _ := ctx.Deadline()
			saw <- time.Until(d)
			<-release
			return nil
		}}
		g := newGuard(30 * time.Millisecond)
		start := time.Now()
		_, err := g.Guard(store).Get(context.Background(), "k")
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took != 30*time.Millisecond {
			t.Errorf("Get on a hung store: %v after %v; want the deadline's error after 30ms", err, took)
		}
		if got := <-saw; got != 60*time.Millisecond {
			t.Errorf("the store's context had %v left; want Judged, 60ms", got)
		}
		close(release)
		synctest.Wait()
		if g.Running() != 0 || g.Abandoned() != 1 {
			t.Errorf("running %d, abandoned %d; want 0 and 1", g.Running(), g.Abandoned())
		}
	})
}

// A store that hangs costs each operation that meets it one timeout, until
// the Breaker opens: the first operation's failure, judged once its time
// (Judged) is up, opens it, and the operations after are skipped at once,
// without reaching the store; the probe after the cool-down runs in the
// background, and its answer closes the Breaker.
func TestHungStoreCostsOneTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		store := &stubStore{answer: hangs(release)}
		g := newGuard(100 * time.Millisecond)
		s := g.Guard(store)
		ctx := context.Background()
		var waited []time.Duration
		for range 50 {
			start := time.Now()
			_, _ = s.Get(ctx, "k")
			waited = append(waited, time.Since(start))
			time.Sleep(time.Millisecond) // the pace of the calls
		}
		// The first at 0, the second at 101 ms; the first is judged at 200 ms.
		for i, w := range waited {
			if want := time.Duration(0); (i < 2 && w != 100*time.Millisecond) || (i >= 2 && w != want) {
				t.Errorf("operation %d waited %v; want 100ms for the first two, then nothing", i, w)
			}
		}
		if got := store.calls.Load(); got != 2 {
			t.Errorf("the store was called %d times; want 2", got)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrSkipped) {
			t.Errorf("an operation while open: %v; want ErrSkipped", err)
		}
		// Past the cool-down, an operation starts the probe and goes on
		// without waiting for it.
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrSkipped) || time.Since(start) != 0 {
			t.Errorf("the operation that starts the probe: %v after %v; want ErrSkipped at once", err, time.Since(start))
		}
		synctest.Wait()
		if got := store.calls.Load(); got != 3 {
			t.Errorf("the store was called %d times; want 3 (the probe)", got)
		}
		close(release) // the probe answers: the Breaker closes
		synctest.Wait()
		if g.Breaker.IsOpen() {
			t.Error("the probe's answer did not close the Breaker")
		}
		if _, err := s.Get(ctx, "k"); err != nil || store.calls.Load() != 4 {
			t.Errorf("an operation after the probe: %v, %d store calls; want the store used", err, store.calls.Load())
		}
	})
}

// A call's budget bounds its store time in all: operations that each take
// 700 ms, within a timeout of 750 ms, leave the second 50 ms, and then
// none. The operation its caller left runs on and answers within the
// timeout: a slow answer is not a failure, and the Breaker stays closed.
func TestBudgetBoundsACallsStoreTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stubStore{answer: func(ctx context.Context) error {
			select {
			case <-time.After(700 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		g := newGuard(750 * time.Millisecond)
		s := g.Guard(store)
		ctx := WithBudget(context.Background(), g.Timeout, nil)
		start := time.Now()
		if _, err := s.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the second operation: %v; want cut at the budget", err)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrSkipped) {
			t.Errorf("the third operation: %v; want ErrSkipped (the budget is spent)", err)
		}
		if took := time.Since(start); took != 750*time.Millisecond {
			t.Errorf("three operations took %v; want the budget, 750ms", took)
		}
		time.Sleep(time.Second) // the abandoned operation answers in the background
		if g.Breaker.IsOpen() {
			t.Error("an operation cut short by the call's budget, which then answered in its time, opened the Breaker")
		}
		if g.Running() != 0 || store.calls.Load() != 2 {
			t.Errorf("running %d, %d store calls; want 0 and 2", g.Running(), store.calls.Load())
		}
	})
}

// An operation's outcome is what the store did in the operation's whole
// time (Judged, twice the timeout), whoever waited for it: one its caller
// left (its budget spent, or at the timeout) and which the store answers
// later within that time counts as an answer, and opens nothing; one the
// store does not answer within it is a failure, told to the Breaker when
// the time is up, though no caller waited that long.
func TestOperationJudgedInItsOwnTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer time.Duration // when the store answers
		open   bool
	}{
		{"answered after its caller's budget", 90 * time.Millisecond, false},
		{"answered after its caller's timeout", 150 * time.Millisecond, false},
		{"not answered in time", 250 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &stubStore{answer: func(context.Context) error {
					time.Sleep(tc.answer) // ignoring its context, as a hung network client does
					return nil
				}}
				g := newGuard(100 * time.Millisecond)
				ctx := WithBudget(context.Background(), 10*time.Millisecond, nil)
				start := time.Now()
				if _, err := g.Guard(store).Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 10*time.Millisecond {
					t.Fatalf("Get: %v after %v; want the deadline's error after the budget, 10ms", err, time.Since(start))
				}
				if g.Breaker.IsOpen() {
					t.Fatal("the Breaker opened when the caller left")
				}
				time.Sleep(g.Judged())
				synctest.Wait()
				if g.Breaker.IsOpen() != tc.open {
					t.Errorf("Breaker open %v once the operation's time is up; want %v", g.Breaker.IsOpen(), tc.open)
				}
				time.Sleep(tc.answer)
			})
		})
	}
}

// A call's budget is half its time left when that is less than the
// timeout; a call without a deadline has the timeout.
func TestWithBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		if got := budgetOf(WithBudget(ctx, time.Second, nil)).Left(); got != 300*time.Millisecond {
			t.Errorf("budget of a call with 600ms left: %v; want 300ms", got)
		}
		if got := budgetOf(WithBudget(context.Background(), time.Second, nil)).Left(); got != time.Second {
			t.Errorf("budget of a call without a deadline: %v; want the limit, 1s", got)
		}
		kept := KeepDeadline(ctx) // a flight keeps its caller's deadline as a value
		detached, stop := context.WithTimeout(context.WithoutCancel(kept), 5*time.Second)
		defer stop()
		b := WithBudget(detached, time.Second, nil)
		if got := budgetOf(b).Left(); got != 300*time.Millisecond {
			t.Errorf("budget of a flight whose caller has 600ms left: %v; want 300ms", got)
		}
		if got := Patience(b, time.Second); got != 300*time.Millisecond {
			t.Errorf("patience of that flight: %v; want 300ms (to its halfway mark)", got)
		}
		if budgetOf(WithoutBudget(b)) != nil {
			t.Error("WithoutBudget kept the budget")
		}
	})
}

// An operation whose caller's context ends says nothing of the store: the
// Breaker stays closed.
func TestCallerGivingUpKeepsTheBreakerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		g := newGuard(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := g.Guard(&stubStore{answer: hangs(release)}).Get(ctx, "k"); err == nil {
			t.Fatal("no error from a hung store")
		}
		if g.Breaker.IsOpen() {
			t.Error("a caller giving up opened the Breaker")
		}
		close(release)
		synctest.Wait()
	})
}

// A forced operation reaches the store while the Breaker is open.
func TestForcedOperationReachesTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		store := &stubStore{answer: func(context.Context) error {
			if fail.Load() {
				return errDown
			}
			return nil
		}}
		g := newGuard(time.Second)
		s := g.Guard(store)
		ctx := context.Background()
		_, _ = s.Get(ctx, "k")
		if !g.Breaker.IsOpen() {
			t.Fatal("a failure did not open the Breaker")
		}
		fail.Store(false)
		if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrSkipped) {
			t.Fatalf("an operation while open: %v; want ErrSkipped", err)
		}
		if err := s.Delete(Forced(ctx), "k"); err != nil {
			t.Fatalf("a forced operation: %v", err)
		}
		if got := store.calls.Load(); got != 2 {
			t.Errorf("%d store calls; want 2 (the failure, then the forced operation)", got)
		}
	})
}

// leaseStore hangs on TryLock, ignoring its context, until release is
// closed, then takes the lease (as a stopped redis-server runs a SET NX
// that go-redis sent it, once it goes on); it counts the leases held.
type leaseStore struct {
	stubStore
	release chan struct{}
	held    atomic.Int64
	unlocks atomic.Int64
}

func (s *leaseStore) TryLock(context.Context, string, time.Duration) (func(context.Context) error, bool, error) {
	<-s.release
	s.held.Add(1)
	return func(context.Context) error {
		s.unlocks.Add(1)
		s.held.Add(-1)
		return nil
	}, true, nil
}

// A lease call the Guard abandoned, which the store carries out once it
// answers again, leaves no lease behind: it is released as soon as the
// call returns, rather than leave the fleet without a holder until the
// lease lapses (10 s for the token's, during which every replica fetched
// its own token).
func TestAbandonedLeaseReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &leaseStore{release: make(chan struct{})}
		g := newGuard(30 * time.Millisecond)
		if _, ok, err := g.Guard(store).TryLock(context.Background(), "k:lease", 10*time.Second); ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TryLock on a hung store: ok %v, %v; want the deadline's error", ok, err)
		}
		close(store.release) // the store takes the lease for the call the Guard abandoned
		synctest.Wait()
		if n := store.held.Load(); n != 0 {
			t.Errorf("%d leases held once the abandoned call returned; want 0", n)
		}
		if n := store.unlocks.Load(); n != 1 {
			t.Errorf("%d releases; want 1", n)
		}
		if g.Running() != 0 || g.Abandoned() != 1 {
			t.Errorf("running %d, abandoned %d; want 0 and 1", g.Running(), g.Abandoned())
		}
	})
}

// A lease taken in time is the caller's: the Guard does not release it.
func TestLeaseInTimeKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &leaseStore{release: make(chan struct{})}
		close(store.release)
		g := newGuard(30 * time.Millisecond)
		unlock, ok, err := g.Guard(store).TryLock(context.Background(), "k:lease", 10*time.Second)
		if !ok || err != nil {
			t.Fatalf("TryLock = %v, %v; want the lease", ok, err)
		}
		synctest.Wait()
		if n := store.held.Load(); n != 1 {
			t.Fatalf("%d leases held before the caller's unlock; want 1", n)
		}
		if err := unlock(context.Background()); err != nil || store.held.Load() != 0 {
			t.Errorf("unlock: %v, %d held; want nil, 0", err, store.held.Load())
		}
	})
}
