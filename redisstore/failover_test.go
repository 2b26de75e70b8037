package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// A fleet under load while a master of the Cluster dies or hangs.

const (
	// failoverReplicas is the size of the fleet under load.
	failoverReplicas = 6
	// failoverTokenLifetime is short, so that the fleet refreshes its token
	// every couple of seconds and the test sees several refresh rounds.
	failoverTokenLifetime = 2 * time.Second
	// failoverStoreTimeout is the fleet's Config.SharedStoreTimeout: well
	// under slowCall, so that the bounds the tests assert (a call may
	// outlast it by 250 ms; no call takes slowCall) tell a call that waited
	// for the store's timeout from one that waited on a lease; and above a
	// GET's round trip under the race detector on a busy 2-core host, which
	// can pass the default (150 ms): a timeout opens the breaker, and a
	// replica then shares nothing for a cool-down.
	failoverStoreTimeout = 200 * time.Millisecond
	// slowCall is the duration of a call that waited on something other
	// than the store's timeout, such as a lease behind a dead value.
	slowCall = 600 * time.Millisecond
)

// tokenClock records when each token request leaves a replica.
type tokenClock struct {
	next  http.RoundTripper
	mu    sync.Mutex
	times []time.Time
}

func (c *tokenClock) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/auth/token") {
		c.mu.Lock()
		c.times = append(c.times, time.Now())
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

// rounds groups the token requests into refresh rounds: requests less than
// a quarter of the token's lifetime apart are one round.
func (c *tokenClock) rounds() [][]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rounds [][]time.Time
	for i, at := range c.times {
		if i == 0 || at.Sub(c.times[i-1]) > failoverTokenLifetime/4 {
			rounds = append(rounds, nil)
		}
		rounds[len(rounds)-1] = append(rounds[len(rounds)-1], at)
	}
	return rounds
}

// sharedSince returns when the fleet went back to one token request per
// round for good: the start of the first round after since from which on
// every round, at least two, made one request. ok is false until then.
func (c *tokenClock) sharedSince(since time.Time) (at time.Time, ok bool) {
	rounds := c.rounds()
	if n := len(rounds); n > 0 && time.Since(rounds[n-1][len(rounds[n-1])-1]) <= failoverTokenLifetime/4 {
		rounds = rounds[:n-1] // a round under way may grow yet
	}
	start := -1
	for i, r := range rounds {
		switch {
		case r[0].Before(since):
		case len(r) > 1:
			start = -1
		case start < 0:
			start = i
		}
	}
	if start < 0 || len(rounds)-start < 2 {
		return time.Time{}, false
	}
	return rounds[start][0], true
}

// call is one call of the fleet under load.
type call struct {
	what  string
	start time.Time
	took  time.Duration
	err   error
}

// load runs the fleet in rounds until stop is closed: in each, every
// replica at once reads a User and checks an End User token that is new to
// the fleet, as a burst of sign-ins spread over the replicas.
type load struct {
	f      *fleet
	mu     sync.Mutex
	calls  []call
	rounds atomic.Int64
	stop   chan struct{}
	done   chan struct{}
}

func startLoad(f *fleet) *load {
	l := &load{f: f, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(100 * time.Millisecond) // pacing the load (leaving the CPU to the other tests), not timing a behaviour
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			tok := f.srv.IssueEndUserToken("u-1")
			f.each(func(r replica) error {
				l.do("Users.Get", func() error {
					_, err := r.client.Users.Get(context.Background(), "u-1")
					return err
				})
				l.do("Check", func() error {
					_, err := check(r.auth, tok)
					return err
				})
				return nil
			})
			l.rounds.Add(1)
		}
	}()
	return l
}

func (l *load) do(what string, fn func() error) {
	start := time.Now()
	err := fn()
	l.mu.Lock()
	l.calls = append(l.calls, call{what: what, start: start, took: time.Since(start), err: err})
	l.mu.Unlock()
}

// waitRounds waits until the load has run n more rounds.
func (l *load) waitRounds(n int64) {
	target := l.rounds.Load() + n
	for l.rounds.Load() < target {
		time.Sleep(5 * time.Millisecond) // polling the load's progress
	}
}

// finish stops the load and returns its calls.
func (l *load) finish() []call {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// figures summarises calls: how many, how many failed, the slowest, how
// many took longer than slowCall, and how many of those that ran while the
// store was disrupted took longer than a bound of the test's.
type figures struct {
	calls, failed, over600, slow int
	slowest                      call
	errs                         []error
}

// worst lists the n slowest calls, with when they started relative to at.
func worst(calls []call, n int, at time.Time) string {
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b call) int { return int(b.took - a.took) })
	var parts []string
	for _, c := range calls[:min(n, len(calls))] {
		parts = append(parts, fmt.Sprintf("%s %v@%+.2fs", c.what, c.took.Round(time.Millisecond), c.start.Sub(at).Seconds()))
	}
	return strings.Join(parts, ", ")
}

