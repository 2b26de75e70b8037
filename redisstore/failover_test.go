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
	// failoverStoreTimeout is the fleet's Config.SharedStoreTimeout: above
	// the default (200 ms), and above a store operation's round trip under
	// the race detector on a 2-core host with a load average of 20, where
	// redis-server itself waits for the CPU (at 100 ms, the replicas' reads
	// of the token timed out and each fetched its own; a timeout opens the
	// breaker, and a replica then shares nothing for a cool-down).
	failoverStoreTimeout = 250 * time.Millisecond
	// stuckCall is how long, beyond the host's own delay (see hostDelay), a
	// call takes that waited for the store to come back, or on one of
	// go-redis's own timeouts (3 to 5 s), rather than being let go by the
	// SDK: longer than the store operations a call makes in a row (five at
	// most, each abandoned at failoverStoreTimeout), shorter than a
	// disruption. How long a call waits on a hung store, or on a lease
	// left behind, to the millisecond, is asserted in a synctest bubble
	// (the root module's TestHungStoreFailsNoCall, TestFleetFigures,
	// TestDeadVerdictLeaseWaitsBriefly): in real time, a 600 ms bound
	// failed 1 to 3 runs in 20 on a busy 2-core host, where redis-server
	// waits for the CPU too and a check makes up to five store operations.
	stuckCall = 2 * time.Second
	// pause is how long TestRedisPausedFailsNoCall stops redis-server:
	// longer than stuckCall, so that calls stuck until it goes on are
	// told from the others.
	pause = 4 * time.Second
	// sharedAgain bounds how long after the disruption the fleet goes back
	// to one token request per refresh round: the token lease's lifetime
	// (10 s) and two refresh rounds. A command that a client gave up on
	// still runs when a stopped server goes on: a lease taken that way
	// has no holder, and each replica fetches its own token until it
	// lapses.
	sharedAgain = 10*time.Second + 2*failoverTokenLifetime*3/5
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

// call is one call of the fleet under load, or of its control replica.
type call struct {
	what    string
	control bool // a call of the control replica, which has no store
	start   time.Time
	took    time.Duration
	err     error
}

func (c call) end() time.Time { return c.start.Add(c.took) }

// load runs the fleet in rounds until stop is closed: in each, every
// replica at once reads a User and checks an End User token that is new to
// the fleet, as a burst of sign-ins spread over the replicas. A control
// replica without a store makes the same calls at the same moments: how
// long they take is the host's own delay (see hostDelay).
type load struct {
	f       *fleet
	control replica
	mu      sync.Mutex
	calls   []call
	rounds  atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func startLoad(t *testing.T, f *fleet) *load {
	control := startFleet(t, f.srv, 1, nil, func(*management.Config) {}).nodes[0]
	l := &load{f: f, control: control, stop: make(chan struct{}), done: make(chan struct{})}
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
			var wg sync.WaitGroup
			wg.Go(func() { l.round(l.control, true, tok) })
			f.each(func(r replica) error {
				l.round(r, false, tok)
				return nil
			})
			wg.Wait()
			l.rounds.Add(1)
		}
	}()
	return l
}

// round makes r's calls of one round: read a User, check tok.
func (l *load) round(r replica, control bool, tok string) {
	l.do("Users.Get", control, func() error {
		_, err := r.client.Users.Get(context.Background(), "u-1")
		return err
	})
	l.do("Check", control, func() error {
		_, err := check(r.auth, tok)
		return err
	})
}

func (l *load) do(what string, control bool, fn func() error) {
	start := time.Now()
	err := fn()
	l.mu.Lock()
	l.calls = append(l.calls, call{what: what, control: control, start: start, took: time.Since(start), err: err})
	l.mu.Unlock()
}

// waitRounds waits until the load has run n more rounds.
func (l *load) waitRounds(n int64) {
	target := l.rounds.Load() + n
	for l.rounds.Load() < target {
		time.Sleep(5 * time.Millisecond) // polling the load's progress
	}
}

// finish stops the load and returns its calls, the control replica's
// included.
func (l *load) finish() []call {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// figures summarises the fleet's calls: how many, how many failed, how
// many were stuck (stuckCall beyond the host's delay), the slowest; and the
// longest host delay (the control replica's slowest call).
type figures struct {
	calls, failed, stuck int
	slowest              call
	host                 time.Duration
	errs                 []error
}

// worst lists the n slowest calls, with when they started relative to at.
func worst(calls []call, n int, at time.Time) string {
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b call) int { return int(b.took - a.took) })
	var parts []string
	for _, c := range calls[:min(n, len(calls))] {
		what := c.what
		if c.control {
			what += " (control)"
		}
		parts = append(parts, fmt.Sprintf("%s %v@%+.2fs", what, c.took.Round(time.Millisecond), c.start.Sub(at).Seconds()))
	}
	return strings.Join(parts, ", ")
}

// hostDelay is the host's own delay while c ran: twice the slowest call of
// the control replica (no store: the same calls but for the store's, at
// the same moments) that ran at the same time as c. On a busy 2-core host
// under the race detector, a call with no store at all may take seconds
// (up to 2.4 s with a load average of 12 to 25, in bursts that a slowest
// call measured at another moment missed); on a quiet one, a few
// milliseconds. Twice: a call with a store waits to be scheduled more
// often (its store calls, their timers, go-redis's goroutines). The
// control replica has no store, so that no trouble of the store, nor of
// the SDK with it, counts as the host's.
func hostDelay(calls []call, c call) time.Duration {
	var d time.Duration
	for _, k := range calls {
		if k.control && !k.end().Before(c.start) && !k.start.After(c.end()) {
			d = max(d, k.took)
		}
	}
	return 2 * d
}

