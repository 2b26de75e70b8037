package peers

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/benchmark/peers/peerapi"
)

// columns are the sub-benchmarks of every benchmark, each a client of the
// same server: client=sdk, client=generated, client=raw (and, for ranging,
// client=sdk-prefetch). They run in the order PEER_ORDER gives (a
// comma-separated list of names; scripts/bench.sh rotates it from round to
// round), so that none always meets what the previous one left behind.
type column struct {
	name string
	run  func(b *testing.B)
}

func runColumns(b *testing.B, cols ...column) {
	order := strings.Split(os.Getenv("PEER_ORDER"), ",")
	rank := func(name string) int {
		for i, n := range order {
			if n == name || strings.HasPrefix(name, n+"-") {
				return i
			}
		}
		return len(order)
	}
	// A stable insertion sort by rank: PEER_ORDER may name only some.
	for i := 1; i < len(cols); i++ {
		for j := i; j > 0 && rank(cols[j].name) < rank(cols[j-1].name); j-- {
			cols[j], cols[j-1] = cols[j-1], cols[j]
		}
	}
	for _, c := range cols {
		b.Run("client="+c.name, c.run)
	}
}

// warmServer sends s a few thousand reads before anything is measured, so
// that no column pays for warming the server and the heap by running first.
func warmServer(tb testing.TB, s *server) {
	tb.Helper()
	c := newRaw(s, newTransport(tb, 64))
	n := 3000
	if testing.Short() {
		n = 100
	}
	for range n {
		if _, err := c.getUser(context.Background(), userID); err != nil {
			tb.Fatalf("warming the server: %v", err)
		}
	}
	c.http.CloseIdleConnections()
}

// callerTimeout is the Timeout of the caller's http.Client in the
// hc=timeout rows: each attempt may take that long.
const callerTimeout = 30 * time.Second

// httpClients are the two ways a caller hands its transport over: a plain
// http.Client, and one with a Timeout, which net/http enforces as a
// context deadline only when the client's transport is an *http.Transport.
var httpClients = []struct {
	name    string
	timeout time.Duration
}{{"plain", 0}, {"timeout", callerTimeout}}

// BenchmarkUsersGet is one GET /users/{id} round trip, a SingleUser of about
// 1.5 KB decoded, with a token already held.
func BenchmarkUsersGet(b *testing.B) {
	s := newServer(b, 0, 600*time.Second)
	warmServer(b, s)
	ctx := context.Background()
	for _, hc := range httpClients {
		b.Run("hc="+hc.name, func(b *testing.B) {
			runColumns(b, column{"sdk", func(b *testing.B) {
				c := newSDK(b, s, &http.Client{Transport: newTransport(b, 64), Timeout: hc.timeout})
				loop(b, func() error {
					u, err := c.Users.Get(ctx, userID)
					if err != nil {
						return err
					}
					return checkUser(u.ID, len(u.CustomSettings))
				})
			}}, column{"generated", func(b *testing.B) {
				g := newGenerated(b, s, newTransport(b, 64), true, hc.timeout)
				loop(b, func() error {
					u, err := g.getUser(ctx, userID)
					if err != nil {
						return err
					}
					return checkUser(u.Id, len(*u.CustomSettings))
				})
			}}, column{"raw", func(b *testing.B) {
				c := newRaw(s, newTransport(b, 64))
				c.http.Timeout = hc.timeout
				loop(b, func() error {
					u, err := c.getUser(ctx, userID)
					if err != nil {
						return err
					}
					return checkUser(u.ID, len(u.CustomSettings))
				})
			}})
		})
	}
}

// BenchmarkAuthenticate is one POST /authenticate of an End User token,
// without any cache.
func BenchmarkAuthenticate(b *testing.B) {
	s := newServer(b, 0, 600*time.Second)
	warmServer(b, s)
	ctx := context.Background()
	for _, hc := range httpClients {
		b.Run("hc="+hc.name, func(b *testing.B) {
			runColumns(b, column{"sdk", func(b *testing.B) {
				c := newSDK(b, s, &http.Client{Transport: newTransport(b, 64), Timeout: hc.timeout})
				loop(b, func() error {
					a, err := c.Authenticate(ctx, endUserHeader)
					return checkAuth(err, a != nil && a.Valid && a.UserID == userID)
				})
			}}, column{"generated", func(b *testing.B) {
				g := newGenerated(b, s, newTransport(b, 64), true, hc.timeout)
				loop(b, func() error {
					a, err := g.authenticate(ctx, endUserHeader)
					return checkAuth(err, a != nil && a.IsTokenValid && a.UserId != nil && *a.UserId == userID)
				})
			}}, column{"raw", func(b *testing.B) {
				c := newRaw(s, newTransport(b, 64))
				c.http.Timeout = hc.timeout
				loop(b, func() error {
					a, err := c.authenticate(ctx, endUserHeader)
					return checkAuth(err, a != nil && a.Valid && a.UserID != nil && *a.UserID == userID)
				})
			}})
		})
	}
}