// storeBound is how long a call may take while the store is disrupted (in
// w): the store's timeout and 250 ms, beyond the slowest call that did not
// run in w, which measures the host's own delays (on a busy 2-core host
// under the race detector, a call with no store trouble may take a few
// hundred milliseconds; on a quiet one, a few).
func storeBound(calls []call, w window) (bound, calm time.Duration) {
	for _, c := range calls {
		if !w.overlaps(c) {
			calm = max(calm, c.took)
		}
	}
	return failoverStoreTimeout + 250*time.Millisecond + calm, calm
}

// window is when the store was disrupted.
type window struct{ from, to time.Time }

// overlaps reports whether c ran at some time in w.
func (w window) overlaps(c call) bool {
	return !c.start.Add(c.took).Before(w.from) && !c.start.After(w.to)
}

func (fig *figures) add(c call, bound time.Duration, disrupted window) {
	fig.calls++
	if c.err != nil {
		fig.failed++
		if len(fig.errs) < 5 {
			fig.errs = append(fig.errs, fmt.Errorf("%s: %w", c.what, c.err))
		}
	}
	if c.took > slowCall {
		fig.over600++
	}
	if c.took > bound && disrupted.overlaps(c) {
		fig.slow++
	}
	if c.took > fig.slowest.took {
		fig.slowest = c
	}
}

// timedFleet starts a fleet of failoverReplicas, each replica with the store
// that store returns, against a server whose token requests are timed.
func timedFleet(t *testing.T, store func() management.SharedStore) (*fleet, *tokenClock) {
	srv := managementtest.NewServer(managementtest.WithTokenLifetime(failoverTokenLifetime))
	t.Cleanup(srv.Close)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	clock := &tokenClock{}
	f := startFleet(t, srv, failoverReplicas, store, func(cfg *management.Config) {
		clock.next = cfg.HTTPClient.Transport
		hc := *cfg.HTTPClient
		hc.Transport = clock
		cfg.HTTPClient = &hc
		cfg.SharedStoreTimeout = failoverStoreTimeout
		// Refreshed well before it expires, as a token of a real lifetime
		// is: a refresh slowed by the store never holds a call up.
		cfg.RefreshMargin = failoverTokenLifetime * 2 / 5
	})
	return f, clock
}

// A master killed (SIGKILL) under load fails no call, no call waits on a
// lease behind the dead value, and the fleet goes back to one token request
// per lifetime within a few seconds of the replica's promotion.
func TestClusterMasterKilled(t *testing.T) {
	t.Parallel()
	disruptMaster(t, false, func(c *cluster, victim *redisServer) time.Time {
		victim.Stop()
		return c.waitHealthy(t, []*redisServer{victim})
	})
}

// A master whose process stops (SIGSTOP) under load, long enough for the
// cluster to promote its replica, then goes on (SIGCONT) and finds itself a
// replica: no call fails or outlasts the store's timeout by more than 250 ms
// (beyond the host's own delays, see storeBound), and the fleet goes back
// to one token request per lifetime within a few seconds of the promotion.
func TestClusterMasterPaused(t *testing.T) {
	t.Parallel()
	disruptMaster(t, true, func(c *cluster, victim *redisServer) time.Time {
		victim.Pause(t)
		promoted := c.waitHealthy(t, []*redisServer{victim})
		victim.Resume(t)
		return promoted
	})
}

