package management

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the shared store's knobs.
const (
	// defaultSharedStoreTimeout bounds one store call: at least ten times
	// the 99.9th percentile of a GET on a loaded 2-core host, as
	// scripts/bench-fleet.sh measures it (34 to 73 ms over ten runs, two
	// busy loops and a load average of 13), so that a loaded but healthy
	// store is not taken for a hung one; a hung one delays a call that
	// reads it (a cache miss) by that long at most.
	defaultSharedStoreTimeout = 750 * time.Millisecond
	// tokenLease bounds how long one replica may hold the lease on
	// refreshing the fleet's token; past it, another replica takes over.
	tokenLease = 10 * time.Second
	// shortLeaseWait is how long a replica that needs a token now (its own
	// has expired, or expires before a lease would lapse) waits for
	// another replica's refresh before it fetches its own: a lease left by
	// a replica that died, or held on purpose, costs the fleet a token
	// request per replica, never a failed call.
	shortLeaseWait = time.Second
	// The rounds of a replica waiting on a lease (each reads the value and
	// tries the lease: one call on each key) are 20 ms apart, then 40 ms,
	// as the holder usually stores within tens of milliseconds, then
	// pollGap and a jitter of up to pollJitter, which keeps the replicas
	// from polling in step: at most 18 calls on a key in any second.
	pollGap    = 60 * time.Millisecond
	pollJitter = 30 * time.Millisecond
)

// firstPollGaps are the gaps after a key's first rounds (see pollGap).
var firstPollGaps = [...]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}

// sharedTokens keeps the fleet's management token in a SharedStore, sealed,
// so that the replicas of a service make one token request per token
// lifetime. The replica that needs a new token takes the lease, fetches and
// stores it; the others read it. A store that fails or is slow never fails a
// call: the replica fetches on its own, and the failure streak is logged once.
type sharedTokens struct {
	store   guarded // every call bounded by Config.SharedStoreTimeout
	seal    *sealer
	cache   *tokenCache // whose current token tells how long to wait for another replica
	logger  *slog.Logger
	failing atomic.Bool // a failure streak is under way
}

// storedToken is a token as sealed in the store.
type storedToken struct {
	AccessToken string    `json:"access_token"`
	TokenType   string    `json:"token_type"`
	Expiry      time.Time `json:"expiry"`
	RefreshAt   time.Time `json:"refresh_at"`
}

// fetchFunc fetches a new token from the token endpoint and says when it is
// due for refresh.
type fetchFunc func(context.Context) (*Token, time.Time, error)

// token returns a token for this replica: the stored one when it is not
// due for refresh and is not refused (the access token the service has just
// refused with 401, "" for none); otherwise one this replica fetches under
// the lease and stores, or one another replica stores while this one waits
// (see patience); failing all that, one it fetches on its own.
func (s *sharedTokens) token(ctx context.Context, refused string, fetch fetchFunc) (*Token, time.Time, error) {
	type stored struct {
		tok       *Token
		refreshAt time.Time
	}
	l := lease{store: s.store, key: s.seal.tokenLeaseKey(), ttl: tokenLease, patience: s.patience(ctx),
		note: func(err error) { s.note(ctx, err) }}
	got, found, unlock := awaitLease(ctx, l, func() (stored, bool, error) {
		tok, refreshAt, ok, err := s.read(ctx, refused)
		return stored{tok, refreshAt}, ok, err
	})
	if found {
		return got.tok, got.refreshAt, nil
	}
	if unlock == nil {
		unlock = func() {}
	}
	if err := ctx.Err(); err != nil {
		unlock()
		return nil, time.Time{}, err
	}
	tok, refreshAt, err := fetch(ctx)
	if err != nil {
		unlock()
		return nil, time.Time{}, err
	}
	// The token is stored, then the lease released, while the callers
	// go on with it: a slow store delays no one.
	go func() {
		defer unlock()
		plain, _ := json.Marshal(storedToken{AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry, RefreshAt: refreshAt})
		key := s.seal.tokenKey()
		if ttl := time.Until(tok.Expiry); ttl > 0 {
			s.note(ctx, s.store.Set(context.WithoutCancel(ctx), key, s.seal.seal(key, plain), ttl))
		}
	}()
	return tok, refreshAt, nil
}

