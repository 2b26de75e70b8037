package management

import (
	"cmp"
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/serviceconnect/management/internal/fleet"
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
	// grace is StaleIfError as applied: how long after the service last
	// confirmed a token it may be let through stale; 0: never.
	grace    time.Duration
	maxCalls int
	misses   *rate.Limiter // nil without a MissBudget; safe for concurrent use
	// breaker stops the calls to the service for a cool-down after calls
	// in a row got no answer (BreakerAuthenticate); safe for concurrent use.
	breaker *fleet.Breaker

	// releaseCall is c.release, bound once: a method value made per call
	// would be one more allocation per uncached check. called is the
	// Authenticator's, bound once too: it reports how a call went (see
	// Authenticator.called).
	releaseCall func()
	called      func(ctx context.Context, t fleet.Ticket, v authVerdict, err error) (report func())

	mu sync.Mutex
	// cache holds the verdicts by credential (verdictKey.fold), each
	// spelling of the scheme its own, so that Forget drops them all at
	// once; nil when caching is off and there is no grace.
	cache    *simplelru.LRU[[sha256.Size]byte, spellings]
	inflight map[verdictKey]inflightCall // the call whose verdict a token's checks take
	calls    int                         // calls running, forgotten ones included; <= maxCalls
	started  uint64                      // calls ever started: each one's number
	forgets  atomic.Uint64               // Forgets so far (see adopt); written under mu
	// forgotten holds the credentials (verdictKey.fold) of the latest
	// Forgets, that of Forget number n at n % len: adopt tells whether a
	// Forget since it began was its token's, rather than void every check
	// that read the store while any token was forgotten.
	forgotten [64][sha256.Size]byte
	// stalePasses counts the stale passes since the service last
	// answered. It grows under mu, beside the read of the entry that
	// allows the pass, so that a pass is counted before the answer that
	// settle caches is reported (see Authenticator.called), or not given.
	stalePasses atomic.Int64
}

// inflightCall is a token's call in flight, numbered so that its verdict
// settles only the entry it started as, not one a later check started
// after Forget detached it.
type inflightCall struct {
	call *flight[authVerdict]
	n    uint64
}

// verdictKey is the cache key of an Authorization header value: the
// SHA-256 digest of the value with its scheme in ASCII lower case (so
// that raw tokens are not kept), which names the credential whatever the
// case of its scheme (RFC 9110, 11.1: "bearer T" and "Bearer T" carry the
// same one, and Forget of either drops both), and the spelling of the
// scheme as received (see fleet.Spelling): a verdict is the service's
// answer on one spelling, and never serves another.
type verdictKey struct {
	fold     [sha256.Size]byte
	spelling uint64
}

// headerDigest returns the verdictKey of header. A value up to 1 KiB is
// folded in a buffer on the stack: a check allocates nothing for it.
func headerDigest(header string) verdictKey {
	var buf [1024]byte
	b := append(buf[:0], header...)
	for i := 0; i < len(b) && b[i] != ' '; i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return verdictKey{fold: sha256.Sum256(b), spelling: fleet.Spelling(header)}
}

// maxSpellings bounds the spellings of one credential's scheme whose
// verdicts are cached (a client sends one, seldom two): beyond it, the
// oldest is dropped, so that CacheSize bounds memory whatever the
// spellings a client tries.
const maxSpellings = 4

// spellings are the cached verdicts on one credential, one per spelling of
// its scheme, the latest first. A cached value is never changed: add
// replaces it.
type spellings []spelled

type spelled struct {
	spelling uint64
	v        authVerdict
}

// find returns the verdict of spelling.
func (vs spellings) find(spelling uint64) (authVerdict, bool) {
	for _, e := range vs {
		if e.spelling == spelling {
			return e.v, true
		}
	}
	return authVerdict{}, false
}

// get returns the cached verdict on key, marking its credential recently
// used; c.mu is held and c.cache is set.
func (c *verdictCache) get(key verdictKey) (authVerdict, bool) {
	vs, ok := c.cache.Get(key.fold)
	if !ok {
		return authVerdict{}, false
	}
	return vs.find(key.spelling)
}

// authVerdict is the outcome of one authenticate call, as cached. An entry
// stays in the cache past expires (until the LRU drops it, within
// CacheSize), as the record of the service's latest answer on its token
// that a stale pass needs (see Authenticator.StaleIfError).
type authVerdict struct {
	user    EndUser // when err is nil
	err     error   // a refusal: *InvalidTokenError or ErrForbiddenRole
	expires time.Time
	// answered is when the service gave this answer (on this replica or,
	// for a verdict read from the store, on the one that stored it).
	answered time.Time
	// graceUntil is the last instant at which the End User may be let
	// through stale on this entry: answered plus StaleIfError, and with a
	// store no later than 5s after the entry was had from there (or
	// written there), as for any entry. Zero: never (a refusal, or no
	// StaleIfError).
	graceUntil time.Time
	// asked is set when the service gave the verdict to this call (not
	// the store).
	asked bool
}

