package benchmark

import (
	"context"
	"crypto/sha256"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
)

// benchLargeUsers is the data set ranged over only on request:
// BENCH_LARGE=1, or a -bench pattern that names it.
const benchLargeUsers = 100_000

// benchListSizes returns the data set sizes to range over: 10 000 always,
// 100 000 when asked for, so that `go test -bench .` stays short.
func benchListSizes() []int {
	sizes := []int{10_000}
	if benchLargeWanted() {
		sizes = append(sizes, benchLargeUsers)
	}
	return sizes
}

func benchLargeWanted() bool {
	if os.Getenv("BENCH_LARGE") == "1" {
		return true
	}
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), strconv.Itoa(benchLargeUsers))
}

// newBenchSDK returns an SDK client of s with its default transport, its
// token already fetched, as a long-running service has it.
func newBenchSDK(tb testing.TB, s *benchServer, hc *http.Client) *management.Client {
	tb.Helper()
	c, err := management.NewClient(management.Config{
		BaseURL: s.URL, ClientID: benchClientID, ClientSecret: benchClientSecret, HTTPClient: hc,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Users.Get(context.Background(), benchUserID); err != nil {
		tb.Fatalf("warming the SDK client: %v", err)
	}
	return c
}

func newBenchBaseline(tb testing.TB, s *benchServer, hc *http.Client) *baselineClient {
	tb.Helper()
	if hc == nil {
		hc = newBenchHTTPClient(64)
	}
	b, err := newBaselineClient(context.Background(), s.URL, hc)
	if err != nil {
		tb.Fatalf("baseline token: %v", err)
	}
	if _, err := b.getUser(context.Background(), benchUserID); err != nil {
		tb.Fatalf("warming the baseline: %v", err)
	}
	return b
}

// BenchmarkUsersGet is one GET /users/{id} round trip, decoded.
func BenchmarkUsersGet(b *testing.B) {
	s := newBenchServer(b, 0, 600*time.Second)
	ctx := context.Background()
	warmBenchServer(b, s)
	runImpls(b, func(b *testing.B) { // impl=sdk
		c := newBenchSDK(b, s, nil)
		b.ReportAllocs()
		for b.Loop() {
			u, err := c.Users.Get(ctx, benchUserID)
			if err != nil || u.ID != benchUserID {
				b.Fatalf("Get: %v", err)
			}
		}
	}, func(b *testing.B) { // impl=baseline
		c := newBenchBaseline(b, s, nil)
		b.ReportAllocs()
		for b.Loop() {
			u, err := c.getUser(ctx, benchUserID)
			if err != nil || u.ID != benchUserID {
				b.Fatalf("getUser: %v", err)
			}
		}
	})
}

// benchRangeSDK ranges over every User and returns how many it saw.
func benchRangeSDK(ctx context.Context, c *management.Client, each func(n int)) (int, error) {
	n := 0
	for u, err := range c.Users.List(ctx, nil) {
		if err != nil {
			return n, err
		}
		if u.ID == "" {
			continue
		}
		if each != nil {
			each(n)
		}
		n++
	}
	return n, nil
}

func benchRangeBaseline(ctx context.Context, c *baselineClient, each func(n int)) (int, error) {
	n := 0
	err := c.listUsers(ctx, func(u *baseUser) {
		if u.ID == "" {
			return
		}
		if each != nil {
			each(n)
		}
		n++
	})
	return n, err
}

// BenchmarkUsersList ranges over every User of the data set, in pages of
// 100, following next_page links. ns/user is the time per User.
func BenchmarkUsersList(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchListSizes() {
		s := newBenchServer(b, size, 600*time.Second)
		warmBenchServer(b, s)
		run := func(b *testing.B, rangeAll func() (int, error)) {
			b.ReportAllocs()
			iters := 0
			for b.Loop() {
				n, err := rangeAll()
				if err != nil || n != size {
					b.Fatalf("ranged over %d of %d Users: %v", n, size, err)
				}
				iters++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*size), "ns/user")
		}
		b.Run("users="+strconv.Itoa(size), func(b *testing.B) {
			runImpls(b, func(b *testing.B) { // impl=sdk
				c := newBenchSDK(b, s, nil)
				run(b, func() (int, error) { return benchRangeSDK(ctx, c, nil) })
			}, func(b *testing.B) { // impl=baseline
				c := newBenchBaseline(b, s, nil)
				run(b, func() (int, error) { return benchRangeBaseline(ctx, c, nil) })
			})
		})
	}
}

// BenchmarkAuthenticatorCheck checks one End User token: with the cache on
// (warm; calls/op must be 0) and off (one POST /authenticate per check).
func BenchmarkAuthenticatorCheck(b *testing.B) {
	s := newBenchServer(b, 0, 600*time.Second)
	warmBenchServer(b, s)
	r := httptest.NewRequest(http.MethodGet, "/api/things", nil)
	r.Header.Set("Authorization", benchEndUserToken)
	for _, mode := range []struct {
		name string
		ttl  time.Duration
	}{{"cache=on", time.Hour}, {"cache=off", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			runImpls(b, func(b *testing.B) { // impl=sdk
				a := &management.Authenticator{Client: newBenchSDK(b, s, nil), CacheTTL: mode.ttl}
				benchCheck(b, s, func() (string, error) {
					u, err := a.Check(r)
					if err != nil {
						return "", err
					}
					return u.ID, nil
				})
			}, func(b *testing.B) { // impl=baseline
				a := &baselineAuthCache{client: newBenchBaseline(b, s, nil), ttl: mode.ttl}
				benchCheck(b, s, func() (string, error) {
					u, err := a.check(r)
					if err != nil {
						return "", err
					}
					return u.ID, nil
				})
			})
		})
	}
}

