package redisstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

// countingStore counts the operations that reach its Store (a lease's
// release apart), and the successful ones since mark.
type countingStore struct {
	*Store
	mu       sync.Mutex
	calls    int
	answered int // successful since the last mark
}

func (s *countingStore) count(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err == nil {
		s.answered++
	}
}

// mark returns the operations so far and starts counting the successful ones anew.
func (s *countingStore) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered = 0
	return s.calls
}

func (s *countingStore) counts() (calls, answered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.answered
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.Store.Get(ctx, key)
	s.count(err)
	return v, err
}

func (s *countingStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	err := s.Store.Set(ctx, key, value, ttl)
	s.count(err)
	return err
}

func (s *countingStore) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	unlock, ok, err := s.Store.TryLock(ctx, key, ttl)
	s.count(err)
	return unlock, ok, err
}

// A redis-server stopped (SIGSTOP) costs a replica a few timeouts, not one
// per check: while it hangs, the replica sends it the operations whose
// timeouts open the breaker (3 in a row: here one check after the other,
// each waiting for its own), then one probe per cool-down (doubling from
// SharedStoreTimeout), and every check is answered within about one
// SharedStoreTimeout; once it goes on, the replica uses it again within a
// cool-down.
func TestRedisPausedCostsOneTimeout(t *testing.T) {
	redisSrv := startRedis(t)
	srv := seeded(t)
	store := &countingStore{Store: New(redisSrv.Client(t))}
	cfg := srv.Config()
	cfg.SharedStore = store
	cfg.SharedStoreTimeout = failoverStoreTimeout
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: store}
	checks := func(d time.Duration) (slowest time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); {
			start := time.Now()
			if _, err := check(auth, srv.IssueEndUserToken("u-1")); err != nil {
				t.Fatal(err)
			}
			slowest = max(slowest, time.Since(start))
			time.Sleep(5 * time.Millisecond) // the pace of the requests
		}
		return slowest
	}
	checks(200 * time.Millisecond) // warm: the token fetched, verdicts shared

	const pause = 2 * time.Second
	before := store.mark()
	redisSrv.Pause(t)
	slowest := checks(pause)
	redisSrv.Resume(t)
	during, _ := store.counts()
	// Three operations (750 ms), then a probe after each cool-down, at the
	// soonest (SharedStoreTimeout jittered down by 20%, doubling, from the
	// failed probe's timeout): 2 in the rest of the 2 s.
	if n := during - before; n > 5 {
		t.Errorf("%d operations reached Redis in %v of hang; want at most 5 (three, then one probe per cool-down)", n, pause)
	}
	if bound := failoverStoreTimeout + 250*time.Millisecond; slowest > bound {
		t.Errorf("the slowest check during the hang took %v; want at most %v (one timeout, and the host's delays)", slowest, bound)
	}

	store.mark()
	resumed := time.Now()
	for _, answered := store.counts(); answered == 0; _, answered = store.counts() {
		if time.Since(resumed) > 3*time.Second { // the cool-down after three failed probes: 1.6 s, jittered up to 1.92 s
			t.Fatal("Redis was not used again within a cool-down after it went on")
		}
		checks(20 * time.Millisecond)
	}
}
