package management

import (
	"cmp"
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// verdictCache is the Authenticator's in-process memory: the cached
// verdicts (an LRU with a TTL per entry), the call in flight per token, the
// bound on calls and the miss budget. Its lock is its own and is held only
// inside its methods.
type verdictCache struct {
	validTTL   time.Duration // <0: nothing is cached
	invalidTTL time.Duration
	// firstLevel caps an entry's life (0: no cap): with a shared store,
	// sharedFirstLevelTTL.
	firstLevel time.Duration
	maxCalls   int
	misses     *rate.Limiter // nil without a MissBudget; safe for concurrent use

	// releaseCall is c.release, bound once: a method value made per call
	// would be one more allocation per uncached check.
	releaseCall func()

	mu       sync.Mutex
	cache    *simplelru.LRU[verdictKey, authVerdict] // nil when caching is off
	inflight map[verdictKey]inflightCall             // the call whose verdict a token's checks take
	calls    int                                     // calls running, forgotten ones included; <= maxCalls
	started  uint64                                  // calls ever started: each one's number
}

// inflightCall is a token's call in flight, numbered so that its verdict
// settles only the entry it started as, not one a later check started
// after Forget detached it.
type inflightCall struct {
	call *flight[authVerdict]
	n    uint64
}

// verdictKey is the cache key of an Authorization header value: its
// SHA-256 digest, so that raw tokens are not kept.
type verdictKey = [sha256.Size]byte

// headerDigest returns the verdictKey of header. (The conversion to
// []byte does not allocate: sha256.Sum256 does not keep it.)
func headerDigest(header string) verdictKey {
	return sha256.Sum256([]byte(header))
}

// authVerdict is the outcome of one authenticate call, as cached.
type authVerdict struct {
	user    EndUser // when err is nil
	err     error   // a refusal: *InvalidTokenError or ErrForbiddenRole
	expires time.Time
}

// init sets c up from an Authenticator's fields; shared says whether it
// has a SharedStore (see sharedFirstLevelTTL).
func (c *verdictCache) init(a *Authenticator, shared bool) {
	c.validTTL = cmp.Or(a.CacheTTL, defaultAuthCacheTTL)
	c.invalidTTL = min(c.validTTL, maxInvalidTTL)
	c.maxCalls = orDefault(a.MaxConcurrentChecks, defaultMaxConcurrentChecks)
	if shared {
		c.firstLevel = sharedFirstLevelTTL
	}
	if a.MissBudget.PerSecond > 0 {
		c.misses = rate.NewLimiter(rate.Limit(a.MissBudget.PerSecond), max(a.MissBudget.Burst, 1))
	}
	c.inflight = make(map[verdictKey]inflightCall)
	c.releaseCall = c.release
	if c.validTTL < 0 {
		return
	}
	// simplelru rather than expirable: expirable.LRU starts a cleanup
	// goroutine that cannot be stopped, and one TTL would not fit two.
	c.cache, _ = simplelru.NewLRU[verdictKey, authVerdict](orDefault(a.CacheSize, defaultAuthCacheSize), nil) // fails only for size <= 0
}

// orDefault returns v when it is positive, def otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// startFunc starts the call that judges a token; settle and release are
// the flight's finish and release (see startFlight).
type startFunc func(settle func(context.Context, authVerdict, error) func(), release func()) *flight[authVerdict]

// lookup returns the unexpired verdict on key (call nil), or else the call
// in flight for it, which it starts with start when there is none, within
// the bound on calls and, when spend is set, the miss budget. A request
// whose context has ended starts no call.
func (c *verdictCache) lookup(ctx context.Context, key verdictKey, now time.Time, spend bool, start startFunc) (authVerdict, *flight[authVerdict], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil {
		if v, ok := c.cache.Get(key); ok && now.Before(v.expires) {
			return v, nil, nil
		}
	}
	if in, ok := c.inflight[key]; ok {
		return authVerdict{}, in.call, nil
	}
	if err := ctx.Err(); err != nil {
		return authVerdict{}, nil, errorf("waiting for the End User token check: %w", err)
	}
	if c.calls >= c.maxCalls {
		return authVerdict{}, nil, ErrTooManyChecks
	}
	if spend && !c.spend() {
		return authVerdict{}, nil, ErrOverMissBudget
	}
	// The slot is released only when the call's goroutine returns, so that
	// calls left running past their deadline stay bounded by maxCalls.
	c.started++
	n := c.started
	call := start(func(_ context.Context, v authVerdict, err error) func() {
		c.settle(key, n, v, err)
		return nil
	}, c.releaseCall)
	c.inflight[key] = inflightCall{call: call, n: n}
	c.calls++
	return authVerdict{}, call, nil
}

// settle caches the verdict of call number n, unless Forget dropped it
// meanwhile. The entry is read under the lock: lookup sets it under the
// lock too, after the flight has started. It runs before the call's
// waiters are woken, and so calls no hosted code (no hook, no Logger).
func (c *verdictCache) settle(key verdictKey, n uint64, v authVerdict, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.inflight[key]; !ok || in.n != n {
		return
	}
	delete(c.inflight, key)
	if err == nil && c.cache != nil {
		if c.firstLevel > 0 {
			v.expires = minTime(v.expires, time.Now().Add(c.firstLevel))
		}
		c.cache.Add(key, v)
	}
}

// release frees the slot of a call whose goroutine has returned.
func (c *verdictCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls--
}

// forget drops the verdict on key and detaches its call in flight: the
// call keeps running (and counting against the bound) but is no longer the
// one this token's checks join or whose verdict is cached.
func (c *verdictCache) forget(key verdictKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil {
		c.cache.Remove(key)
	}
	delete(c.inflight, key)
}

// spend spends one check of the miss budget, if it allows one: only a
// check about to reach the service spends it.
func (c *verdictCache) spend() bool {
	return c.misses == nil || c.misses.Allow()
}

// verdict turns the service's answer on header into a cacheable verdict:
// an invalid one lives invalidTTL, the others validTTL. The role named in a
// refusal comes from the service: Authenticate redacted it, and it is
// quoted.
func (c *verdictCache) verdict(auth *EndUserAuthentication, header string, now time.Time) authVerdict {
	switch {
	case !auth.Valid:
		return authVerdict{err: &InvalidTokenError{Response: relayable(auth.ClientResponse)}, expires: now.Add(c.invalidTTL)}
	case auth.Role != RoleAppUser:
		role := newRedactor(authForms(header)...).word(string(auth.Role))
		return authVerdict{err: errorf("%w: %.64q", ErrForbiddenRole, role), expires: now.Add(c.validTTL)}
	}
	return authVerdict{user: EndUser{ID: auth.UserID, Role: auth.Role}, expires: now.Add(c.validTTL)}
}

func minTime(x, y time.Time) time.Time {
	if x.Before(y) {
		return x
	}
	return y
}
