package benchmark

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// BenchmarkFlood floods an Authenticator with random End User tokens from
// 8 goroutines for 2 s, with and without a miss budget (100 checks a
// second, bursts of 20), while one legitimate, cached token keeps being
// checked. It reports the authenticate calls that reached the service per
// second, the cached check's time, and how long a legitimate new token
// waited to get through once the flood stopped. With -short (CI, which
// only checks that it runs) the flood lasts 200 ms.
func BenchmarkFlood(b *testing.B) {
	flood := 2 * time.Second
	if testing.Short() {
		flood = 200 * time.Millisecond
	}
	for _, budget := range []management.MissBudget{{}, {PerSecond: 100, Burst: 20}} {
		b.Run(fmt.Sprintf("budget=%v", budget.PerSecond), func(b *testing.B) {
			var calls, floodChecks float64
			var cached time.Duration
			var cachedN int
			var admit time.Duration
			for range b.N {
				srv := managementtest.NewServer()
				srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
				a := &management.Authenticator{Client: srv.Client(), MissBudget: budget}
				known := srv.IssueEndUserToken("u-1")
				check := func(token string) error {
					r := httptest.NewRequest(http.MethodGet, "/", nil)
					r.Header.Set("Authorization", "Bearer "+token)
					_, err := a.Check(r)
					return err
				}
				if err := check(known); err != nil {
					b.Fatal(err)
				}
				before := srv.Requests(managementtest.RouteAuthenticate)
				stop := time.Now().Add(flood)
				var wg sync.WaitGroup
				var mu sync.Mutex
				for g := range 8 {
					wg.Go(func() {
						n := 0
						for i := 0; time.Now().Before(stop); i++ {
							_ = check(fmt.Sprintf("random-%d-%d", g, i))
							n++
							if g == 0 && i%16 == 0 {
								t0 := time.Now()
								if err := check(known); err != nil {
									b.Error(err)
								}
								mu.Lock()
								cached += time.Since(t0)
								cachedN++
								mu.Unlock()
							}
						}
						mu.Lock()
						floodChecks += float64(n)
						mu.Unlock()
					})
				}
				wg.Wait()
				calls += float64(srv.Requests(managementtest.RouteAuthenticate)-before) / flood.Seconds()
				fresh := srv.IssueEndUserToken("u-1")
				t0 := time.Now()
				for check(fresh) != nil {
					time.Sleep(time.Millisecond)
				}
				admit += time.Since(t0)
				srv.Close()
			}
			n := float64(b.N)
			b.ReportMetric(floodChecks/n, "flood-checks/op")
			b.ReportMetric(calls/n, "service-calls/s")
			b.ReportMetric(float64(cached.Nanoseconds())/float64(cachedN), "cached-ns/check")
			b.ReportMetric(float64(admit.Microseconds())/n, "new-token-admit-µs")
		})
	}
}