// patience is how long this replica waits for another's refresh: the
// lease's lifetime while its own token outlives that, so that its callers
// are served meanwhile; otherwise shortLeaseWait, and never past its own
// token's expiry (its callers would then wait), nor, once it has expired,
// more than half the time the caller that needed the token has left.
func (s *sharedTokens) patience(ctx context.Context) time.Duration {
	s.cache.mu.Lock()
	tok := s.cache.tok
	s.cache.mu.Unlock()
	if tok != nil {
		switch left := time.Until(tok.Expiry); {
		case left > tokenLease:
			return tokenLease
		case left > 0:
			return min(left, shortLeaseWait)
		}
	}
	return callerPatience(ctx, shortLeaseWait)
}

// read returns the stored token if it opens, is not due for refresh and is
// not refused. A value that does not open (foreign, corrupt, sealed with
// another secret) is ignored: the lease's holder replaces it. A store that
// fails is an error, not an absent token.
func (s *sharedTokens) read(ctx context.Context, refused string) (*Token, time.Time, bool, error) {
	key := s.seal.tokenKey()
	sealed, err := s.store.Get(ctx, key)
	s.note(ctx, err)
	if err != nil || sealed == nil {
		return nil, time.Time{}, false, err
	}
	plain, ok := s.seal.open(key, sealed)
	var st storedToken
	if !ok || json.Unmarshal(plain, &st) != nil || (&Token{AccessToken: st.AccessToken, TokenType: st.TokenType}).check("access_token", "token_type") != nil {
		return nil, time.Time{}, false, nil
	}
	if st.AccessToken == refused || !time.Now().Before(st.RefreshAt) {
		return nil, time.Time{}, false, nil
	}
	return &Token{AccessToken: st.AccessToken, TokenType: st.TokenType, Expiry: st.Expiry}, st.RefreshAt, true, nil
}

// note logs the start and the end of a streak of store failures, once each.
func (s *sharedTokens) note(ctx context.Context, err error) {
	noteStore(ctx, s.logger, &s.failing, s.store.g, "management token", err)
}

// noteStore logs the start of a streak of failures of the shared store
// (Warn) and its end (Info, with the number of calls abandoned so far),
// once each, whatever the number of calls.
func noteStore(ctx context.Context, logger *slog.Logger, failing *atomic.Bool, g *storeGuard, what string, err error) {
	switch {
	case err != nil && !failing.Swap(true):
		logger.LogAttrs(ctx, slog.LevelWarn, "management: shared store failing, going on without it",
			slog.String("for", what), slog.String("error", err.Error()))
	case err == nil && failing.Swap(false):
		logger.LogAttrs(ctx, slog.LevelInfo, "management: shared store answering again", slog.String("for", what),
			slog.Int64("abandoned_calls", g.abandoned.Load()))
	}
}

// setSharedStore derives the sealer of what the Client stores in a shared
// store, and with Config.SharedStore shares the management token.
func (c *Client) setSharedStore(cfg Config) error {
	if cfg.SharedStoreTimeout < 0 {
		return errorf("%w: Config.SharedStoreTimeout must not be negative", ErrInvalidArgument)
	}
	c.stores.timeout = cmp.Or(cfg.SharedStoreTimeout, defaultSharedStoreTimeout)
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
		cache.shared = &sharedTokens{store: c.stores.guard(cfg.SharedStore), seal: seal, cache: cache, logger: c.logger}
	}
	return nil
}

// callerDeadline is the context key of the deadline of the caller that
// started a flight (see keepDeadline).
type callerDeadline struct{}

