package management

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A store that hangs, ignoring its context as go-redis does on a socket
// read without ContextTimeoutEnabled, fails no call: the SDK abandons each
// store call at SharedStoreTimeout, so a check or a token fetch waits at
// most that long (the token is written back while its callers go on), and
// the calls left running are bounded and counted. Once the store answers
// again, they end.
func TestHungStoreFailsNoCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 50 * time.Millisecond
		f := newTestFleet(t)
		var logs syncBuffer
		c, a := f.replica(Config{SharedStoreTimeout: timeout, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, MissBudget{})
		a.MaxConcurrentChecks = 1000
		ctx := context.Background()
		if _, err := c.Users.Get(ctx, "u-1"); err != nil { // a has its token; cold, below, has none
			t.Fatal(err)
		}
		cold, _ := f.replica(Config{SharedStoreTimeout: timeout}, MissBudget{})
		release := make(chan struct{})
		f.store.setHook(func(context.Context, string, string) error { <-release; return nil })
		var wg sync.WaitGroup
		var mu sync.Mutex
		slowest := map[string]time.Duration{}
		note := func(what string, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			slowest[what] = max(slowest[what], d)
		}
		for i := range 200 {
			wg.Go(func() {
				start := time.Now()
				_, err := checkToken(ctx, a, fmt.Sprint("eu-", i))
				note("check", time.Since(start), err)
			})
		}
		for range 20 {
			wg.Go(func() {
				start := time.Now()
				_, err := cold.Users.Get(ctx, "u-1")
				note("Users.Get", time.Since(start), err)
			})
		}
		wg.Wait()
		if got := slowest["check"]; got > timeout {
			t.Errorf("the slowest check took %v; want at most SharedStoreTimeout, %v", got, timeout)
		}
		if got := slowest["Users.Get"]; got > timeout {
			t.Errorf("the slowest Users.Get took %v; want at most SharedStoreTimeout, %v", got, timeout)
		}
		time.Sleep(timeout + time.Millisecond) // the token's write back is abandoned too
		if got := c.stores.running.Load(); got != maxStoreCalls {
			t.Errorf("%d store calls left running; want the bound, %d", got, maxStoreCalls)
		}
		if got := c.stores.abandoned.Load(); got != maxStoreCalls {
			t.Errorf("%d store calls abandoned; want %d (the others refused at once)", got, maxStoreCalls)
		}
		if got := f.tokens.Load(); got != 2 {
			t.Errorf("%d token requests; want 2 (the warm replica's, then the cold one's on its own)", got)
		}
		if got := f.authn.Load(); got != 200 {
			t.Errorf("%d authenticate calls; want 200 (each replica on its own)", got)
		}
		if got := cold.stores.abandoned.Load(); got != 2 {
			t.Errorf("%d token store calls abandoned; want 2 (the read and the write)", got)
		}
		close(release)
		synctest.Wait()
		if got := c.stores.running.Load() + cold.stores.running.Load(); got != 0 {
			t.Errorf("%d store calls running after the store answers again; want 0", got)
		}
		if _, err := checkToken(ctx, a, "eu-after"); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint("abandoned_calls=", maxStoreCalls); !strings.Contains(logs.String(), want) {
			t.Errorf("no record of the store answering again with %s:\n%s", want, logs.String())
		}
	})
}

// syncBuffer is a bytes.Buffer that loggers on several goroutines share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Each call on a store that hangs takes exactly SharedStoreTimeout, and
// the store sees a context that ends then.
func TestStoreCallAbandonedAtTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		release := make(chan struct{})
		saw := make(chan time.Duration, 1)
		store.hook = func(ctx context.Context, _, _ string) error {
			d, _ := ctx.Deadline()
			saw <- time.Until(d)
			<-release
			return nil
		}
		g := &storeGuard{timeout: 30 * time.Millisecond}
		start := time.Now()
		_, err := g.guard(store).Get(context.Background(), "k")
		if took := time.Since(start); err == nil || took != 30*time.Millisecond {
			t.Errorf("Get on a hung store: %v after %v; want an error after 30ms", err, took)
		}
		if got := <-saw; got != 30*time.Millisecond {
			t.Errorf("the store's context had %v left; want 30ms", got)
		}
		close(release)
		synctest.Wait()
		if g.running.Load() != 0 || g.abandoned.Load() != 1 {
			t.Errorf("running %d, abandoned %d; want 0 and 1", g.running.Load(), g.abandoned.Load())
		}
	})
}

// A lease call the SDK abandoned, which the store carries out once it
// answers again (go-redis without ContextTimeoutEnabled sends SET NX to a
// stopped redis-server, which runs it when it goes on), leaves no lease
// behind: the SDK releases it as soon as the call returns, rather than
// leave the fleet without a holder until the lease lapses (10 s for the
// token's, during which every replica fetched its own token).
func TestAbandonedLeaseReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		release := make(chan struct{})
		store.hook = func(_ context.Context, op, _ string) error {
			if op == "trylock" {
				<-release // hangs, ignoring its context
			}
			return nil
		}
		g := &storeGuard{timeout: 30 * time.Millisecond}
		if _, ok, err := g.guard(store).TryLock(context.Background(), "k:lease", 10*time.Second); ok || err == nil {
			t.Fatalf("TryLock on a hung store: ok %v, %v; want an error", ok, err)
		}
		close(release) // the store takes the lease for the call the SDK abandoned
		synctest.Wait()
		if n := store.held(); n != 0 {
			t.Errorf("%d leases held once the abandoned call returned; want 0", n)
		}
		if n := store.callsTo("k:lease"); n != 2 {
			t.Errorf("%d calls on the lease; want 2 (the lock, then its release)", n)
		}
		if g.running.Load() != 0 || g.abandoned.Load() != 1 {
			t.Errorf("running %d, abandoned %d; want 0 and 1", g.running.Load(), g.abandoned.Load())
		}
	})
}
