package management

import (
	"context"
	"fmt"
	"log/slog"
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
// Implementations must be safe for concurrent use. A store that fails, is
// slow or panics never fails a call of the SDK: the SDK falls back to what it does
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

// defaultSharedStoreTimeout bounds one store call: at least ten times the
// 99.9th percentile of a GET on a loaded 2-core host, as
// scripts/bench-fleet.sh measures it (34 to 73 ms over ten runs, two busy
// loops and a load average of 13), so that a loaded but healthy store is
// not taken for a hung one; a hung one delays a call that reads it (a cache
// miss) by that long at most.
const defaultSharedStoreTimeout = 750 * time.Millisecond

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
	// host logs a store's panic, which happens in callStore's goroutine,
	// where no caller's recover reaches: the call fails, the process lives.
	host flightHost
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
// passes (ctx's error once ctx ends), abandoning op. A panic of op is its
// error, logged (see flightHost.panicked). orphan, when not nil, gets what
// an abandoned op returns without an error, once it returns: what no
// caller will use, such as a lease taken too late, to undo.
func callStore[T any](ctx context.Context, g *storeGuard, op func(context.Context) (T, error), orphan func(T)) (T, error) {
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
	// claimed is set by whichever comes first: op's goroutine, once done
	// holds its result, or the caller abandoning op.
	var claimed atomic.Bool
	go func() {
		defer g.running.Add(-1)
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: g.host.panicked(ctx, p)}
			}
		}()
		v, err := op(ctx)
		done <- result{v, err}
		if !claimed.CompareAndSwap(false, true) && err == nil && orphan != nil {
			orphan(v) // still counted in running, as the call it undoes was
		}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	if !claimed.CompareAndSwap(false, true) { // it answered just as the time ran out
		r := <-done
		return r.v, r.err
	}
	g.abandoned.Add(1)
	return zero, fmt.Errorf("shared store: call abandoned (SharedStoreTimeout %v): %w", g.timeout, ctx.Err())
}

// Get, Set and Delete call the store through callStore, which abandons a
// call at SharedStoreTimeout whatever the store does with ctx.
func (s guarded) Get(ctx context.Context, key string) ([]byte, error) {
	return callStore(ctx, s.g, func(ctx context.Context) ([]byte, error) { return s.store.Get(ctx, key) }, nil)
}

// Set: see Get.
func (s guarded) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.store.Set(ctx, key, value, ttl)
	}, nil)
	return err
}

// Delete: see Get.
func (s guarded) Delete(ctx context.Context, key string) error {
	_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.store.Delete(ctx, key) }, nil)
	return err
}

// TryLock takes the lease; its unlock is bounded too. A lease taken by a
// call that was abandoned is released at once, within SharedStoreTimeout
// (as far as the store honours its context): no one holds it, and the
// other replicas would wait on it until it lapses.
func (s guarded) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	type lock struct {
		unlock func(context.Context) error
		ok     bool
	}
	l, err := callStore(ctx, s.g, func(ctx context.Context) (lock, error) {
		unlock, ok, err := s.store.TryLock(ctx, key, ttl)
		return lock{unlock, ok}, err
	}, func(l lock) {
		if l.ok && l.unlock != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.g.timeout)
			defer cancel()
			_ = l.unlock(ctx)
		}
	})
	switch {
	case err != nil || !l.ok:
		return nil, false, err
	case l.unlock == nil: // a store's bug: the lease then lapses by itself
		return func(context.Context) error { return nil }, true, nil
	}
	return func(ctx context.Context) error {
		_, err := callStore(ctx, s.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.unlock(ctx) }, nil)
		return err
	}, true, nil
}

// sharedStore is a SharedStore as the fleet's token sharing and verdict
// sharing use it: every call bounded by the Client's storeGuard, values
// sealed and opened by the Client's sealer, and a streak of failures logged
// once, at its start and at its end, whatever the number of calls.
type sharedStore struct {
	store   guarded
	seal    *sealer
	logger  *slog.Logger
	what    string      // what it holds, for the log: "management token"
	failing atomic.Bool // a failure streak is under way
}

