package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The fleet: replicas of one service, each with its own Client and
// Authenticator, sharing one Redis, against one managementtest server.

const replicas = 16

type fleet struct {
	srv   *managementtest.Server
	rdb   redis.UniversalClient
	nodes []replica
}

type replica struct {
	client *management.Client
	auth   *management.Authenticator
}

// newFleet starts n replicas sharing rdb; with rdb nil, they share nothing.
func newFleet(t testing.TB, srv *managementtest.Server, rdb redis.UniversalClient, n int) *fleet {
	t.Helper()
	var store func() management.SharedStore
	if rdb != nil {
		store = func() management.SharedStore { return New(rdb) }
	}
	f := startFleet(t, srv, n, store, func(cfg *management.Config) {
		cfg.SharedStoreTimeout = time.Second // the race detector slows Redis round trips
	})
	f.rdb = rdb
	return f
}

// startFleet starts n replicas, each with the store that store returns (none
// when store is nil) and the configuration of srv changed by configure.
func startFleet(t testing.TB, srv *managementtest.Server, n int, store func() management.SharedStore, configure func(*management.Config)) *fleet {
	t.Helper()
	f := &fleet{srv: srv}
	for range n {
		cfg := srv.Config()
		configure(&cfg)
		var st management.SharedStore
		if store != nil {
			st = store()
			cfg.SharedStore = st
		}
		c, err := management.NewClient(cfg)
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		f.nodes = append(f.nodes, replica{client: c, auth: &management.Authenticator{Client: c, SharedStore: st}})
	}
	return f
}

// each runs fn on every replica at once and returns the errors.
func (f *fleet) each(fn func(replica) error) []error {
	errs := make([]error, len(f.nodes))
	var wg sync.WaitGroup
	for i, r := range f.nodes {
		wg.Go(func() { errs[i] = fn(r) })
	}
	wg.Wait()
	return errs
}

