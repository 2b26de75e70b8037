package benchmark

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

const (
	// stormGoroutines call at once on one client.
	stormGoroutines = 1000
	// stormIdleConns lets every storm goroutine keep its connection, so that
	// iterations reuse them instead of dialling (and exhausting loopback
	// ports): the storm measures the token cache, not TCP set-up.
	stormIdleConns = stormGoroutines + 64
	// stormExpirySlack is slept past a token's lifetime to be sure it expired.
	stormExpirySlack = 150 * time.Millisecond
	// stormBatch clients are warmed together and expire together, so that
	// one sleep serves that many iterations of the expired storm.
	stormBatch = 32
)

// stormRun releases n goroutines at once, each making one call, and
// returns how many calls failed.
func stormRun(n int, call func() error) int64 {
	var wg sync.WaitGroup
	var failures atomic.Int64
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			if call() != nil {
				failures.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	return failures.Load()
}

// stormResult is what one storm cost in token requests and failures.
type stormResult struct {
	tokenRequests int64
	failures      int64
}

// stormSDK runs a storm of Users.Get on c and counts s's token requests.
func stormSDK(s *benchServer, c *management.Client) stormResult {
	ctx := context.Background()
	before := s.tokenRequests.Load()
	failures := stormRun(stormGoroutines, func() error {
		_, err := c.Users.Get(ctx, benchUserID)
		return err
	})
	return stormResult{tokenRequests: s.tokenRequests.Load() - before, failures: failures}
}

func stormBaseline(s *benchServer, c *baselineClient) stormResult {
	ctx := context.Background()
	before := s.tokenRequests.Load()
	failures := stormRun(stormGoroutines, func() error {
		_, err := c.getUser(ctx, benchUserID)
		return err
	})
	return stormResult{tokenRequests: s.tokenRequests.Load() - before, failures: failures}
}

// newStormHTTPClient is the transport of one storm benchmark or test; its
// connections are closed when tb ends, so that runs do not pile up open files.
func newStormHTTPClient(tb testing.TB) *http.Client {
	hc := newBenchHTTPClient(stormIdleConns)
	tb.Cleanup(hc.CloseIdleConnections)
	return hc
}

// newStormClient is a cold SDK client: no token yet.
func newStormClient(tb testing.TB, s *benchServer, hc *http.Client) *management.Client {
	tb.Helper()
	c, err := management.NewClient(management.Config{
		BaseURL: s.URL, ClientID: benchClientID, ClientSecret: benchClientSecret, HTTPClient: hc,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// stormAgedClients hands out SDK clients whose token has just expired. It
// warms stormBatch clients at once and sleeps out their token's lifetime
// once for the whole batch.
type stormAgedClients struct {
	s        *benchServer
	hc       *http.Client
	lifetime time.Duration
	ready    []*management.Client
}

func (a *stormAgedClients) next(tb testing.TB) *management.Client {
	tb.Helper()
	if len(a.ready) == 0 {
		for range stormBatch {
			a.ready = append(a.ready, newBenchSDK(tb, a.s, a.hc))
		}
		time.Sleep(a.lifetime + stormExpirySlack)
	}
	c := a.ready[0]
	a.ready = a.ready[1:]
	return c
}

// stormMetrics accumulates storms and reports them per storm.
type stormMetrics struct {
	storms, tokenRequests, failures int64
	wrongTokenCounts                int64 // storms whose token requests were not the expected count
}

func (m *stormMetrics) add(r stormResult, wantTokens int64) {
	m.storms++
	m.tokenRequests += r.tokenRequests
	m.failures += r.failures
	if r.tokenRequests != wantTokens {
		m.wrongTokenCounts++
	}
}

func (m *stormMetrics) report(b *testing.B, wantTokens int64) {
	b.ReportMetric(float64(m.tokenRequests)/float64(m.storms), "token-reqs/op")
	b.ReportMetric(float64(m.failures)/float64(m.storms), "failures/op")
	if m.failures != 0 || m.wrongTokenCounts != 0 {
		b.Errorf("%d storms: %d failed calls; %d storms did not make exactly %d token request(s)",
			m.storms, m.failures, m.wrongTokenCounts, wantTokens)
	}
}

// BenchmarkTokenStorm is 1 000 goroutines calling Users.Get at once: on a
// cold client (no token yet) and on a client whose token has just expired.
// Each storm must make exactly one token request (token-reqs/op) and no
// call may fail (failures/op). The baseline holds one pre-fetched token
// throughout. Both sides keep up to stormIdleConns connections, so
// iterations after the first reuse them.
func BenchmarkTokenStorm(b *testing.B) {
	const lifetime = time.Second
	s := newBenchServer(b, 0, lifetime)
	b.Run("token=cold", func(b *testing.B) {
		runImpls(b, func(b *testing.B) { // impl=sdk
			hc := newStormHTTPClient(b)
			var m stormMetrics
			b.ReportAllocs()
			for b.Loop() {
				// Building the client is not timed: the baseline builds nothing.
				b.StopTimer()
				c := newStormClient(b, s, hc)
				b.StartTimer()
				m.add(stormSDK(s, c), 1)
			}
			m.report(b, 1)
		}, func(b *testing.B) { // impl=baseline
			c := newBenchBaseline(b, s, newStormHTTPClient(b))
			var m stormMetrics
			b.ReportAllocs()
			for b.Loop() {
				m.add(stormBaseline(s, c), 0)
			}
			m.report(b, 0)
		})
	})
	b.Run("token=expired", func(b *testing.B) {
		runImpls(b, func(b *testing.B) { // impl=sdk
			aged := &stormAgedClients{s: s, hc: newStormHTTPClient(b), lifetime: lifetime}
			var m stormMetrics
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := aged.next(b)
				b.StartTimer()
				m.add(stormSDK(s, c), 1)
			}
			m.report(b, 1)
		}, func(b *testing.B) { // impl=baseline
			c := newBenchBaseline(b, s, newStormHTTPClient(b))
			var m stormMetrics
			b.ReportAllocs()
			for b.Loop() {
				m.add(stormBaseline(s, c), 0)
			}
			m.report(b, 0)
		})
	})
}

// TestTokenStorm: 1 000 goroutines on a cold client make exactly one token
// request and all succeed; once the token has expired, the next storm
// makes exactly one more. The lifetime is real (2 s): the SDK client over
// a loopback connection cannot run in a synctest bubble.
func TestTokenStorm(t *testing.T) {
	const lifetime = 2 * time.Second
	s := newBenchServer(t, 0, lifetime)
	c := newStormClient(t, s, newStormHTTPClient(t))

	cold := stormSDK(s, c)
	if cold != (stormResult{tokenRequests: 1}) {
		t.Fatalf("cold storm: %d token requests, %d failed calls; want 1 and 0", cold.tokenRequests, cold.failures)
	}

	// The token was received before the storm ended: sleeping its lifetime
	// from now puts every later call past its expiry.
	time.Sleep(lifetime + stormExpirySlack)
	expired := stormSDK(s, c)
	if expired != (stormResult{tokenRequests: 1}) {
		t.Fatalf("storm after expiry: %d token requests, %d failed calls; want 1 and 0", expired.tokenRequests, expired.failures)
	}
	if got := s.tokenRequests.Load(); got != 2 {
		t.Errorf("token requests in all: %d, want 2", got)
	}
}