// BenchmarkCheckFloor is the floor a cached Authenticator.Check is
// measured against (issue 22: at most 2x it): the header read, its SHA-256
// digest and one map lookup, with no lock, no expiry and no copy. Compare
// it with BenchmarkAuthenticatorCheck/cache=on/impl=sdk of the same run.
func BenchmarkCheckFloor(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "/api/things", nil)
	r.Header.Set("Authorization", benchEndUserToken)
	m := map[[sha256.Size]byte]baseEndUser{
		sha256.Sum256([]byte(benchEndUserToken)): {ID: benchUserID, Role: "APPUSER"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if u, ok := m[sha256.Sum256([]byte(r.Header.Get("Authorization")))]; !ok || u.ID != benchUserID {
			b.Fatalf("floor lookup: %v, %v", u, ok)
		}
	}
}

// benchCheck runs check after one warming call and reports the service
// calls it made per check.
func benchCheck(b *testing.B, s *benchServer, check func() (string, error)) {
	if id, err := check(); err != nil || id != benchUserID {
		b.Fatalf("warming check: %q, %v", id, err)
	}
	before := s.authCalls.Load()
	b.ReportAllocs()
	iters := 0
	for b.Loop() {
		if id, err := check(); err != nil || id != benchUserID {
			b.Fatalf("check: %q, %v", id, err)
		}
		iters++
	}
	b.ReportMetric(float64(s.authCalls.Load()-before)/float64(iters), "calls/op")
}

// runImpls runs the sub-benchmarks impl=sdk and impl=baseline, the SDK's
// first unless BENCH_BASELINE_FIRST=1. scripts/bench.sh alternates the
// order from round to round: whichever runs first in a process meets what
// the previous one left behind (a previous round's sockets closing, a cold
// server), and on a small machine that alone moves a loopback benchmark by
// several per cent.
func runImpls(b *testing.B, sdk, baseline func(b *testing.B)) {
	if os.Getenv("BENCH_BASELINE_FIRST") == "1" {
		b.Run("impl=baseline", baseline)
		b.Run("impl=sdk", sdk)
		return
	}
	b.Run("impl=sdk", sdk)
	b.Run("impl=baseline", baseline)
}

// warmBenchServer sends s a few thousand reads through a client of its own
// before anything is measured, so that neither implementation pays for
// the server's warming (its goroutines, buffers and pools, the process's
// heap growing to its working size) when it happens to run first.
func warmBenchServer(tb testing.TB, s *benchServer) {
	tb.Helper()
	c := newBenchBaseline(tb, s, nil)
	for range 3000 {
		if _, err := c.getUser(context.Background(), benchUserID); err != nil {
			tb.Fatalf("warming the server: %v", err)
		}
	}
	c.http.CloseIdleConnections()
}