// graceful reports whether v's End User may be let through stale at now:
// graceUntil is zero for a refusal and without StaleIfError.
func (v authVerdict) graceful(now time.Time) bool {
	return v.err == nil && !v.graceUntil.IsZero() && !now.After(v.graceUntil)
}

// init sets c up from an Authenticator's fields; shared says whether it
// has a SharedStore (see sharedFirstLevelTTL).
func (c *verdictCache) init(a *Authenticator, shared bool) {
	c.validTTL = cmp.Or(a.CacheTTL, defaultAuthCacheTTL)
	c.invalidTTL = min(c.validTTL, maxInvalidTTL)
	c.grace = max(a.StaleIfError, 0)
	c.maxCalls = orDefault(a.MaxConcurrentChecks, defaultMaxConcurrentChecks)
	if shared {
		c.firstLevel = sharedFirstLevelTTL
	}
	if a.MissBudget.PerSecond > 0 {
		c.misses = rate.NewLimiter(rate.Limit(a.MissBudget.PerSecond), max(a.MissBudget.Burst, 1))
	}
	c.breaker = &fleet.Breaker{Threshold: authBreakerThreshold, CoolDown: authCoolDown, MaxCoolDown: authMaxCoolDown}
	if a.Client != nil {
		c.breaker.OnChange = a.Client.breakerChanged(BreakerAuthenticate)
	}
	c.inflight = make(map[verdictKey]inflightCall)
	c.releaseCall = c.release
	c.called = a.called
	if c.validTTL < 0 && c.grace == 0 {
		return
	}
	// simplelru rather than expirable: expirable.LRU starts a cleanup
	// goroutine that cannot be stopped, and one TTL would not fit two.
	c.cache, _ = simplelru.NewLRU[[sha256.Size]byte, spellings](orDefault(a.CacheSize, defaultAuthCacheSize), nil) // fails only for size <= 0
}

// orDefault returns v when it is positive, def otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// startFunc starts the call that judges a token; settle and release are
// the flight's finish and release (see startFlight); probe says that the
// call is the breaker's probe.
type startFunc func(settle func(context.Context, authVerdict, error) func(), release func(), probe bool) *flight[authVerdict]

// lookup returns the unexpired verdict on key (call nil), or else the call
// in flight for it, which it starts with start when there is none, within
// the breaker, the bound on calls and, when spend is set, the miss budget.
// A request whose context has ended starts no call. While the breaker is
// open no check waits for the service: lookup fails with errHeld rather
// than join a call, and when the cool-down is over, the call it starts as
// the breaker's probe runs on its own (its verdict is cached when it
// comes) while this check, too, fails with errHeld.
func (c *verdictCache) lookup(ctx context.Context, key verdictKey, now time.Time, spend bool, start startFunc) (authVerdict, *flight[authVerdict], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil {
		if v, ok := c.get(key); ok && now.Before(v.expires) {
			return v, nil, nil
		}
	}
	if in, ok := c.inflight[key]; ok {
		if c.breaker.IsOpen() {
			return authVerdict{}, nil, errHeld
		}
		return authVerdict{}, in.call, nil
	}
	if err := ctx.Err(); err != nil {
		return authVerdict{}, nil, errorf("waiting for the End User token check: %w", err)
	}
	t, ok := c.breaker.Allow()
	switch {
	case !ok:
		return authVerdict{}, nil, errHeld
	case c.calls >= c.maxCalls:
		t.Abstained()
		return authVerdict{}, nil, ErrTooManyChecks
	case spend && !c.spend():
		t.Abstained()
		return authVerdict{}, nil, ErrOverMissBudget
	}
	// The slot is released only when the call's goroutine returns, so that
	// calls left running past their deadline stay bounded by maxCalls.
	c.started++
	n := c.started
	call := start(func(ctx context.Context, v authVerdict, err error) func() {
		c.settle(key, n, v, err)
		return c.called(ctx, t, v, err)
	}, c.releaseCall, t.Probe())
	c.inflight[key] = inflightCall{call: call, n: n}
	c.calls++
	if t.Probe() {
		return authVerdict{}, nil, errHeld
	}
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
		c.add(key, v, time.Now())
	}
}

// add caches v on key at now, no longer than firstLevel with a store,
// beside the verdicts on the credential's other spellings; c.mu is held.
func (c *verdictCache) add(key verdictKey, v authVerdict, now time.Time) {
	if c.firstLevel > 0 {
		v.expires = minTime(v.expires, now.Add(c.firstLevel))
		if !v.graceUntil.IsZero() {
			v.graceUntil = minTime(v.graceUntil, now.Add(c.firstLevel))
		}
	}
	old, _ := c.cache.Peek(key.fold)
	vs := make(spellings, 1, min(len(old)+1, maxSpellings))
	vs[0] = spelled{key.spelling, v}
	for _, e := range old {
		if e.spelling != key.spelling && len(vs) < cap(vs) {
			vs = append(vs, e)
		}
	}
	c.cache.Add(key.fold, vs)
}