func checkAuth(err error, ok bool) error {
	if err == nil && !ok {
		return errWrongAnswer
	}
	return err
}

var errWrongAnswer = &wrongAnswer{}

type wrongAnswer struct{}

func (*wrongAnswer) Error() string { return "the answer was not the expected one" }

// loop runs call once to warm the client (its token, its connection), then
// b.Loop times, failing on the first error.
func loop(b *testing.B, call func() error) {
	if err := call(); err != nil {
		b.Fatalf("warming: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
}

// listSize is the number of Users ranged over: 100 000, or 10 000 with -short.
func listSize() int {
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

// BenchmarkUsersList ranges over every User, in pages of 100, following
// next_page links with default options; client=sdk-prefetch sets
// ListOptions.Prefetch. ns/user and B/user are per User.
func BenchmarkUsersList(b *testing.B) {
	size := listSize()
	s := newServer(b, size, 600*time.Second)
	warmServer(b, s)
	ctx := context.Background()
	b.Run("users="+strconv.Itoa(size), func(b *testing.B) {
		sdk := func(opts *management.ListOptions) func(b *testing.B) {
			return func(b *testing.B) {
				c := newSDK(b, s, &http.Client{Transport: newTransport(b, 64)})
				listLoop(b, size, func(each func()) error {
					for u, err := range c.Users.List(ctx, opts) {
						if err != nil {
							return err
						}
						if u.ID != "" {
							each()
						}
					}
					return nil
				})
			}
		}
		runColumns(b, column{"sdk", sdk(nil)}, column{"sdk-prefetch", sdk(&management.ListOptions{Prefetch: true})},
			column{"generated", func(b *testing.B) {
				g := newGenerated(b, s, newTransport(b, 64), true, 0)
				listLoop(b, size, func(each func()) error {
					return g.listUsers(ctx, func(u *peerapi.User) {
						if u.Id != "" {
							each()
						}
					})
				})
			}}, column{"raw", func(b *testing.B) {
				c := newRaw(s, newTransport(b, 64))
				listLoop(b, size, func(each func()) error {
					return c.listUsers(ctx, func(u *rawUser) {
						if u.ID != "" {
							each()
						}
					})
				})
			}})
	})
}

// listLoop ranges b.Loop times and reports the time and bytes per User.
func listLoop(b *testing.B, size int, rangeAll func(each func()) error) {
	count := func() (int, error) {
		n := 0
		err := rangeAll(func() { n++ })
		return n, err
	}
	if n, err := count(); err != nil || n != size { // warms the token and the connection
		b.Fatalf("ranged over %d of %d Users: %v", n, size, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	iters := 0
	for b.Loop() {
		if n, err := count(); err != nil || n != size {
			b.Fatalf("ranged over %d of %d Users: %v", n, size, err)
		}
		iters++
	}
	runtime.ReadMemStats(&after)
	users := float64(iters * size)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/users, "ns/user")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/users, "B/user")
}

// stormGoroutines call at once on one cold client in BenchmarkColdStorm.
const stormGoroutines = 1000

// BenchmarkColdStorm is 1 000 goroutines calling Users.Get at once on a
// client that has no token yet. token-reqs/op must be 1 and failures/op 0
// in every column. Making the client is not timed; every column keeps up to
// 1 064 idle connections, so that iterations after the first reuse them.
func BenchmarkColdStorm(b *testing.B) {
	s := newServer(b, 0, 600*time.Second)
	ctx := context.Background()
	storm := func(b *testing.B, newCall func(t http.RoundTripper) func() error) {
		t := newTransport(b, stormGoroutines+64)
		var storms, tokens, failures int64
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			call := newCall(t)
			before := s.tokenRequests.Load()
			b.StartTimer()
			failures += stormRun(stormGoroutines, call)
			tokens += s.tokenRequests.Load() - before
			storms++
		}
		b.ReportMetric(float64(tokens)/float64(storms), "token-reqs/op")
		b.ReportMetric(float64(failures)/float64(storms), "failures/op")
		if tokens != storms || failures != 0 {
			b.Errorf("%d storms made %d token requests and %d failed calls; want one token request a storm and no failure", storms, tokens, failures)
		}
	}
	runColumns(b, column{"sdk", func(b *testing.B) {
		storm(b, func(t http.RoundTripper) func() error {
			c := newSDK(b, s, &http.Client{Transport: t})
			return func() error { _, err := c.Users.Get(ctx, userID); return err }
		})
	}}, column{"generated", func(b *testing.B) {
		storm(b, func(t http.RoundTripper) func() error {
			g := newGenerated(b, s, t, true, 0)
			return func() error { _, err := g.getUser(ctx, userID); return err }
		})
	}}, column{"raw", func(b *testing.B) {
		storm(b, func(t http.RoundTripper) func() error {
			c := newRaw(s, t)
			return func() error { _, err := c.getUser(ctx, userID); return err }
		})
	}})
}

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
