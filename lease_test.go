package management

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// A token lease left by a replica killed mid-refresh (or held on purpose)
// delays a replica without a token by about a second, never past half its
// caller's time, then the replica fetches its own token.
func TestDeadTokenLeaseWaitsBriefly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		want     time.Duration
	}{
		{"no deadline", 0, shortLeaseWait},
		{"a 600ms deadline", 600 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newTestFleet(t)
				c, _ := f.replica(Config{}, MissBudget{})
				f.store.squat(c.seal.ManagementTokenLeaseKey(), tokenLease)
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				if _, err := c.Users.Get(ctx, "u-1"); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.want {
					t.Errorf("Users.Get behind a dead lease took %v; want %v", took, tc.want)
				}
				if got := f.tokens.Load(); got != 1 {
					t.Errorf("%d token requests; want 1 (its own)", got)
				}
			})
		})
	}
}

// A verdict lease left by a dead replica delays a check by a second at
// most, never past half the request's time; then the replica asks the
// service itself.
func TestDeadVerdictLeaseWaitsBriefly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		want     time.Duration
	}{
		{"no deadline", 0, verdictLease},
		{"a 400ms deadline", 400 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newTestFleet(t)
				c, a := f.replica(Config{}, MissBudget{})
				if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
					t.Fatal(err)
				}
				f.store.squat(c.seal.VerdictSlot("Bearer eu-1")+":lease", time.Minute)
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				if _, err := checkToken(ctx, a, "eu-1"); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.want {
					t.Errorf("a check behind a dead lease took %v; want %v", took, tc.want)
				}
			})
		})
	}
}

// While a lease is held, the waiters on one key share one poller: however
// many checks of one token wait on a replica, through however many
// Authenticators of its Client, it makes at most 20 store calls a second on
// each key, in rounds spaced with jitter.
func TestLeaseWaitersPollSlowly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, a := f.replica(Config{}, MissBudget{})
		if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the token stored, its lease released
		stem, slot := c.seal.VerdictStem("Bearer eu-1"), c.seal.VerdictSlot("Bearer eu-1")
		f.store.squat(slot+":lease", time.Minute)
		var mu sync.Mutex
		at := map[string][]time.Duration{}
		start := time.Now()
		f.store.setHook(func(_ context.Context, _, key string) error {
			mu.Lock()
			defer mu.Unlock()
			at[key] = append(at[key], time.Since(start))
			return nil
		})
		auths := []*Authenticator{a, {Client: c, SharedStore: f.store}, {Client: c, SharedStore: f.store}}
		var wg sync.WaitGroup
		for i := range 60 {
			wg.Go(func() {
				if _, err := checkToken(context.Background(), auths[i%len(auths)], "eu-1"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		total := 0
		for key, times := range at {
			if !strings.HasPrefix(key, stem) {
				t.Errorf("a store call on %q", key)
			}
			total += len(times)
			for i := range times {
				j, _ := slices.BinarySearch(times, times[i]+time.Second)
				if n := j - i; n > 20 {
					t.Errorf("%d calls on %q within a second from %v; want at most 20", n, key, times[i])
				}
			}
		}
		if total > 3*(3+20) { // each Authenticator: the epoch, its last round and its write
			t.Errorf("%d store calls for one token in a second's wait; want at most %d: %v", total, 3*(3+20), at)
		}
		lease := at[slot+":lease"]
		gaps := map[time.Duration]bool{}
		for i, polled := 1, 0; i < len(lease) && lease[i] < verdictLease; i++ {
			if lease[i] == 0 { // each wait's first round comes when it starts, its last when it ends
				continue
			}
			gap := lease[i] - lease[i-1]
			gaps[gap] = true
			min, max := fleet.PollGap, fleet.PollGap+fleet.PollJitter
			if polled < len(fleet.FirstPollGaps) {
				min, max = fleet.FirstPollGaps[polled], fleet.FirstPollGaps[polled]+1
			}
			polled++
			if gap < min || gap >= max {
				t.Errorf("round %d came %v after the previous; want within [%v, %v)", i, gap, min, max)
			}
		}
		if len(lease) > 6 && len(gaps) < 4 {
			t.Errorf("the rounds are evenly spaced %v; want jitter", lease)
		}
		if n := c.stores.PollingKeys(); n != 0 {
			t.Errorf("%d keys still held for polling once the waits ended; want 0", n)
		}
	})
}

// A store that fails to read the value is not "not there yet": the wait
// ends at once, whatever the lease says.
func TestLeaseWaitEndsOnReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFleet(t)
		c, a := f.replica(Config{}, MissBudget{})
		f.store.squat(c.seal.ManagementTokenLeaseKey(), tokenLease)
		f.store.squat(c.seal.VerdictSlot("Bearer eu-1")+":lease", time.Minute)
		f.store.setHook(func(_ context.Context, op, key string) error {
			if op == "get" && !strings.HasSuffix(key, ":epoch") {
				return errors.New("the value's node is down")
			}
			return nil
		})
		start := time.Now()
		if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := checkToken(context.Background(), a, "eu-1"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("a token fetch and a check took %v behind leases whose values cannot be read; want no wait", took)
		}
	})
}
