package management

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"
)

// Defaults of the shared store's knobs.
const (
	defaultSharedStoreTimeout = 50 * time.Millisecond
	// tokenLease bounds how long one replica may hold the lease on
	// refreshing the fleet's token; past it, another replica takes over.
	tokenLease = 10 * time.Second
	// tokenPoll is how often a replica waiting for another's refresh reads
	// the store again.
	tokenPoll = 50 * time.Millisecond
)

// sharedTokens keeps the fleet's management token in a SharedStore, sealed,
// so that the replicas of a service make one token request per token
// lifetime. The replica that needs a new token takes the lease, fetches and
// stores it; the others read it. A store that fails or is slow never fails a
// call: the replica fetches on its own, and the failure streak is logged once.
type sharedTokens struct {
	store   SharedStore
	seal    *sealer
	timeout time.Duration // budget of one store operation
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
// (never past ctx nor the lease's lifetime); failing all that, one it
// fetches on its own.
func (s *sharedTokens) token(ctx context.Context, refused string, fetch fetchFunc) (*Token, time.Time, error) {
	type stored struct {
		tok       *Token
		refreshAt time.Time
	}
	l := lease{store: s.store, key: s.seal.tokenLeaseKey(), ttl: tokenLease, poll: tokenPoll, timeout: s.timeout,
		note: func(err error) { s.note(ctx, err) }}
	got, found, unlock := awaitLease(ctx, l, func() (stored, bool) {
		tok, refreshAt, ok := s.read(ctx, refused)
		return stored{tok, refreshAt}, ok
	})
	if found {
		return got.tok, got.refreshAt, nil
	}
	if unlock != nil {
		defer unlock()
	}
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	tok, refreshAt, err := fetch(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	plain, _ := json.Marshal(storedToken{AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry, RefreshAt: refreshAt})
	key := s.seal.tokenKey()
	if ttl := time.Until(tok.Expiry); ttl > 0 {
		sctx, cancel := s.budget(ctx)
		defer cancel()
		s.note(ctx, s.store.Set(sctx, key, s.seal.seal(key, plain), ttl))
	}
	return tok, refreshAt, nil
}

// read returns the stored token if it opens, is not due for refresh and is
// not refused. A value that does not open (foreign, corrupt, sealed with
// another secret) is ignored.
func (s *sharedTokens) read(ctx context.Context, refused string) (*Token, time.Time, bool) {
	sctx, cancel := s.budget(ctx)
	defer cancel()
	key := s.seal.tokenKey()
	sealed, err := s.store.Get(sctx, key)
	s.note(ctx, err)
	if err != nil || sealed == nil {
		return nil, time.Time{}, false
	}
	plain, ok := s.seal.open(key, sealed)
	var st storedToken
	if !ok || json.Unmarshal(plain, &st) != nil || (&Token{AccessToken: st.AccessToken, TokenType: st.TokenType}).check("access_token", "token_type") != nil {
		return nil, time.Time{}, false
	}
	if st.AccessToken == refused || !time.Now().Before(st.RefreshAt) {
		return nil, time.Time{}, false
	}
	return &Token{AccessToken: st.AccessToken, TokenType: st.TokenType, Expiry: st.Expiry}, st.RefreshAt, true
}

// budget bounds one store operation.
func (s *sharedTokens) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// note logs the start and the end of a streak of store failures, once each.
func (s *sharedTokens) note(ctx context.Context, err error) {
	noteStore(ctx, s.logger, &s.failing, "management token", err)
}

// noteStore logs the start of a streak of failures of the shared store
// (Warn) and its end (Info), once each, whatever the number of calls.
func noteStore(ctx context.Context, logger *slog.Logger, failing *atomic.Bool, what string, err error) {
	switch {
	case err != nil && !failing.Swap(true):
		logger.LogAttrs(ctx, slog.LevelWarn, "management: shared store failing, going on without it",
			slog.String("for", what), slog.String("error", err.Error()))
	case err == nil && failing.Swap(false):
		logger.LogAttrs(ctx, slog.LevelInfo, "management: shared store answering again", slog.String("for", what))
	}
}

// setSharedStore derives the sealer of what the Client stores in a shared
// store, and with Config.SharedStore shares the management token.
func (c *Client) setSharedStore(cfg Config) error {
	if cfg.SharedStoreTimeout < 0 {
		return errorf("%w: Config.SharedStoreTimeout must not be negative", ErrInvalidArgument)
	}
	c.storeTimeout = cmp.Or(cfg.SharedStoreTimeout, defaultSharedStoreTimeout)
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
		cache.shared = &sharedTokens{store: cfg.SharedStore, seal: seal, timeout: c.storeTimeout, logger: c.logger}
	}
	return nil
}

// lease is the protocol by which the replicas produce one value once and
// share it through a store: read the value; if it is absent, take the
// lease, read once more (the previous holder may have stored it and left
// between the read and the lock) and produce it; if another replica holds
// the lease, read again every poll, for at most ttl (a lease left by a
// replica that died, or written by whoever can write the store, delays no
// longer), never past ctx.
type lease struct {
	store   SharedStore
	key     string
	ttl     time.Duration
	poll    time.Duration
	timeout time.Duration // budget of one store operation
	note    func(error)   // logs a failing store, once a streak
}

// awaitLease returns the value read, or found false when this replica must
// produce it: then unlock, when not nil, releases the lease it holds (nil
// when the store failed, the wait gave up or ctx ended).
func awaitLease[T any](ctx context.Context, l lease, read func() (T, bool)) (v T, found bool, unlock func()) {
	giveUp := time.Now().Add(l.ttl)
	for {
		if v, ok := read(); ok {
			return v, true, nil
		}
		sctx, cancel := context.WithTimeout(ctx, l.timeout)
		release, locked, err := l.store.TryLock(sctx, l.key, l.ttl)
		cancel()
		l.note(err)
		switch {
		case err != nil:
			return v, false, nil
		case locked:
			unlock = func() {
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
				defer cancel()
				l.note(release(uctx))
			}
			if v, ok := read(); ok {
				unlock()
				return v, true, nil
			}
			return v, false, unlock
		case time.Now().After(giveUp):
			return v, false, nil
		}
		select {
		case <-ctx.Done():
			return v, false, nil
		case <-time.After(l.poll):
		}
	}
}
