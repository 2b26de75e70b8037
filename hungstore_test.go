package management

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// A store that hangs, ignoring its context as go-redis does on a socket
// read without ContextTimeoutEnabled, fails no call: the SDK abandons each
// store call at SharedStoreTimeout, so a check or a token fetch waits at
// most that long, and the calls left running are bounded and counted. The
// timeouts of the first operations open the breaker (3 in a row); on the
// cold replica, whose read and write-back are two, it stays closed. Once
// the store answers again, the calls end, and a probe after the cool-down
// (in the background) closes the breaker.
func TestHungStoreFailsNoCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 50 * time.Millisecond
		f := newTestFleet(t)
		var logs logBuffer
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
		if got := c.stores.Running(); got != fleet.MaxCalls {
			t.Errorf("%d store calls left running; want the bound, %d", got, fleet.MaxCalls)
		}
		if got := c.stores.Abandoned(); got != fleet.MaxCalls {
			t.Errorf("%d store calls abandoned; want %d (the others refused at once)", got, fleet.MaxCalls)
		}
		if got := f.tokens.Load(); got != 2 {
			t.Errorf("%d token requests; want 2 (the warm replica's, then the cold one's on its own)", got)
		}
		if got := f.authn.Load(); got != 200 {
			t.Errorf("%d authenticate calls; want 200 (each replica on its own)", got)
		}
		if got := cold.stores.Abandoned(); got != 2 {
			t.Errorf("%d token store calls abandoned; want 2 (the read, then the write-back, in the background)", got)
		}
		close(release)
		synctest.Wait()
		if got := c.stores.Running() + cold.stores.Running(); got != 0 {
			t.Errorf("%d store calls running after the store answers again; want 0", got)
		}
		time.Sleep(2 * timeout)                                   // the cool-down, jittered around the timeout
		if _, err := checkToken(ctx, a, "eu-after"); err != nil { // starts the probe
			t.Fatal(err)
		}
		synctest.Wait() // the probe's answer closes the breaker
		if want := fmt.Sprint("abandoned_calls=", fleet.MaxCalls); !strings.Contains(logs.String(), want) {
			t.Errorf("no record of the store answering again with %s:\n%s", want, logs.String())
		}
	})
}
