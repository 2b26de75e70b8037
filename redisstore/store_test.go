package redisstore

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// contract is what a Store does on any Redis deployment: each case runs on a
// single redis-server here and on a Cluster in TestCluster, with an empty
// database.
var contract = []struct {
	name string
	test func(*testing.T, redis.UniversalClient)
}{
	{"GetSetDelete", testGetSetDelete},
	{"Prefix", testPrefix},
	{"NonPositiveTTLRefused", testNonPositiveTTLRefused},
	{"TryLock", testTryLock},
	{"UnlockAfterExpiryLeavesTheNewHolder", testUnlockAfterExpiryLeavesTheNewHolder},
}

func TestContract(t *testing.T) {
	rdb := startRedis(t).Client(t)
	runContract(t, rdb)
}

// runContract runs the contract on rdb, emptying it before each case.
func runContract(t *testing.T, rdb redis.UniversalClient) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) {
			flush(t, rdb)
			c.test(t, rdb)
		})
	}
}

// flush empties every master of rdb.
func flush(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if c, ok := rdb.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() })
	} else {
		err = rdb.FlushAll(ctx).Err()
	}
	if err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
}

func testGetSetDelete(t *testing.T, rdb redis.UniversalClient) {
	s := New(rdb)
	ctx := context.Background()

	if v, err := s.Get(ctx, "k"); v != nil || err != nil {
		t.Fatalf("Get of a missing key = %q, %v; want nil, nil", v, err)
	}
	if err := s.Set(ctx, "k", []byte("v\x00\xff"), time.Minute); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if v, err := s.Get(ctx, "k"); err != nil || !bytes.Equal(v, []byte("v\x00\xff")) {
		t.Fatalf("Get = %q, %v; want the bytes set", v, err)
	}
	ttl, err := rdb.PTTL(ctx, DefaultPrefix+"k").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("the key's time to live in Redis = %v, %v; want within (0, 1m]", ttl, err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if v, err := s.Get(ctx, "k"); v != nil || err != nil {
		t.Fatalf("Get after Delete = %q, %v; want nil, nil", v, err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
}

func testPrefix(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	if err := New(rdb, WithPrefix("svc-a:")).Set(ctx, "k", []byte("a"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, "svc-a:k").Result(); err != nil || n != 1 {
		t.Errorf("EXISTS svc-a:k = %d, %v; want 1", n, err)
	}
	if v, _ := New(rdb).Get(ctx, "k"); v != nil {
		t.Errorf("a Store with the default prefix read %q from another prefix", v)
	}
}

func testNonPositiveTTLRefused(t *testing.T, rdb redis.UniversalClient) {
	s := New(rdb)
	ctx := context.Background()
	if err := s.Set(ctx, "k", []byte("v"), 0); err == nil {
		t.Error("Set with ttl 0 succeeded; want an error (every entry expires)")
	}
	if _, ok, err := s.TryLock(ctx, "l", -time.Second); ok || err == nil {
		t.Errorf("TryLock with a negative ttl = %v, %v; want refused", ok, err)
	}
}

func testTryLock(t *testing.T, rdb redis.UniversalClient) {
	a, b := New(rdb), New(rdb)
	ctx := context.Background()

	unlockA, ok, err := a.TryLock(ctx, "lease", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first TryLock = %v, %v; want the lease", ok, err)
	}
	if _, ok, err := b.TryLock(ctx, "lease", time.Minute); err != nil || ok {
		t.Fatalf("second TryLock while held = %v, %v; want refused without error", ok, err)
	}
	if ttl := rdb.PTTL(ctx, DefaultPrefix+"lease").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("lease time to live = %v; want within (0, 1m]", ttl)
	}
	if err := unlockA(ctx); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	unlockB, ok, err := b.TryLock(ctx, "lease", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLock after unlock = %v, %v; want the lease", ok, err)
	}
	_ = unlockB
}

// A holder whose lease expired must not free the lease another holder took
// since: the release compares the value before it deletes.
func testUnlockAfterExpiryLeavesTheNewHolder(t *testing.T, rdb redis.UniversalClient) {
	s := New(rdb)
	ctx := context.Background()

	unlockOld, ok, _ := s.TryLock(ctx, "lease", time.Minute)
	if !ok {
		t.Fatal("no lease")
	}
	rdb.Del(ctx, DefaultPrefix+"lease") // the lease expires
	if _, ok, _ := s.TryLock(ctx, "lease", time.Minute); !ok {
		t.Fatal("the lease was not free after it expired")
	}
	if err := unlockOld(ctx); err != nil {
		t.Fatalf("stale unlock: %v", err)
	}
	if n := rdb.Exists(ctx, DefaultPrefix+"lease").Val(); n != 1 {
		t.Error("a stale holder's unlock freed the new holder's lease")
	}
}

func TestErrorsWhenRedisIsGone(t *testing.T) {
	srv := startRedis(t)
	s := New(srv.Client(t))
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	if v, err := s.Get(ctx, "k"); err == nil || v != nil || !strings.HasPrefix(err.Error(), "redisstore: get: ") {
		t.Errorf("Get with Redis gone = %q, %v; want a redisstore error, never nil, nil (absent)", v, err)
	}
	if err := s.Set(ctx, "k", []byte("v"), time.Minute); err == nil {
		t.Error("Set with Redis gone succeeded")
	}
	if _, ok, err := s.TryLock(ctx, "l", time.Minute); ok || err == nil {
		t.Errorf("TryLock with Redis gone = %v, %v; want an error", ok, err)
	}
}

func TestNewWarnsWithoutContextDeadlines(t *testing.T) {
	for _, tt := range []struct {
		name string
		rdb  redis.UniversalClient
		warn bool
	}{
		{"Client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), true},
		{"ClientWithDeadlines", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), false},
		{"ClusterClient", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), true},
		{"ClusterClientWithDeadlines", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), false},
		{"Ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}), true},
		{"RingWithDeadlines", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: true}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { _ = tt.rdb.Close() })
			var logged bytes.Buffer
			New(tt.rdb, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			warned := strings.Contains(logged.String(), "level=WARN") && strings.Contains(logged.String(), "ContextTimeoutEnabled")
			if warned != tt.warn {
				t.Errorf("logged %q; want a Warn naming ContextTimeoutEnabled: %v", logged.String(), tt.warn)
			}
		})
	}
}

func TestWithLoggerNilKeepsTheDefault(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	if s := New(rdb, WithLogger(nil)); s.logger != slog.Default() {
		t.Errorf("WithLogger(nil) left the logger %v; want slog.Default()", s.logger)
	}
}

// TestStoreComparable: a Store is comparable, as it was in v0.1.0, so that
// a program may compare Stores or key a map by one (the root module's
// TestAPIListing holds every exported type's comparability).
func TestStoreComparable(t *testing.T) {
	// reflect.TypeOf of a value: reflect.TypeFor[Store]() in a test binary
	// makes go1.26.8's and go1.27.4's linkers panic (R_USEIFACE ... eqfunc).
	if !reflect.TypeOf(Store{}).Comparable() {
		t.Error("redisstore.Store is not comparable")
	}
}
