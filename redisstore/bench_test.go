package redisstore

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/serviceconnect/management/managementtest"
)

// BenchmarkFleet runs 16 replicas against one managementtest server, with
// and without a shared Redis, and reports token requests per token
// lifetime and authenticate calls per distinct End User token: each op is
// every replica reading a User and checking one new End User token.
func BenchmarkFleet(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run("store="+strconv.FormatBool(shared), func(b *testing.B) {
			srv := seeded(b)
			var f *fleet
			if shared {
				f = newFleet(b, srv, startRedis(b).Client(b), replicas)
			} else {
				f = newFleet(b, srv, nil, replicas)
			}
			tokens := make([]string, b.N)
			for i := range tokens {
				tokens[i] = srv.IssueEndUserToken("u-1")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				noErrors(b, f.each(func(r replica) error {
					if _, err := r.client.Users.Get(context.Background(), "u-1"); err != nil {
						return err
					}
					_, err := check(r.auth, tokens[i])
					return err
				}))
			}
			b.StopTimer()
			b.ReportMetric(float64(srv.Requests(managementtest.RouteToken)), "token-reqs/lifetime")
			b.ReportMetric(float64(srv.Requests(managementtest.RouteAuthenticate))/float64(b.N), "authn-calls/token")
		})
	}
}

// BenchmarkVerdict is the cost of one check answered from the in-process
// cache, and from Redis (the in-process cache of a fresh replica empty).
func BenchmarkVerdict(b *testing.B) {
	srv := seeded(b)
	rdb := startRedis(b).Client(b)
	tok := srv.IssueEndUserToken("u-1")
	warm := newFleet(b, srv, rdb, 1).nodes[0]
	if _, err := check(warm.auth, tok); err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/me", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	b.Run("level=memory", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := warm.auth.Check(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("level=redis", func(b *testing.B) {
		nodes := newFleet(b, srv, rdb, b.N).nodes
		before := srv.Requests(managementtest.RouteAuthenticate)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := nodes[i].auth.Check(r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(srv.Requests(managementtest.RouteAuthenticate)-before)/float64(b.N), "authn-calls/op")
	})
}
