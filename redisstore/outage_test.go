package redisstore

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// outageTTL is the CacheTTL of the outage tests: short, so that a verdict
// expires (and a check needs the service) within the test's wall time.
const outageTTL = 200 * time.Millisecond

// StaleIfError is the fleet's: replica A confirms the tokens; the service
// goes down; replica B, which never saw them, lets through on the store's
// record the one A confirmed last, and not the one A heard was revoked
// (an invalid answer ends the grace on every replica), nor the one A
// forgot, nor one the service never confirmed.
func TestFleetStaleIfError(t *testing.T) {
	srv := seeded(t)
	rdb := startRedis(t).Client(t)
	f := startFleet(t, srv, 2, func() management.SharedStore { return New(rdb) }, func(cfg *management.Config) {
		cfg.SharedStoreTimeout = time.Second // the race detector slows Redis round trips
		cfg.MaxRetries = -1                  // an outage is one 503 per call, not five
	})
	for _, n := range f.nodes {
		n.auth.CacheTTL, n.auth.StaleIfError = outageTTL, time.Minute
	}
	a, b := f.nodes[0].auth, f.nodes[1].auth
	kept, revoked, forgotten := srv.IssueEndUserToken("u-1"), srv.IssueEndUserToken("u-1"), srv.IssueEndUserToken("u-1")
	never := srv.IssueEndUserToken("u-1")
	for _, tok := range []string{kept, revoked, forgotten} {
		if u, err := check(a, tok); err != nil || u.Stale {
			t.Fatalf("replica A, the service up: %+v, %v; want a fresh pass", u, err)
		}
	}
	// The store keeps each confirmation for the grace, not for CacheTTL.
	ctx := context.Background()
	records := slices.DeleteFunc(valueKeys(ctx, rdb), func(k string) bool { return !strings.Contains(k, ":verdict:") })
	if len(records) != 3 {
		t.Fatalf("values in Redis: %q; want a record per token", records)
	}
	for _, k := range records {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl < 50*time.Second || ttl > time.Minute {
			t.Errorf("%s lives %v; want StaleIfError (1m)", k, ttl)
		}
		mem, _ := rdb.MemoryUsage(ctx, k).Result()
		t.Logf("a record: %d bytes of value, %d bytes in Redis (MEMORY USAGE), key %d bytes", rdb.StrLen(ctx, k).Val(), mem, len(k))
	}
	srv.RevokeEndUserToken(revoked)
	time.Sleep(outageTTL) // A's verdicts expire: its next check asks the service
	if _, err := check(a, revoked); !errors.Is(err, management.ErrInvalidToken) {
		t.Fatalf("replica A, the revoked token: %v; want ErrInvalidToken", err)
	}
	if err := a.Forget(ctx, "Bearer "+forgotten); err != nil {
		t.Fatal(err)
	}

	time.Sleep(outageTTL) // every verdict in the store has expired; the records are kept
	srv.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
	before := srv.Requests(managementtest.RouteAuthenticate)
	u, err := check(b, kept)
	if err != nil || *u != (management.EndUser{ID: "u-1", Role: management.RoleAppUser, Stale: true}) {
		t.Errorf("replica B, a token A confirmed, the service down: %+v, %v; want u-1 let through Stale", u, err)
	}
	for _, tc := range []struct{ name, tok string }{
		{"revoked (an invalid answer on A)", revoked},
		{"forgotten on A", forgotten},
		{"never confirmed", never},
	} {
		u, err := check(b, tc.tok)
		if !errors.Is(err, management.ErrAuthenticationUnavailable) {
			t.Errorf("replica B, a token %s, the service down: %+v, %v; want ErrAuthenticationUnavailable", tc.name, u, err)
		}
	}
	if got := srv.Requests(managementtest.RouteAuthenticate) - before; got < 1 {
		t.Errorf("%d authenticate calls during the outage; want B to have asked the service", got)
	}

	srv.ClearFaults() // the service is back: B's stale pass is no longer needed
	time.Sleep(outageTTL)
	if u, err := check(a, kept); err != nil || u.Stale {
		t.Errorf("replica A after the outage: %+v, %v; want a fresh pass", u, err)
	}
}

// When the store cannot answer either, a replica that never saw a token
// fails closed, while the one that confirmed it lets it through on its
// own record.
func TestFleetStaleIfErrorStoreDown(t *testing.T) {
	srv := seeded(t)
	redisSrv := startRedis(t)
	rdb := redisSrv.Client(t)
	f := startFleet(t, srv, 2, func() management.SharedStore { return New(rdb) }, func(cfg *management.Config) {
		cfg.SharedStoreTimeout = failoverStoreTimeout // each check gives up on the dead store that soon
		cfg.MaxRetries = -1
	})
	for _, n := range f.nodes {
		n.auth.CacheTTL, n.auth.StaleIfError = outageTTL, time.Minute
	}
	a, b := f.nodes[0].auth, f.nodes[1].auth
	tok := srv.IssueEndUserToken("u-1")
	if _, err := check(a, tok); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outageTTL)
	redisSrv.Stop()
	srv.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
	if u, err := check(b, tok); !errors.Is(err, management.ErrAuthenticationUnavailable) {
		t.Errorf("replica B, the service and the store down: %+v, %v; want ErrAuthenticationUnavailable", u, err)
	}
	if u, err := check(a, tok); err != nil || !u.Stale {
		t.Errorf("replica A, the service and the store down: %+v, %v; want a stale pass on its own record", u, err)
	}
}
