package management

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fleetRun is the outcome of 16 replicas under load for a while.
type fleetRun struct {
	rounds, failedGets, failedChecks int
	slowest                          time.Duration
	over250ms                        int
	tokenReqs, authnCalls            int32
	storeCalls                       int64
}

func (r fleetRun) String() string {
	return fmt.Sprintf("%d rounds: %d Users.Get failed, %d checks failed (503), slowest %v, %d over 250ms; %d token requests, %d authenticate calls, %d store calls",
		r.rounds, r.failedGets, r.failedChecks, r.slowest, r.over250ms, r.tokenReqs, r.authnCalls, r.storeCalls)
}

// runFleet runs 16 replicas sharing f.store for 10 s (of the bubble's
// clock): each, in a loop on 50 ms ticks, reads a User and checks the End
// User token of the tick (one new token every 50 ms, checked by every
// replica), with a 2 s deadline for both. The store's hook is set by the
// caller.
func runFleet(t *testing.T, f *testFleet, cfg Config) fleetRun {
	var clients []*Client
	var auths []*Authenticator
	for range 16 {
		c, a := f.replica(cfg, MissBudget{})
		clients, auths = append(clients, c), append(auths, a)
	}
	var run fleetRun
	var mu sync.Mutex
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range clients {
		wg.Go(func() {
			for time.Since(begin) < 10*time.Second {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				start := time.Now()
				_, getErr := clients[i].Users.Get(ctx, "u-1")
				_, checkErr := checkToken(ctx, auths[i], fmt.Sprint("eu-", time.Since(begin)/(50*time.Millisecond)))
				took := time.Since(start)
				cancel()
				mu.Lock()
				run.rounds++
				run.slowest = max(run.slowest, took)
				if took > 250*time.Millisecond {
					run.over250ms++
				}
				if getErr != nil {
					run.failedGets++
				}
				if checkErr != nil {
					run.failedChecks++
				}
				mu.Unlock()
				time.Sleep(50*time.Millisecond - time.Since(begin)%(50*time.Millisecond))
			}
		})
	}
	wg.Wait()
	run.tokenReqs, run.authnCalls = f.tokens.Load(), f.authn.Load()
	run.storeCalls = int64(f.store.callsTo(""))
	return run
}

// The figures of issue 20 on an in-memory store, with tokens living 3 s:
// a store that hangs for 8 s (as a SIGSTOP of redis-server does to go-redis
// without ContextTimeoutEnabled: calls block, whatever their context), and
// a squatter on every lease. Neither fails a call. go test -v -run
// TestFleetFigures prints them.
func TestFleetFigures(t *testing.T) {
	t.Run("hang", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newTestFleet(t)
			f.life = 3
			var hung atomic.Bool
			resume := make(chan struct{})
			f.store.setHook(func(context.Context, string, string) error {
				if hung.Load() {
					<-resume
				}
				return nil
			})
			go func() {
				time.Sleep(2 * time.Second)
				hung.Store(true)
				time.Sleep(8 * time.Second)
				hung.Store(false)
				close(resume)
			}()
			const timeout = 50 * time.Millisecond
			run := runFleet(t, f, Config{SharedStoreTimeout: timeout})
			t.Log(run)
			if run.failedGets+run.failedChecks != 0 || run.slowest > timeout+250*time.Millisecond {
				t.Errorf("a store hung for 8 s: %v; want no failed call, none exceeding the timeout by more than 250ms", run)
			}
		})
	})
	t.Run("dead leases", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newTestFleet(t)
			f.life = 3
			f.store.setHook(func(_ context.Context, op, key string) error {
				if op == "trylock" { // every lease held by a squatter
					f.store.squat(key, time.Minute)
				}
				return nil
			})
			run := runFleet(t, f, Config{})
			t.Log(run)
			if run.failedGets+run.failedChecks != 0 {
				t.Errorf("a squatter on every lease: %v; want no failed call", run)
			}
		})
	})
}