func noErrors(t testing.TB, errs []error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func seeded(t testing.TB) *managementtest.Server {
	srv := managementtest.NewServer()
	t.Cleanup(srv.Close)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	return srv
}

func check(a *management.Authenticator, token string) (*management.EndUser, error) {
	r := httptest.NewRequest("GET", "/me", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return a.Check(r)
}

func TestFleetFetchesOneTokenPerLifetime(t *testing.T) {
	testFleetFetchesOneToken(t, startRedis(t).Client(t))
}

func testFleetFetchesOneToken(t *testing.T, rdb redis.UniversalClient) {
	srv := seeded(t)
	f := newFleet(t, srv, rdb, replicas)
	for round := range 3 { // calls after the first find the token in their own cache
		noErrors(t, f.each(func(r replica) error {
			_, err := r.client.Users.Get(context.Background(), "u-1")
			return err
		}))
		if got := srv.Requests(managementtest.RouteToken); got != 1 {
			t.Fatalf("round %d: %d token requests for %d replicas; want 1", round, got, replicas)
		}
	}
}

func TestFleetWithoutStoreFetchesATokenPerReplica(t *testing.T) {
	srv := seeded(t)
	f := newFleet(t, srv, nil, replicas)
	noErrors(t, f.each(func(r replica) error {
		_, err := r.client.Users.Get(context.Background(), "u-1")
		return err
	}))
	if got := srv.Requests(managementtest.RouteToken); got != replicas {
		t.Fatalf("%d token requests; want %d (one per replica)", got, replicas)
	}
}

func TestFleetAsksOncePerEndUserToken(t *testing.T) {
	testFleetAsksOnce(t, startRedis(t).Client(t))
}

func testFleetAsksOnce(t *testing.T, rdb redis.UniversalClient) {
	srv := seeded(t)
	f := newFleet(t, srv, rdb, replicas)
	tokens := []string{srv.IssueEndUserToken("u-1"), "not-a-token"}
	for _, tok := range tokens {
		before := srv.Requests(managementtest.RouteAuthenticate)
		noErrors(t, f.each(func(r replica) error {
			u, err := check(r.auth, tok)
			switch {
			case tok == "not-a-token" && !errors.Is(err, management.ErrInvalidToken):
				return fmt.Errorf("invalid token: %v, %v; want ErrInvalidToken", u, err)
			case tok != "not-a-token" && (err != nil || u.ID != "u-1"):
				return fmt.Errorf("valid token: %v, %v; want u-1", u, err)
			}
			return nil
		}))
		if got := srv.Requests(managementtest.RouteAuthenticate) - before; got != 1 {
			t.Errorf("%d replicas checking %q at once made %d authenticate calls; want 1", replicas, tok, got)
		}
	}
	before := srv.Requests(managementtest.RouteAuthenticate)
	g := newFleet(t, srv, f.rdb, replicas) // fresh in-process caches
	noErrors(t, g.each(func(r replica) error {
		_, err := check(r.auth, tokens[0])
		return err
	}))
	if got := srv.Requests(managementtest.RouteAuthenticate) - before; got != 0 {
		t.Errorf("%d authenticate calls from replicas with cold caches; want 0 (verdicts read from Redis)", got)
	}
}

// A verdict written by whoever can write Redis, and a token from another
// client, are not trusted.
func TestForgedEntriesIgnored(t *testing.T) {
	redisSrv := startRedis(t)
	rdb := redisSrv.Client(t)
	ctx := context.Background()
	srv := seeded(t)
	f := newFleet(t, srv, rdb, 1)
	r := f.nodes[0]

	// A valid verdict of another service (another secret) sharing the Redis...
	other := managementtest.NewServer()
	t.Cleanup(other.Close)
	other.AddUser(management.UserDetails{User: management.User{ID: "u-attacker"}})
	o := newFleet(t, other, rdb, 1).nodes[0]
	otherToken := other.IssueEndUserToken("u-attacker")
	if _, err := check(o.auth, otherToken); err != nil {
		t.Fatal(err)
	}
	// ... and the verdict of an invalid token here.
	if _, err := check(r.auth, "forged-1"); !errors.Is(err, management.ErrInvalidToken) {
		t.Fatalf("err = %v; want ErrInvalidToken", err)
	}
	keys := rdb.Keys(ctx, DefaultPrefix+"*").Val()
	for _, k := range keys {
		v, _ := rdb.Get(ctx, k).Bytes()
		for _, plain := range []string{"u-attacker", "forged-1", otherToken, "u-1"} {
			if bytes.Contains(v, []byte(plain)) || strings.Contains(k, plain) {
				t.Fatalf("Redis entry %q holds %q in plaintext", k, plain)
			}
		}
	}
	if len(keys) < 2 {
		t.Fatalf("keys in Redis: %q; want verdicts of both services", keys)
	}
	// Overwrite every verdict with the other service's valid one, and with
	// plaintext that claims validity: neither lets forged-1 through.
	forgeries := [][]byte{[]byte(`{"auth":{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER"},"expires":"2099-01-01T00:00:00Z"}`)}
	for _, k := range keys {
		if v, _ := rdb.Get(ctx, k).Bytes(); len(v) > 0 {
			forgeries = append(forgeries, v)
		}
	}
	for _, forged := range forgeries {
		for _, k := range keys {
			if strings.Contains(k, "verdict:") {
				rdb.Set(ctx, k, forged, time.Minute)
			}
		}
		fresh := newFleet(t, srv, rdb, 1).nodes[0]
		if u, err := check(fresh.auth, "forged-1"); !errors.Is(err, management.ErrInvalidToken) {
			t.Errorf("with a forged verdict in Redis: %v, %v; want ErrInvalidToken", u, err)
		}
	}

	// A foreign management token in our token key is not used either. The
	// SDK stores a token it fetched after handing it to its callers, so
	// the keys read above may not hold it yet: wait for the token keys of
	// both services.
	if _, err := r.client.Users.Get(ctx, "u-1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	tokenKeys := rdb.Keys(ctx, DefaultPrefix+"*:token").Val()
	for len(tokenKeys) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("token keys in Redis: %q; want one of each service", tokenKeys)
		}
		time.Sleep(10 * time.Millisecond) // polling the SDK's write in the background
		tokenKeys = rdb.Keys(ctx, DefaultPrefix+"*:token").Val()
	}
	for _, k := range tokenKeys {
		rdb.Set(ctx, k, []byte(`{"access_token":"stolen","token_type":"Bearer","expiry":"2099-01-01T00:00:00Z","refresh_at":"2099-01-01T00:00:00Z"}`), time.Minute)
	}
	before := srv.Requests(managementtest.RouteToken)
	fresh := newFleet(t, srv, rdb, 1).nodes[0]
	if _, err := fresh.client.Users.Get(ctx, "u-1"); err != nil {
		t.Fatalf("with a foreign token in Redis: %v", err)
	}
	if got := srv.Requests(managementtest.RouteToken) - before; got != 1 {
		t.Errorf("%d token requests; want 1 (the foreign token ignored, a fresh one fetched)", got)
	}
}

// Killing Redis in the middle of a run fails no call.
func TestRedisGoneFailsNoCall(t *testing.T) {
	redisSrv := startRedis(t)
	srv := seeded(t)
	f := newFleet(t, srv, redisSrv.Client(t), 4)
	euToken := srv.IssueEndUserToken("u-1")
	run := func() {
		t.Helper()
		noErrors(t, f.each(func(r replica) error {
			if _, err := r.client.Users.Get(context.Background(), "u-1"); err != nil {
				return err
			}
			r.client.Users.Get(context.Background(), "u-1")
			_, err := check(r.auth, euToken)
			return err
		}))
	}
	run()
	redisSrv.Stop()
	srv.ExpireTokens() // every replica needs a new token, with Redis gone
	run()
	cold := newFleet(t, srv, f.rdb, 2) // replicas started while Redis is down
	f.nodes = cold.nodes
	run()
}

func TestForgetReachesTheStore(t *testing.T) {
	srv := seeded(t)
	f := newFleet(t, srv, startRedis(t).Client(t), 2)
	tok := srv.IssueEndUserToken("u-1")
	if _, err := check(f.nodes[0].auth, tok); err != nil {
		t.Fatal(err)
	}
	srv.RevokeEndUserToken(tok)
	if err := f.nodes[0].auth.Forget(context.Background(), "Bearer "+tok); err != nil {
		t.Fatal(err)
	}
	// Another replica, with nothing cached, asks the service again.
	if _, err := check(f.nodes[1].auth, tok); !errors.Is(err, management.ErrInvalidToken) {
		t.Errorf("after Forget on another replica: %v; want ErrInvalidToken", err)
	}
}

// Forget reaches every spelling of the scheme on every replica: a replica
// that never saw the token does not read the verdict another replica
// stored for "bearer T" after Forget("Bearer T").
func TestForgetReachesEverySpellingInTheStore(t *testing.T) {
	srv := seeded(t)
	f := newFleet(t, srv, startRedis(t).Client(t), 2)
	tok := srv.IssueEndUserToken("u-1")
	checkAs := func(a *management.Authenticator, header string) error {
		r := httptest.NewRequest("GET", "/me", nil)
		r.Header.Set("Authorization", header)
		_, err := a.Check(r)
		return err
	}
	if err := checkAs(f.nodes[0].auth, "bearer "+tok); err != nil {
		t.Fatal(err)
	}
	srv.RevokeEndUserToken(tok)
	if err := f.nodes[0].auth.Forget(context.Background(), "Bearer "+tok); err != nil {
		t.Fatal(err)
	}
	if err := checkAs(f.nodes[1].auth, "bearer "+tok); !errors.Is(err, management.ErrInvalidToken) {
		t.Errorf("\"bearer\" after Forget of \"Bearer\" on another replica: %v; want ErrInvalidToken", err)
	}
}

// After the service refuses the fleet's token (401), one replica replaces
// it; the others, refused the same stale token, take the replacement
// rather than replacing a good token again.
func TestFleetReplacesARefusedTokenOnce(t *testing.T) {
	srv := seeded(t)
	f := newFleet(t, srv, startRedis(t).Client(t), replicas)
	get := func(r replica) error {
		_, err := r.client.Users.Get(context.Background(), "u-1")
		return err
	}
	noErrors(t, f.each(get))
	srv.ExpireTokens() // the service refuses the token every replica holds
	noErrors(t, f.each(get))
	noErrors(t, f.each(get))
	if got := srv.Requests(managementtest.RouteToken); got != 2 {
		t.Errorf("%d token requests; want 2 (the first, and one replacement for the fleet)", got)
	}
}
