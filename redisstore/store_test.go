package redisstore

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestGetSetDelete(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.Client(t)
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

func TestPrefix(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.Client(t)
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

func TestNonPositiveTTLRefused(t *testing.T) {
	srv := startRedis(t)
	s := New(srv.Client(t))
	ctx := context.Background()
	if err := s.Set(ctx, "k", []byte("v"), 0); err == nil {
		t.Error("Set with ttl 0 succeeded; want an error (every entry expires)")
	}
	if _, ok, err := s.TryLock(ctx, "l", -time.Second); ok || err == nil {
		t.Errorf("TryLock with a negative ttl = %v, %v; want refused", ok, err)
	}
}

func TestTryLock(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.Client(t)
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
func TestUnlockAfterExpiryLeavesTheNewHolder(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.Client(t)
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