// tally counts the fleet's calls; those of the control replica are the
// host's delay.
func tally(calls []call) figures {
	var fig figures
	for _, c := range calls {
		if c.control {
			fig.host = max(fig.host, c.took)
			continue
		}
		fig.calls++
		if c.err != nil {
			fig.failed++
			if len(fig.errs) < 5 {
				fig.errs = append(fig.errs, fmt.Errorf("%s: %w", c.what, c.err))
			}
		}
		if c.took > stuckCall+hostDelay(calls, c) {
			fig.stuck++
		}
		if c.took > fig.slowest.took {
			fig.slowest = c
		}
	}
	return fig
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

// A master killed (SIGKILL) under load fails no call, none is held up by
// the dead master (see stuckCall), and the fleet goes back to one token
// request per lifetime after the replica's promotion (see sharedAgain).
func TestClusterMasterKilled(t *testing.T) {
	t.Parallel()
	disruptMaster(t, func(c *cluster, victim *redisServer) time.Time {
		victim.Stop()
		return c.waitHealthy(t, []*redisServer{victim})
	})
}

// A master whose process stops (SIGSTOP) under load, long enough for the
// cluster to promote its replica, then goes on (SIGCONT) and finds itself a
// replica: no call fails or waits for the master (see stuckCall), and the
// fleet goes back to one token request per lifetime (see sharedAgain).
func TestClusterMasterPaused(t *testing.T) {
	t.Parallel()
	disruptMaster(t, func(c *cluster, victim *redisServer) time.Time {
		victim.Pause(t)
		promoted := c.waitHealthy(t, []*redisServer{victim})
		victim.Resume(t)
		return promoted
	})
}

// disruptMaster runs a fleet on a new cluster, disrupts the master that
// holds the fleet's token while the fleet is under load (disrupt returns
// when the cluster was seen healthy again, a replica promoted), and
// asserts that no call failed or was stuck (see stuckCall), and that the
// fleet went back to one token request per refresh round within
// sharedAgain of the promotion.
func disruptMaster(t *testing.T, disrupt func(*cluster, *redisServer) time.Time) {
	c := startCluster(t)
	// Each replica has its own cluster client, as separate processes have.
	f, clock := timedFleet(t, func() management.SharedStore { return New(c.Client(t)) })
	l := startLoad(t, f)
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
	deadline := promoted.Add(sharedAgain)
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
	fig := tally(calls)
	sharedAfter := "never"
	if !shared.IsZero() {
		sharedAfter = shared.Sub(disrupted).Round(10 * time.Millisecond).String()
	}
	t.Logf("%d calls, %d failed, %d stuck (slowest %v, %s; longest host delay %v); promoted %v after the disruption, one token request per round again %s after it; rounds: %v",
		fig.calls, fig.failed, fig.stuck, fig.slowest.took.Round(time.Millisecond), fig.slowest.what, fig.host.Round(time.Millisecond),
		promoted.Sub(disrupted).Round(10*time.Millisecond), sharedAfter, roundSizes(clock, disrupted))
	if fig.failed > 0 {
		t.Errorf("%d of %d calls failed: %v", fig.failed, fig.calls, errors.Join(fig.errs...))
	}
	if fig.stuck > 0 {
		t.Errorf("%d calls took longer than %v beyond the host's delay (slowest %v, %s): the dead or stopped master held them", fig.stuck, stuckCall, fig.slowest.took, fig.slowest.what)
	}
	if shared.IsZero() {
		t.Errorf("the fleet did not go back to one token request per round within %v of the promotion (%v after the disruption)", sharedAgain, promoted.Sub(disrupted).Round(10*time.Millisecond))
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
// fails no call, and no call waits for it (see stuckCall), whether or not
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
			l := startLoad(t, f)
			l.waitRounds(5)
			paused := time.Now()
			redisSrv.Pause(t)
			time.Sleep(pause) // how long the host hangs; the assertions are on the calls' own durations
			redisSrv.Resume(t)
			resumed := time.Now()
			deadline := resumed.Add(sharedAgain)
			var shared time.Time
			for shared.IsZero() && time.Now().Before(deadline) {
				shared, _ = clock.sharedSince(resumed)
				time.Sleep(50 * time.Millisecond) // polling the fleet's progress
			}
			calls := l.finish()
			t.Logf("slowest calls: %s", worst(calls, 5, paused))
			fig := tally(calls)
			t.Logf("%d calls, %d failed, %d stuck (slowest %v, %s; longest host delay %v); one token request per round again %v after the pause; rounds: %v",
				fig.calls, fig.failed, fig.stuck, fig.slowest.took.Round(time.Millisecond), fig.slowest.what, fig.host.Round(time.Millisecond),
				shared.Sub(paused).Round(10*time.Millisecond), roundSizes(clock, paused))
			if fig.failed > 0 {
				t.Errorf("%d of %d calls failed: %v", fig.failed, fig.calls, errors.Join(fig.errs...))
			}
			if fig.stuck > 0 {
				t.Errorf("%d calls took longer than %v beyond the host's delay (slowest %v, %s): they waited for redis-server", fig.stuck, stuckCall, fig.slowest.took, fig.slowest.what)
			}
			if shared.IsZero() {
				t.Errorf("the fleet did not go back to one token request per round within %v of the end of the pause", sharedAgain)
			}
		})
	}
}
