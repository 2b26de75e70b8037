package management

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// SharedStore is a key-value store shared by the replicas of one service
// (Redis, Valkey, ...), so that a fleet fetches one management token per
// token lifetime and asks the service once about each End User token. The
// package redisstore implements it on Redis.
//
// Values are opaque bytes that the SDK seals before it stores them: a token
// is encrypted (AES-256-GCM) under a key derived from the client secret, and
// a verdict on an End User token is sealed and stored under an HMAC of the
// token, so that whoever can read or write the store can neither use a token
// nor forge a verdict. Keys are derived by the SDK and never contain a secret
// or a token. Each operation touches one key.
//
// Implementations must be safe for concurrent use. A store that fails or is
// slow never fails a call of the SDK: the SDK falls back to what it does
// without a store, and logs. Each call is given a context that ends after
// Config.SharedStoreTimeout, and the SDK abandons a call that outlives it,
// whether or not the store honours the context: the call goes on in the
// background, and a Client starts no store call while 128 of its calls
// (abandoned ones included) are running. A store should still honour the
// context, so that abandoned calls end soon.
type SharedStore interface {
	// Get returns the value stored under key, or nil and no error when
	// there is none or it has expired.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key for ttl (always positive).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// TryLock takes a lease on key for at most ttl without waiting: ok is
	// false when another holder has it. unlock releases the lease if it is
	// still this holder's (a lease that expired and was taken by another
	// holder is left alone).
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context) error, ok bool, err error)
}

// maxStoreCalls bounds the store calls of a Client running at once,
// abandoned ones (past Config.SharedStoreTimeout) included: beyond it, a
// call fails at once rather than start, so a store that hangs holds at most
// this many goroutines, however many calls meet it. A store answering in a
// millisecond reaches it only past a hundred thousand calls a second.
const maxStoreCalls = 128

// errStoreBusy is a store call refused because maxStoreCalls are running;
// like any store failure, the caller goes on without the store.
var errStoreBusy = fmt.Errorf("shared store: %d calls running (abandoned ones included), not starting another", maxStoreCalls)

// storeGuard enforces Config.SharedStoreTimeout on every call to a
// SharedStore, whatever the store does with its context (go-redis, for
// one, ignores the deadline on socket reads unless told otherwise): a call
// that overruns is abandoned, its error is the deadline's, and it finishes
// in the background, counted, within maxStoreCalls.
type storeGuard struct {
	timeout   time.Duration
	running   atomic.Int64 // calls running, abandoned ones included; <= maxStoreCalls
	abandoned atomic.Int64 // calls abandoned in all (logged when a failure streak ends)
	polls     pollTurns    // the rounds of the waits on leases (see awaitLease)
}

// guarded is store with every call bounded by g.
type guarded struct {
	store SharedStore
	g     *storeGuard
}

// guard returns store bounded by g.
func (g *storeGuard) guard(store SharedStore) guarded { return guarded{store, g} }

// callStore runs op with a context bounded by g.timeout, and returns its
// result, or an error matching context.DeadlineExceeded once the timeout
// passes (ctx's error once ctx ends), abandoning op.
func callStore[T any](ctx context.Context, g *storeGuard, op func(context.Context) (T, error)) (T, error) {
	var zero T
	if g.running.Add(1) > maxStoreCalls {
		g.running.Add(-1)
		return zero, errStoreBusy
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel() // a store that honours its context may yet end an abandoned call early
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer g.running.Add(-1)
		v, err := op(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	select {
	case r := <-done: // it answered just as the time ran out
		return r.v, r.err
	default:
	}
	g.abandoned.Add(1)
	return zero, fmt.Errorf("shared store: call abandoned (SharedStoreTimeout %v): %w", g.timeout, ctx.Err())
}

func (s guarded) Get(ctx context.Context, key string) ([]byte, error) {
	return callStore(ctx, s.g, func(ctx context.Context) ([]byte, error) { return s.store.Get(ctx, key) })
}

func (s guarded) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.store.Set(ctx, key, value, ttl)
	})
	return err
}

func (s guarded) Delete(ctx context.Context, key string) error {
	_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.store.Delete(ctx, key) })
	return err
}

// TryLock takes the lease; its unlock is bounded too.
func (s guarded) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	type lock struct {
		unlock func(context.Context) error
		ok     bool
	}
	l, err := callStore(ctx, s.g, func(ctx context.Context) (lock, error) {
		unlock, ok, err := s.store.TryLock(ctx, key, ttl)
		return lock{unlock, ok}, err
	})
	switch {
	case err != nil || !l.ok:
		return nil, false, err
	case l.unlock == nil: // a store's bug: the lease then lapses by itself
		return func(context.Context) error { return nil }, true, nil
	}
	return func(ctx context.Context) error {
		_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.unlock(ctx) })
		return err
	}, true, nil
}
