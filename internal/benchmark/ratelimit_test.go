package benchmark

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// BenchmarkRateLimited sends 200 goroutines' reads (5 each, one after the
// other) at once to a service
// limited to 400 requests a second (bursts of 50), through one shared
// Client, which pauses a route when it is told 429 with Retry-After, and
// through 200 Clients, each finding the limit on its own (as one Client did
// before the pause). It reports the 429 answers and the calls that failed
// or outlived their 10 s context. With -short (CI, which only checks that
// it runs) 20 goroutines send.
func BenchmarkRateLimited(b *testing.B) {
	goroutines, callsEach := 200, 5
	if testing.Short() {
		goroutines = 20
	}
	for _, shared := range []bool{true, false} {
		name := "client=shared"
		if !shared {
			name = "client=per-goroutine"
		}
		b.Run(name, func(b *testing.B) {
			var limited, failures int
			for range b.N {
				srv := managementtest.NewServer(managementtest.WithRateLimit(400, 50))
				srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
				newClient := func() *management.Client {
					cfg := srv.Config()
					cfg.RetryWaitMin, cfg.RetryWaitMax, cfg.MaxRetries = 10*time.Millisecond, 2*time.Second, 10
					c, err := management.NewClient(cfg)
					if err != nil {
						b.Fatal(err)
					}
					// Every Client fetches its token before the storm.
					if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
						b.Fatal(err)
					}
					return c
				}
				clients := make([]*management.Client, goroutines)
				for i := range clients {
					if i == 0 || !shared {
						clients[i] = newClient()
						time.Sleep(5 * time.Millisecond) // let the limiter refill between warm-ups
					} else {
						clients[i] = clients[0]
					}
				}
				before := srv.RateLimited()
				var failed atomic.Int32
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Go(func() {
						for range callsEach {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							if u, err := c.Users.Get(ctx, "u-1"); err != nil || u.ID != "u-1" {
								failed.Add(1)
							}
							cancel()
						}
					})
				}
				wg.Wait()
				limited += srv.RateLimited() - before
				failures += int(failed.Load())
				srv.Close()
			}
			b.ReportMetric(float64(limited)/float64(b.N), "429s/op")
			b.ReportMetric(float64(failures)/float64(b.N), "failures/op")
		})
	}
}