// keepDeadline returns ctx carrying its deadline as a value too: a flight
// runs detached from its caller's context (and so without its deadline),
// yet waits for another replica no longer than that caller can afford. A
// deadline kept earlier (a check's flight needing a token) stays when it is
// the sooner.
func keepDeadline(ctx context.Context) context.Context {
	d, ok := ctx.Deadline()
	if kept, was := ctx.Value(callerDeadline{}).(time.Time); was && (!ok || kept.Before(d)) {
		return ctx
	}
	if ok {
		return context.WithValue(ctx, callerDeadline{}, d)
	}
	return ctx
}

// callerPatience is limit, or half the time left to the deadline kept in ctx
// (see keepDeadline) when that is shorter: the other half is for doing the
// work itself.
func callerPatience(ctx context.Context, limit time.Duration) time.Duration {
	if d, ok := ctx.Value(callerDeadline{}).(time.Time); ok {
		return max(min(limit, time.Until(d)/2), 0)
	}
	return limit
}

// lease is the protocol by which the replicas produce one value once and
// share it through a store: read the value; if it is absent, take the
// lease, read once more (the previous holder may have stored it and left
// between the read and the lock) and produce it; if another replica holds
// the lease, read again (see pollGap), for at most patience (a
// lease left by a replica that died, or written by whoever can write the
// store, delays no longer), never past ctx. A store that fails, when
// reading the value or taking the lease, ends the wait at once: an error is
// not "not there yet", and the holder may well never be able to store.
type lease struct {
	store    guarded
	key      string
	ttl      time.Duration // the lease's lifetime in the store
	patience time.Duration // how long to wait for another holder
	note     func(error)   // logs a failing store, once a streak
}

// pollTurns spaces the polling rounds of all the waits on one lease in a
// Client (several Authenticators on one Client, a check that Forget
// detached and the one after it), so that together they poll the key as
// one poller would (see pollGap). It holds the keys being polled only.
type pollTurns struct {
	mu   sync.Mutex
	keys map[string]polling
}

// polling is the rounds given on one key: how many, and the latest.
type polling struct {
	given int
	last  time.Time
}

// next gives a wait on key, which has just had a round, its next round
// after the latest any wait on key was given, and returns when it is.
func (p *pollTurns) next(key string, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = make(map[string]polling)
	}
	k := p.keys[key]
	from := now
	if k.last.After(now) {
		from = k.last
	}
	gap := pollGap + rand.N(pollJitter)
	if k.given < len(firstPollGaps) {
		gap = firstPollGaps[k.given]
	}
	k.given++
	k.last = from.Add(gap)
	p.keys[key] = k
	return k.last
}

// done forgets key when the round at was the latest given on it: no other
// wait polls it.
func (p *pollTurns) done(key string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys[key].last.Equal(at) {
		delete(p.keys, key)
	}
}

// awaitLease returns the value read, or found false when this replica must
// produce it: then unlock, when not nil, releases the lease it holds (nil
// when the store failed, the wait gave up or ctx ended).
func awaitLease[T any](ctx context.Context, l lease, read func() (T, bool, error)) (v T, found bool, unlock func()) {
	giveUp := time.Now().Add(l.patience)
	var turn time.Time // the latest round this wait was given
	defer func() {
		if !turn.IsZero() {
			l.store.g.polls.done(l.key, turn)
		}
	}()
	for {
		v, ok, err := read()
		switch {
		case err != nil:
			return v, false, nil
		case ok:
			return v, true, nil
		}
		release, locked, err := l.store.TryLock(ctx, l.key, l.ttl)
		l.note(err)
		switch {
		case err != nil:
			return v, false, nil
		case locked:
			unlock = func() {
				l.note(release(context.WithoutCancel(ctx)))
			}
			if v, ok, err := read(); err == nil && ok {
				unlock()
				return v, true, nil
			}
			return v, false, unlock
		}
		now := time.Now()
		if !now.Before(giveUp) {
			return v, false, nil
		}
		turn = l.store.g.polls.next(l.key, now)
		t := time.NewTimer(min(turn.Sub(now), giveUp.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, false, nil
		case <-t.C:
		}
	}
}
