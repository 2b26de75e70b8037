package fleet

import (
	"context"
	"time"
)

// Shared is a store as one use of the fleet's (the management token, the
// verdicts) reads and writes it: every operation bounded by the Client's
// Guard, values sealed and opened by the Client's Sealer.
type Shared struct {
	store Guarded
	seal  *Sealer
}

// Share returns store as a use of the Client of g and seal has it.
func (g *Guard) Share(store Store, seal *Sealer) *Shared {
	return &Shared{store: g.Guard(store), seal: seal}
}

// Sealer returns the Sealer of s.
func (s *Shared) Sealer() *Sealer { return s.seal }

// Guard returns the Guard of s.
func (s *Shared) Guard() *Guard { return s.store.g }

// Get returns the value stored under key as it is, nil when there is none.
func (s *Shared) Get(ctx context.Context, key string) ([]byte, error) {
	return s.store.Get(ctx, key)
}

// Open returns the value sealed under key, or nil when there is none or it
// does not open (forged, foreign, corrupt, sealed under a rotated secret).
func (s *Shared) Open(ctx context.Context, key string) ([]byte, error) {
	sealed, err := s.store.Get(ctx, key)
	if err != nil || sealed == nil {
		return nil, err
	}
	plain, ok := s.seal.Open(key, sealed)
	if !ok {
		return nil, nil
	}
	return plain, nil
}

// Set stores value under key as it is, for ttl.
func (s *Shared) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return s.store.Set(ctx, key, value, ttl)
}

// Put stores plain sealed under key, for ttl.
func (s *Shared) Put(ctx context.Context, key string, plain []byte, ttl time.Duration) error {
	return s.store.Set(ctx, key, s.seal.Seal(key, plain), ttl)
}

// Delete removes key.
func (s *Shared) Delete(ctx context.Context, key string) error {
	return s.store.Delete(ctx, key)
}

// TryLock takes the lease on key (see Store.TryLock). Its unlock is tried
// whatever the Breaker's state (a lease left held keeps the other replicas
// waiting), without the call's budget: it runs once the call is done.
func (s *Shared) TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context), ok bool, err error) {
	release, ok, err := s.store.TryLock(ctx, key, ttl)
	if err != nil || !ok {
		return nil, false, err
	}
	return func(ctx context.Context) { _ = release(Forced(WithoutBudget(ctx))) }, true, nil
}

// Contain, deferred in a goroutine the SDK starts to use the store,
// recovers a panic of the code it hosts there (a Logger's, an Observer's,
// told of the Breaker) and logs it.
func (s *Shared) Contain(ctx context.Context) {
	if p := recover(); p != nil {
		s.store.g.LogPanic(ctx, p, false)
	}
}