// disruptMaster runs a fleet on a new cluster, disrupts the master that
// holds the fleet's token while the fleet is under load (disrupt returns
// when the cluster was seen healthy again, a replica promoted), and
// asserts that no call failed, that none took longer than slowCall (nor,
// when bounded, storeBound while the master was disrupted), and
// that the fleet went back to one token request per refresh round within
// 8 s of the promotion.
func disruptMaster(t *testing.T, bounded bool, disrupt func(*cluster, *redisServer) time.Time) {
	c := startCluster(t)
	// Each replica has its own cluster client, as separate processes have.
	f, clock := timedFleet(t, func() management.SharedStore { return New(c.Client(t)) })
	l := startLoad(f)
	l.waitRounds(5)
	tokenKeys := c.keys(t, DefaultPrefix+"*:token")
	// A replica's first operation on a fresh cluster client may outlast
	// the store's timeout (go-redis loads the slots and the command table
	// first), and the breaker then skips the token's write-back: the token
	// is stored at the next refresh.
	for rounds := 0; len(tokenKeys) == 0 && rounds < 40; rounds++ {
		l.waitRounds(1)
		tokenKeys = c.keys(t, DefaultPrefix+"*:token")
	}
	if len(tokenKeys) != 1 {
		l.finish()
		t.Fatalf("token keys in the cluster: %q; want one", tokenKeys)
	}
	victim := c.masterOf(t, tokenKeys[0])

	disrupted := time.Now()
	promoted := disrupt(c, victim)
	deadline := promoted.Add(8 * time.Second)
	var shared time.Time
	for {
		at, ok := clock.sharedSince(promoted)
		if ok {
			shared = at
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the fleet's progress
	}
	calls := l.finish()
	t.Logf("slowest calls: %s", worst(calls, 5, disrupted))
	slowest, calm := storeBound(calls, window{disrupted, promoted})
	if !bounded {
		slowest = slowCall
	}
	var fig figures
	for _, c := range calls {
		fig.add(c, slowest, window{disrupted, promoted})
	}
	sharedAfter := "never"
	if !shared.IsZero() {
		sharedAfter = shared.Sub(disrupted).Round(10 * time.Millisecond).String()
	}
	t.Logf("%d calls, %d failed, slowest %v (%s), %d over %v, %d during the disruption over %v (slowest outside it %v); promoted %v after the disruption, one token request per round again %s after it; rounds: %v",
		fig.calls, fig.failed, fig.slowest.took.Round(time.Millisecond), fig.slowest.what, fig.over600, slowCall, fig.slow, slowest.Round(time.Millisecond), calm.Round(time.Millisecond),
		promoted.Sub(disrupted).Round(10*time.Millisecond), sharedAfter, roundSizes(clock, disrupted))
	if fig.failed > 0 {
		t.Errorf("%d of %d calls failed: %v", fig.failed, fig.calls, errors.Join(fig.errs...))
	}
	if fig.slow > 0 {
		t.Errorf("%d calls that ran during the disruption took longer than %v (slowest of all %v, %s)", fig.slow, slowest, fig.slowest.took, fig.slowest.what)
	}
	if fig.over600 > 0 {
		t.Errorf("%d calls took longer than %v (slowest %v, %s): they waited on more than the store's timeout, such as a lease behind a dead value", fig.over600, slowCall, fig.slowest.took, fig.slowest.what)
	}
	if shared.IsZero() {
		t.Errorf("the fleet did not go back to one token request per round within 8 s of the promotion (%v after the disruption)", promoted.Sub(disrupted).Round(10*time.Millisecond))
	}
}

// roundSizes describes the refresh rounds: how many token requests each
// made, and when it started relative to at.
func roundSizes(clock *tokenClock, at time.Time) string {
	var parts []string
	for _, r := range clock.rounds() {
		parts = append(parts, fmt.Sprintf("%d@%+.1fs", len(r), r[0].Sub(at).Seconds()))
	}
	return strings.Join(slices.Clip(parts), " ")
}

// A redis-server whose process stops (SIGSTOP) for a few seconds under load
// fails no call, and no call outlasts the store's timeout by more than
// 250 ms (beyond the host's own delays, see storeBound), whether or not
// the go-redis client honours context deadlines: the SDK abandons a store
// call that overruns. Once it goes on, the fleet shares its token again.
//
// Its cases run in parallel with each other, not with the cluster's tests,
// whose start-up (six servers, their replication) would take the CPU from
// under the calls it times.
func TestRedisPausedFailsNoCall(t *testing.T) {
	for _, deadlines := range []bool{true, false} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", deadlines), func(t *testing.T) {
			t.Parallel()
			redisSrv := startRedis(t)
			f, clock := timedFleet(t, func() management.SharedStore {
				rdb := redis.NewClient(&redis.Options{Addr: redisSrv.Addr, ContextTimeoutEnabled: deadlines})
				t.Cleanup(func() { _ = rdb.Close() })
				return New(rdb, WithLogger(slog.New(slog.DiscardHandler)))
			})
			l := startLoad(f)
			l.waitRounds(5)
			paused := time.Now()
			redisSrv.Pause(t)
			time.Sleep(3 * time.Second) // how long the host hangs; the assertions are on the calls' own durations
			redisSrv.Resume(t)
			resumed := time.Now()
			deadline := resumed.Add(8 * time.Second)
			var shared time.Time
			for shared.IsZero() && time.Now().Before(deadline) {
				shared, _ = clock.sharedSince(resumed)
				time.Sleep(50 * time.Millisecond) // polling the fleet's progress
			}
			var fig figures
			calls := l.finish()
			t.Logf("slowest calls: %s", worst(calls, 5, paused))
			bound, calm := storeBound(calls, window{paused, resumed})
			for _, c := range calls {
				fig.add(c, bound, window{paused, resumed})
			}
			t.Logf("%d calls, %d failed, slowest %v (%s), %d during the pause over %v (slowest outside it %v); one token request per round again %v after the pause; rounds: %v",
				fig.calls, fig.failed, fig.slowest.took.Round(time.Millisecond), fig.slowest.what, fig.slow, bound.Round(time.Millisecond), calm.Round(time.Millisecond),
				shared.Sub(paused).Round(10*time.Millisecond), roundSizes(clock, paused))
			if fig.failed > 0 {
				t.Errorf("%d of %d calls failed: %v", fig.failed, fig.calls, errors.Join(fig.errs...))
			}
			if fig.slow > 0 {
				t.Errorf("%d calls that ran during the pause took longer than %v (slowest of all %v, %s)", fig.slow, bound, fig.slowest.took, fig.slowest.what)
			}
			if fig.over600 > 0 {
				t.Errorf("%d calls took longer than %v (slowest %v, %s)", fig.over600, slowCall, fig.slowest.took, fig.slowest.what)
			}
			if shared.IsZero() {
				t.Error("the fleet did not go back to one token request per round within 8 s of the end of the pause")
			}
		})
	}
}