// fallback returns what a check that got no verdict on key may end with
// at now: an unexpired verdict (useFresh: a call answered since the check
// looked, such as the probe it started while the breaker held it), or
// else an End User within its grace (useStale), counted in stalePasses;
// first reports whether that pass is the first since the service last
// answered.
func (c *verdictCache) fallback(key verdictKey, now time.Time) (v authVerdict, use verdictUse, first bool) {
	if c.cache == nil {
		return authVerdict{}, useNone, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.get(key)
	switch {
	case !ok:
		return authVerdict{}, useNone, false
	case now.Before(v.expires):
		return v, useFresh, false
	case v.graceful(now):
		return v, useStale, c.stalePasses.Add(1) == 1
	}
	return authVerdict{}, useNone, false
}

// generation returns the number of Forgets so far, for adopt.
func (c *verdictCache) generation() uint64 { return c.forgets.Load() }

// verdictUse is what a verdict read from the store is good for.
type verdictUse int

const (
	useNone  verdictUse = iota // neither: the check fails closed
	useFresh                   // a verdict, as any read from the store
	useStale                   // a stale pass
)

// adopt judges v, the verdict on key the store holds (read without a
// call, see sharedVerdicts.peek, or by the check's own call: own), at now,
// and caches it when it is good for something: a verdict not yet expired,
// or an End User within its grace. A record is cached with a grace of at
// most 5s from its read (see sharedVerdicts.record); the check whose own
// call read it may pass on it later, within the service's grace: its call
// may have failed as late as Timeout after the read. gen is generation()
// before the store was read: after a Forget of key since, or beside a
// newer refusal of the service on this replica (an invalid answer ends the
// grace even if its write to the store failed), v is good for nothing;
// beside a newer confirmation here, the grace counts from that one. A
// stale pass is counted as fallback counts it; first reports whether it
// is the first since the service last answered.
func (c *verdictCache) adopt(key verdictKey, v authVerdict, gen uint64, now time.Time, own bool) (use verdictUse, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgottenSince(key, gen) {
		return useNone, false
	}
	if c.cache != nil {
		vs, _ := c.cache.Peek(key.fold)
		if cur, ok := vs.find(key.spelling); ok && cur.answered.After(v.answered) {
			if cur.err != nil {
				return useNone, false // a newer refusal: the grace is over
			}
			// A newer confirmation here (its write to the store lost, or
			// overwritten by an older one): the grace counts from it.
			v.answered = cur.answered
		}
	}
	switch {
	case now.Before(v.expires):
		use = useFresh
	case v.graceful(now), own && !v.graceUntil.IsZero() && !now.After(v.answered.Add(c.grace)):
		use, first = useStale, c.stalePasses.Add(1) == 1
	}
	if use != useNone && c.cache != nil {
		c.add(key, v, now)
	}
	return use, first
}

// release frees the slot of a call whose goroutine has returned.
func (c *verdictCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls--
}

// forgottenSince reports whether key's credential may have been forgotten
// since Forget number gen: it was, under any spelling, or more Forgets came
// since than forgotten remembers. c.mu is held.
func (c *verdictCache) forgottenSince(key verdictKey, gen uint64) bool {
	forgets := c.forgets.Load()
	if forgets-gen > uint64(len(c.forgotten)) {
		return true
	}
	for n := gen + 1; n <= forgets; n++ {
		if c.forgotten[n%uint64(len(c.forgotten))] == key.fold {
			return true
		}
	}
	return false
}

// forget drops the verdicts on key's credential, every spelling of its
// scheme, and detaches their calls in flight: a call keeps running (and
// counting against the bound) but is no longer the one its token's checks
// join or whose verdict is cached.
func (c *verdictCache) forget(key verdictKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil {
		c.cache.Remove(key.fold)
	}
	for k := range c.inflight { // at most MaxConcurrentChecks
		if k.fold == key.fold {
			delete(c.inflight, k)
		}
	}
	n := c.forgets.Add(1)
	c.forgotten[n%uint64(len(c.forgotten))] = key.fold
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
		return authVerdict{err: &InvalidTokenError{Response: relayable(auth.ClientResponse)}, expires: now.Add(c.invalidTTL), answered: now}
	case auth.Role != RoleAppUser:
		role := newRedactor(authForms(header)...).word(string(auth.Role))
		return authVerdict{err: errorf("%w: %.64q", ErrForbiddenRole, role), expires: now.Add(c.validTTL), answered: now}
	}
	v := authVerdict{user: EndUser{ID: auth.UserID, Role: auth.Role}, expires: now.Add(c.validTTL), answered: now}
	if c.grace > 0 {
		v.graceUntil = now.Add(c.grace)
	}
	return v
}

func minTime(x, y time.Time) time.Time {
	if x.Before(y) {
		return x
	}
	return y
}

func maxTime(x, y time.Time) time.Time {
	if x.After(y) {
		return x
	}
	return y
}