// newSharedStore returns store as c uses it for what.
func (c *Client) newSharedStore(store SharedStore, what string) *sharedStore {
	return &sharedStore{store: c.stores.guard(store), seal: c.seal, logger: c.logger, what: what}
}

// get returns the value stored under key as it is, nil when there is none.
func (s *sharedStore) get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.store.Get(ctx, key)
	s.note(ctx, err)
	return v, err
}

// open returns the value sealed under key, or nil when there is none or it
// does not open (forged, foreign, corrupt, sealed under a rotated secret).
func (s *sharedStore) open(ctx context.Context, key string) ([]byte, error) {
	sealed, err := s.get(ctx, key)
	if err != nil || sealed == nil {
		return nil, err
	}
	plain, ok := s.seal.open(key, sealed)
	if !ok {
		return nil, nil
	}
	return plain, nil
}

// set stores value under key as it is, for ttl.
func (s *sharedStore) set(ctx context.Context, key string, value []byte, ttl time.Duration) {
	s.note(ctx, s.store.Set(ctx, key, value, ttl))
}

// put stores plain sealed under key, for ttl.
func (s *sharedStore) put(ctx context.Context, key string, plain []byte, ttl time.Duration) {
	s.set(ctx, key, s.seal.seal(key, plain), ttl)
}

func (s *sharedStore) delete(ctx context.Context, key string) {
	s.note(ctx, s.store.Delete(ctx, key))
}

// tryLock takes the lease on key (see SharedStore.TryLock); its unlock
// notes a failure too.
func (s *sharedStore) tryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context), ok bool, err error) {
	release, ok, err := s.store.TryLock(ctx, key, ttl)
	s.note(ctx, err)
	if err != nil || !ok {
		return nil, false, err
	}
	return func(ctx context.Context) { s.note(ctx, release(ctx)) }, true, nil
}

// note logs the start of a streak of failures (Warn) and its end (Info,
// with the number of calls abandoned so far).
func (s *sharedStore) note(ctx context.Context, err error) {
	switch {
	case err != nil && !s.failing.Swap(true):
		s.logger.LogAttrs(ctx, slog.LevelWarn, "management: shared store failing, going on without it",
			slog.String("for", s.what), slog.String("error", err.Error()))
	case err == nil && s.failing.Swap(false):
		s.logger.LogAttrs(ctx, slog.LevelInfo, "management: shared store answering again", slog.String("for", s.what),
			slog.Int64("abandoned_calls", s.store.g.abandoned.Load()))
	}
}

// setSharedStore derives the sealer of what the Client stores in a shared
// store, and with Config.SharedStore shares the management token. cfg has
// its defaults (Config.withDefaults).
func (c *Client) setSharedStore(cfg Config) error {
	if cfg.SharedStoreTimeout < 0 {
		return errorf("%w: Config.SharedStoreTimeout must not be negative", ErrInvalidArgument)
	}
	c.stores.timeout = cfg.SharedStoreTimeout
	c.stores.host = flightHost{what: "shared store call", logger: c.logger,
		redactor: func() *redactor { return newRedactor(c.knownCredentials()...) }}
	master := cfg.SharedStoreKey
	switch {
	case len(master) > 0 && len(master) < minSharedStoreKey:
		return errorf("%w: Config.SharedStoreKey must be at least %d bytes", ErrInvalidArgument, minSharedStoreKey)
	case len(master) == 0 && cfg.TokenSource == nil:
		master = []byte(cfg.ClientSecret)
	case len(master) == 0 && cfg.SharedStore != nil:
		return errorf("%w: Config.SharedStore needs Config.SharedStoreKey when Config.TokenSource replaces the client credentials", ErrInvalidArgument)
	case len(master) == 0:
		return nil
	}
	seal, err := newSealer(master, c.baseURL, c.prefix, cfg.ClientID)
	if err != nil {
		return errorf("deriving the shared store's keys: %w", err)
	}
	c.seal = seal
	if cache, ok := c.tokens.(*tokenCache); ok && cfg.SharedStore != nil {
		cache.shared = &sharedTokens{store: c.newSharedStore(cfg.SharedStore, "management token"), cache: cache}
	}
	return nil
}
