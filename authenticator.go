package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/serviceconnect/management/internal/errtext"
	"github.com/serviceconnect/management/internal/fleet"
)

// The Authenticator's bounds and defaults. The docs of the exported fields
// give their values (never these names, which go doc does not show), and so
// does docs/defaults.md: TestDefaultsTable holds both to these.
const (
	// defaultAuthCacheTTL is the default CacheTTL.
	defaultAuthCacheTTL  = 30 * time.Second
	defaultAuthCacheSize = 10_000
	// maxInvalidTTL bounds how long an invalid verdict is cached: long
	// enough that a flood of one bad token is not a flood of calls, short
	// enough that a token the End User has just obtained is soon accepted.
	maxInvalidTTL = 5 * time.Second
	// defaultMaxConcurrentChecks bounds the calls in flight: enough for a
	// busy service whose calls take tens of milliseconds, few enough that a
	// flood of random tokens neither exhausts memory nor floods the service.
	defaultMaxConcurrentChecks = 64
	// defaultAuthTimeout bounds one check's call, retries included: an
	// End User waits this long at most for a verdict.
	defaultAuthTimeout = 5 * time.Second
	// sharedFirstLevelTTL bounds how long a verdict stays in the in-process
	// cache when there is a shared store: the longest another replica may
	// still accept a token that Forget dropped.
	sharedFirstLevelTTL = 5 * time.Second
	// verdictLease is the longest a replica waits for the verdict another
	// replica is asking the service for, and the lease's lifetime. A check
	// waits about four times what asking the service and storing a verdict
	// take this replica (at least SharedStoreTimeout, at most verdictLease,
	// never past half its own time left; see sharedVerdicts.patience): a
	// lease left by a
	// replica that died, or written by whoever can write the store, delays
	// a check by about that long, and after three such waits in a row
	// (fleet.LeaseWaitsOut) the replica waits on no lease for a while.
	verdictLease = time.Second
)

// Authenticator is net/http middleware that lets a request through only when
// its Authorization header holds a valid End User access token of role
// RoleAppUser, as the service's authenticate endpoint says.
//
//	auth := &management.Authenticator{Client: client}
//	mux.Handle("/api/", auth.Handler(api))
//
//	// in api's handlers:
//	user, _ := management.EndUserFromContext(r.Context())
//
//	// on sign-out, once the token is revoked:
//	_ = auth.Forget(r.Context(), r.Header.Get("Authorization"))
//
// CheckAuthorization is the same check for other transports (package
// grpcauth: gRPC interceptors), so that one Authenticator guards a
// service's HTTP and gRPC surfaces with one cache, one Forget and one
// budget.
//
// # Refusals
//
// This is the one table of refusals: the error Check and
// CheckAuthorization return and ErrorHandler is given, and the answer
// Handler writes by default, with a JSON body shaped like the service's
// ({"error_code", "reason", "error_message"}):
//   - no or a blank Authorization header: ErrMissingToken; 401, without
//     calling the service.
//   - an invalid token: *InvalidTokenError (matching ErrInvalidToken),
//     carrying the service's to_client_response; its http_code as the
//     status (401 unless it is a 4xx) and its http_body as the body.
//     Likewise, without a call, a header that is not valid UTF-8 or not
//     "<type> <token>" (which Client.Authenticate refuses to send), and a
//     request with more than one Authorization header (which one the
//     service would judge is ambiguous).
//   - a valid token of another role, such as a management token
//     (RoleServiceAccount): ErrForbiddenRole; 403.
//   - a token that would need a call while MaxConcurrentChecks calls are in
//     flight: ErrTooManyChecks; beyond MissBudget: ErrOverMissBudget. Both
//     match ErrAuthenticationUnavailable; 503 with Retry-After: 1, at once
//     and without a call.
//   - no verdict (the service unreachable, failing after the client's
//     retries or past Timeout, refusing the management token, or answering
//     in an unknown shape; or the code the check hosts, the Client's
//     RoundTripper, TokenSource, SharedStore or Observer hooks, panicking
//     or hanging): an error matching ErrAuthenticationUnavailable and
//     wrapping the cause, logged through the Client's logger; 503, failing
//     closed. Also 503 with the context's error when the request's context
//     ends while waiting.
//   - no verdict while calls to the service are held for a cool-down,
//     after 3 calls in a row got no answer (see BreakerAuthenticate): an
//     *AuthenticationUnavailableError (matching
//     ErrAuthenticationUnavailable) carrying the rest of the cool-down;
//     503 with that as Retry-After (in seconds, at least 1), at once and
//     without a call.
//
// Unless StaleIfError lets the token through: then the check succeeds,
// with the EndUser marked Stale.
//
// # Caching and bounds
//
// Verdicts are cached in memory, keyed by a SHA-256 digest of the header
// value (raw tokens are not kept): valid ones for CacheTTL, invalid ones for
// at most 5s, failures never. Each spelling of the scheme ("Bearer",
// "bearer") has its own verdict, as the service answers it, and one
// spelling's verdict never serves another; Forget drops them all.
// Concurrent checks of one token make one call. Memory stays bounded under
// any stream of tokens: at most CacheSize tokens (each with at most 4
// spellings) and MaxConcurrentChecks calls in flight, each ended after
// Timeout. Cached verdicts are served whatever is in flight. A revoked
// token is accepted until its entry expires, unless Forget drops it.
//
// Set the fields before the first use and do not change them afterwards; an
// Authenticator is then safe for concurrent use. It must not be copied after
// first use.
type Authenticator struct {
	// Client makes the authenticate calls. Required: Handler panics
	// without it.
	Client *Client
	// CacheTTL is how long a valid verdict is cached. 0: 30s; negative:
	// verdicts are not cached (concurrent checks of one token still share
	// one call). Invalid verdicts are cached for CacheTTL or 5s, whichever
	// is shorter.
	CacheTTL time.Duration
	// CacheSize bounds the number of cached verdicts, so that memory stays
	// bounded under a flood of random tokens; the least recently used is
	// dropped first. 0 or negative: 10000.
	CacheSize int
	// MaxConcurrentChecks bounds the authenticate calls in flight, so that
	// a flood of uncached tokens holds neither unbounded memory nor the
	// service: a check that would start one more call fails at once with
	// ErrTooManyChecks (a check that joins the call in flight for its
	// token starts none), or, with StaleIfError and a SharedStore, once it
	// has read the store's record of the token, which may let it through
	// stale. 0 or negative: 64.
	MaxConcurrentChecks int
	// MissBudget bounds the rate of checks that reach the service (a token
	// whose verdict is neither in the cache nor, with a SharedStore, stored
	// by another replica), so that a flood of random tokens cannot spend the
	// management rate limit the rest of the backend shares: beyond it, such
	// a check fails with ErrOverMissBudget, while cached verdicts keep being
	// served. With a SharedStore, a check is refused once the store has no
	// verdict for it: each random token then costs a few store reads and a
	// lease attempt, holding one of MaxConcurrentChecks meanwhile. The zero
	// value sets no budget; setting one is recommended.
	MissBudget MissBudget
	// Timeout bounds one check's call to the service, retries and their
	// waits included (a Retry-After that would pass it is not waited for).
	// 0 or negative: 5s. The request's own context may end the wait
	// sooner; the call then goes on for the other requests waiting for it.
	Timeout time.Duration
	// ErrorHandler writes the answer to a refused request; optional. err is
	// one of the refusals listed on Authenticator. nil: the answers listed
	// there.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)
	// SharedStore, when set, shares verdicts with the other replicas of the
	// service (see package redisstore), behind the in-process cache: one
	// authenticate call per End User token per CacheTTL for the whole
	// fleet. Verdicts are stored under an HMAC of the token and sealed, with
	// keys derived from the Client's secret (Config.ClientSecret or
	// Config.SharedStoreKey), so that whoever can write the store cannot
	// forge one. With a store, an entry of the in-process cache lives at
	// most 5s: that long, at most, another replica may still accept a token
	// that Forget dropped. A failing or slow store (Config.SharedStoreTimeout)
	// never fails a check and is never a verdict: a check waits for it at
	// most SharedStoreTimeout in all, and after a failure the Client leaves
	// it alone for a cool-down (BreakerSharedStore; Forget still tries it).
	// While another replica holds a token's lease and asks the service, a
	// check waits for its verdict a few times what asking the service takes
	// this replica (at most 1s, and half the check's time left, by the
	// request's deadline and Timeout), then asks itself; after leases waited
	// out in a row, it waits on none for a while (BreakerLeaseWaits). Every
	// replica must have the same CacheTTL.
	SharedStore SharedStore
	// StaleIfError, above 0, lets a token through while the service cannot
	// answer, if the service's latest answer on it said it was valid (an
	// End User of role RoleAppUser) at most StaleIfError ago: its EndUser
	// is marked Stale. 0 (the default) or negative: off; the check fails
	// closed, as listed on Authenticator.
	//
	// "Cannot answer" is a transport error, a timeout (Timeout), a 5xx, a
	// 429, the calls held by the breaker (BreakerAuthenticate), or the
	// Authenticator's own bounds (ErrTooManyChecks, ErrOverMissBudget). A
	// 4xx other than 429 (the management token refused, say), a redirect
	// or a page that is not the API's (ErrMisconfigured), a malformed 200
	// and a verdict, valid or invalid, are answers: never a reason to let
	// a token through stale.
	//
	// The grace counts from the service's last confirmation, not from the
	// cached verdict's expiry as RFC 5861's stale-if-error does, and a
	// stale pass never extends it: a StaleIfError no longer than CacheTTL
	// lets nothing through (logged once). An invalid answer ends it, and
	// so does Forget; a token the service never confirmed (within
	// StaleIfError) is refused as without it. With a SharedStore the grace
	// is the fleet's: the store keeps the service's latest answer on each
	// token, and when it was given, for as long as a grace could last; a
	// replica lets a token through stale on the store's record (which an
	// invalid answer or Forget on any replica replaced), read within the
	// last 5s (a check reads the store once: the record its call read as
	// it started serves its own fallback, however late the call failed);
	// when the store cannot answer either, the check fails closed. Every
	// replica must have the same StaleIfError.
	//
	// The last answers are kept with the cached verdicts, within
	// CacheSize. docs/outages.md sizes the store's part.
	StaleIfError time.Duration

	once         sync.Once
	timeout      time.Duration
	shared       *sharedVerdicts // nil without a SharedStore
	verdictCache                 // embedded: tests read its lock and contents as the Authenticator's
}

// MissBudget is a rate of checks that may reach the service: PerSecond
// on average, with bursts of up to Burst (at least 1). The zero value sets
// no budget.
type MissBudget struct {
	PerSecond float64
	Burst     int
}

// EndUser is the End User a request was let through for.
type EndUser struct {
	ID   string
	Role Role
	// Stale is set when the token was let through under
	// Authenticator.StaleIfError: the service could not confirm it just
	// now, but did within StaleIfError. It is false on every other pass,
	// so that EndUser values compare as they always did. A route that must
	// not serve a token the service may have revoked since refuses a
	// Stale End User (see docs/outages.md).
	Stale bool
}

func (a *Authenticator) init() {
	a.timeout = orDefault(a.Timeout, defaultAuthTimeout)
	a.verdictCache.init(a, a.SharedStore != nil)
	if a.SharedStore != nil && a.Client != nil && a.Client.seal != nil {
		a.shared = &sharedVerdicts{store: a.Client.stores.Share(a.SharedStore, a.Client.seal), cache: &a.verdictCache,
			timeout: a.timeout, logger: a.Client.logger}
	}
	if a.Client != nil && a.grace > 0 && a.grace <= a.validTTL {
		a.Client.logger.LogAttrs(context.Background(), slog.LevelWarn, "management: Authenticator.StaleIfError is not longer than CacheTTL, so it lets no token through: its grace counts from the service's last confirmation, and the verdict is cached that long anyway",
			slog.Duration("stale_if_error", a.grace), slog.Duration("cache_ttl", a.validTTL))
	}
}

// String describes a by its settings, the defaults applied, and its
// Client's base URL: never a credential, and nothing a check in flight
// writes.
func (a *Authenticator) String() string {
	client := "nil"
	if a.Client != nil {
		client = a.Client.String()
	}
	ttl := "off"
	if a.CacheTTL >= 0 {
		ttl = orDefault(a.CacheTTL, defaultAuthCacheTTL).String()
	}
	budget := "none"
	if a.MissBudget.PerSecond > 0 {
		budget = fmt.Sprintf("{PerSecond:%g, Burst:%d}", a.MissBudget.PerSecond, max(a.MissBudget.Burst, 1))
	}
	stale := "" // said only when set, as it is off by default
	if a.StaleIfError > 0 {
		stale = ", StaleIfError:" + a.StaleIfError.String()
	}
	return fmt.Sprintf("management.Authenticator{Client:%s, CacheTTL:%s, CacheSize:%d, MaxConcurrentChecks:%d, MissBudget:%s, Timeout:%v%s, ErrorHandler:%t, SharedStore:%t}",
		client, ttl, orDefault(a.CacheSize, defaultAuthCacheSize), orDefault(a.MaxConcurrentChecks, defaultMaxConcurrentChecks),
		budget, orDefault(a.Timeout, defaultAuthTimeout), stale, a.ErrorHandler != nil, a.SharedStore != nil)
}

// GoString is String, so that %#v describes a the same way.
func (a *Authenticator) GoString() string { return a.String() }

// Format writes String whatever the verb (quoted for %q): no verb prints
// a's fields one by one, which would read the cache while checks write it.
func (a *Authenticator) Format(f fmt.State, verb rune) { formatRedacted(f, verb, a.String()) }

// LogValue describes a to log/slog as String does.
func (a *Authenticator) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 8)
	if a.Client != nil {
		attrs = append(attrs, slog.Any("client", a.Client))
	}
	if a.CacheTTL < 0 {
		attrs = append(attrs, slog.String("cache_ttl", "off"))
	} else {
		attrs = append(attrs, slog.Duration("cache_ttl", orDefault(a.CacheTTL, defaultAuthCacheTTL)))
	}
	attrs = append(attrs, slog.Int("cache_size", orDefault(a.CacheSize, defaultAuthCacheSize)),
		slog.Int("max_concurrent_checks", orDefault(a.MaxConcurrentChecks, defaultMaxConcurrentChecks)))
	if a.MissBudget.PerSecond > 0 {
		attrs = append(attrs, slog.Group("miss_budget", slog.Float64("per_second", a.MissBudget.PerSecond), slog.Int("burst", max(a.MissBudget.Burst, 1))))
	}
	attrs = append(attrs, slog.Duration("timeout", orDefault(a.Timeout, defaultAuthTimeout)))
	if a.StaleIfError > 0 {
		attrs = append(attrs, slog.Duration("stale_if_error", a.StaleIfError))
	}
	return slog.GroupValue(append(attrs, slog.Bool("error_handler", a.ErrorHandler != nil), slog.Bool("shared_store", a.SharedStore != nil))...)
}

// errNoClient is Check's answer when Authenticator.Client is not set.
var errNoClient = errorf("%w: Authenticator.Client is nil; use NewClient", ErrInvalidArgument)

// checkClient refuses an Authenticator that cannot work, rather than
// answering 503 to every request: one without a Client, with a Client that
// NewClient did not make (it has no credentials and no logger), or with a
// SharedStore but no key to seal verdicts.
func (a *Authenticator) checkClient() error {
	switch {
	case a.Client == nil:
		return errNoClient
	case a.Client.tokens == nil:
		return errorf("%w: Authenticator.Client was not made by NewClient; use NewClient", ErrInvalidArgument)
	case a.SharedStore != nil && a.Client.seal == nil:
		return errorf("%w: Authenticator.SharedStore needs a key to seal verdicts: set Config.SharedStoreKey of its Client (which has no client secret)", ErrInvalidArgument)
	}
	return nil
}

// Check reports who the End User of r is: the request's Authorization
// header is checked with the service (or the cache). It returns the End User
// when the token is valid and of role RoleAppUser; otherwise one of the
// refusals listed on Authenticator, or an error matching
// ErrInvalidArgument, naming Authenticator.Client, when it is not set. r's
// context bounds the wait; a request whose context has ended starts no
// call. Check does not call ErrorHandler. It is CheckAuthorization of r's
// Authorization header, without the context.
func (a *Authenticator) Check(r *http.Request) (*EndUser, error) {
	// The key as net/http and Header.Set store it: indexing skips the
	// canonicalization Header.Values does on every check.
	c, err := a.check(r.Context(), r.Header["Authorization"])
	if err != nil {
		return nil, err
	}
	u := c.user // only the End User escapes: Check allocates no more than that
	return &u, nil
}

// CheckAuthorization is Check for a transport other than net/http (see
// package grpcauth): values are the Authorization values a request
// carries, as received (an http.Header's, gRPC's "authorization"
// metadata). Exactly one is accepted: none or a blank one is
// ErrMissingToken; several, or one that is not valid UTF-8 or not
// "<type> <token>", is an *InvalidTokenError, without a call; the others
// are the refusals listed on Authenticator, as Check returns them. ctx
// bounds the wait, as a request's context does for Check.
//
// When the token is let through, the returned context is ctx carrying the
// End User, for EndUserFromContext, and the check, for Recheck; the End
// User returned is the one it carries. Otherwise it returns ctx as given.
func (a *Authenticator) CheckAuthorization(ctx context.Context, values []string) (context.Context, *EndUser, error) {
	c, err := a.check(ctx, values)
	if err != nil {
		return ctx, nil, err
	}
	p := &c
	return context.WithValue(ctx, endUserKey{}, p), &p.user, nil
}

// Recheck reports whether the End User token that CheckAuthorization let
// through for ctx (the context it returned, or one derived from it) is
// still let through, for a request that lasts, such as a stream: nil while
// the verdict cached then holds, read under the key computed then (no digest
// of the token, no allocation, no report to the Observer); once that verdict
// has expired (CacheTTL) or been dropped (Forget), the token is checked
// again, as CheckAuthorization would, and the error is one of the refusals
// listed on Authenticator. Recheck refuses an Authenticator that Check
// would refuse first, then a context that carries no such check, with
// ErrMissingToken (there is no token to check again), doing nothing else:
// Recheck(context.Background()) tells whether a is usable, as package
// grpcauth asks when it builds an interceptor.
func (a *Authenticator) Recheck(ctx context.Context) error {
	if err := a.checkClient(); err != nil {
		return err
	}
	c, ok := ctx.Value(endUserKey{}).(*checked)
	if !ok || c == nil {
		return ErrMissingToken
	}
	a.once.Do(a.init)
	v, outcome, err := a.verdict(ctx, c.key, c.header)
	if outcome != AuthHit {
		a.observeCheck(ctx, outcome) // a check like any other, not a read of the cache
	}
	if err != nil {
		return err
	}
	return v.err
}

// checked is a check that let a token through: what CheckAuthorization's
// context carries.
type checked struct {
	user   EndUser
	key    verdictKey // the verdict's, for Recheck
	header string     // the Authorization value, for Recheck's call
}

// check has the verdict on values, the Authorization values of a request:
// the checks of Check, CheckAuthorization and Handler.
func (a *Authenticator) check(ctx context.Context, values []string) (checked, error) {
	if err := a.checkClient(); err != nil {
		return checked{}, err
	}
	a.once.Do(a.init)
	outcome := AuthRefused
	defer func() { a.observeCheck(ctx, outcome) }()
	if len(values) > 1 {
		// The service would judge one of them and a proxy or handler may
		// read another: no verdict can be trusted for the request.
		return checked{}, &InvalidTokenError{Response: relayable(nil)}
	}
	if len(values) == 0 || strings.TrimSpace(values[0]) == "" {
		return checked{}, ErrMissingToken
	}
	header := values[0]
	if !utf8.ValidString(header) || credentialShape(header) != "" {
		// No token of the service looks like this; Authenticate would
		// refuse to send it: an invalid token, not an outage.
		return checked{}, &InvalidTokenError{Response: relayable(nil)}
	}
	key := headerDigest(header)
	v, outcome, err := a.verdict(ctx, key, header)
	switch {
	case err != nil:
		return checked{}, err
	case v.err != nil:
		return checked{}, v.err
	}
	return checked{user: v.user, key: key, header: header}, nil
}

// verdict has the verdict on header, whose key is key: the cached one, or
// that of the call in flight for it, joined or started. It is the one place
// that decides a verdict; outcome is what the Observer is told.
func (a *Authenticator) verdict(ctx context.Context, key verdictKey, header string) (v authVerdict, outcome AuthOutcome, err error) {
	// Marked, so that a check joining another's call to the service is
	// reported to the Observer (FlightJoined), as an operation joining a
	// token fetch is; only a check that waits for a call needs the mark,
	// so that a hit allocates none.
	var marked context.Context
	gen := a.verdictCache.generation() // before the call reads the store (see storeRecord)
	start := func(settle func(context.Context, authVerdict, error) func(), release func(), probe bool) *flight[authVerdict] {
		marked = markOperation(ctx, a.observer())
		return a.start(marked, header, settle, release, probe)
	}
	// With a store, judge spends the budget, once the store has no verdict.
	v, call, err := a.verdictCache.lookup(ctx, key, time.Now(), a.shared == nil, start)
	switch {
	case err != nil:
		return a.unanswered(ctx, key, header, AuthRefused, err, nil)
	case call == nil:
		return v, AuthHit, nil
	case marked == nil: // joined a call in flight
		marked = markOperation(ctx, a.observer())
	}
	v, err = call.wait(marked)
	switch {
	case err != nil && err == ctx.Err():
		return authVerdict{}, AuthMiss, errorf("waiting for the End User token check: %w", err)
	case err != nil:
		// The call's failure carries the store's record of the token, as
		// its flight read it (see judge): the check's one read of the store.
		return a.unanswered(ctx, key, header, AuthMiss, err, &storeRecord{v: v, found: !v.expires.IsZero(), gen: gen})
	}
	return v, AuthMiss, nil
}

// storeRecord is what a check's call read of the token in the shared
// store, for the check's fallback: v, the record, when found is set, and
// the Forgets done before the check waited for the call (see
// verdictCache.adopt).
type storeRecord struct {
	v     authVerdict
	found bool
	gen   uint64
}

// start starts the call that judges header. The call runs hosted code (the
// Client's RoundTripper and TokenSource, the store, the hooks): the flight
// contains its panics and hangs; its failures are
// ErrAuthenticationUnavailable, and a panic's value is redacted of the End
// User's credential and the Client's.
func (a *Authenticator) start(ctx context.Context, header string, settle func(context.Context, authVerdict, error) func(), release func(), probe bool) *flight[authVerdict] {
	host := flightHost{what: "End User token check", logger: a.Client.logger, sentinel: ErrAuthenticationUnavailable,
		redactor: func() *redactor { return newRedactor(append(a.Client.knownCredentials(), authForms(header)...)...) }}
	return startFlight(fleet.KeepDeadline(ctx), host, a.timeout,
		func(ctx context.Context) (authVerdict, error) {
			ctx = withCheckRetries(ctx, a.breaker, probe)
			if a.shared != nil {
				ctx = fleet.WithBudget(ctx, a.Client.stores.Timeout, nil)
			}
			a.observeCalls(ctx, 1)
			defer a.observeCalls(ctx, -1)
			return a.judge(ctx, header)
		}, settle, release)
}

// judge has the verdict on header: from the shared store when a replica
// stored one, else from the service, and then stored. With a store, the
// replica that holds the token's lease asks the service; the others wait
// for its verdict (see sharedVerdicts.await).
//
// When it has no verdict, the verdict it returns beside its error is the
// store's record of the token as it read it (expired, and zero when there
// was none): what the check may still let the token through stale on,
// without reading the store again (see Authenticator.unanswered).
func (a *Authenticator) judge(ctx context.Context, header string) (authVerdict, error) {
	v, ok, turn := a.shared.await(ctx, header)
	if ok {
		return v, nil
	}
	record := turn.record
	if a.shared != nil && !a.verdictCache.spend() {
		a.shared.judgeWait(ctx, turn)
		return record, ErrOverMissBudget
	}
	if checkRetries(ctx).held() {
		// The breaker opened while this call read the store or waited on
		// another replica's lease: only its probe calls the service now.
		a.shared.judgeWait(ctx, turn)
		return record, errHeld
	}
	start := time.Now()
	auth, err := a.Client.Authenticate(ctx, header)
	a.shared.judgeWait(ctx, turn) // before this replica stores its own verdict
	if err != nil {
		// Authenticate's errors have passed the redactor of the attempt.
		a.Client.logger.LogAttrs(ctx, slog.LevelWarn, "management: End User token check failed: no verdict from the service",
			slog.String("error", err.Error()))
		return record, errorf("%w: %w", ErrAuthenticationUnavailable, err)
	}
	v = a.verdictCache.verdict(auth, header, time.Now())
	v.asked = true
	a.shared.put(ctx, turn, auth, v)
	a.shared.produced(time.Since(start))
	return v, nil
}

// Forget drops the cached verdict of the Authorization header value
// authorization, as on sign-out: once the service has revoked the token,
// the next check asks the service again instead of accepting the token for
// the rest of CacheTTL. An authorization scheme is case-insensitive (RFC
// 9110, 11.1): Forget drops the verdicts of every value whose scheme
// differs from authorization's in ASCII case only (not Unicode's) and
// whose credential is the same, here, on open streams (see Recheck) and
// in the shared store, so that "bearer T" does not outlive the sign-out
// of "Bearer T". A check in flight for it when Forget runs still
// answers the requests already waiting, but its verdict is not cached, and
// later checks make a call of their own. With a SharedStore, the fleet
// forgets it too (ctx bounds that): Forget gives the token a new epoch in
// the store, under which no verdict is stored yet, so that no replica reads
// a verdict stored before, even one a check in flight elsewhere writes
// after Forget; another replica may still accept the token from its
// in-process cache for at most 5s. Nor is the token let through stale
// (StaleIfError) any more, here or, past those 5s, on any replica. Forget
// fails only for
// a blank authorization or an Authenticator that Check would refuse (no
// Client made by NewClient); a failing store is logged, not returned.
func (a *Authenticator) Forget(ctx context.Context, authorization string) error {
	if err := a.checkClient(); err != nil {
		return err // as Check and Handler refuse it: a sign-out must not seem done
	}
	if strings.TrimSpace(authorization) == "" {
		return errorf("%w: authorization is empty", ErrInvalidArgument)
	}
	a.once.Do(a.init)
	a.verdictCache.forget(headerDigest(authorization))
	if err := a.shared.drop(ctx, authorization); err != nil {
		a.Client.logger.LogAttrs(ctx, slog.LevelError, "management: Forget could not give the token a new epoch in the shared store; other replicas may accept it until their stored verdict expires",
			slog.Duration("cache_ttl", a.verdictCache.validTTL), slog.String("error", escape(err.Error())))
	}
	return nil
}

// Handler returns a handler that runs next only for requests that Check lets
// through, with the End User in the request's context (see
// EndUserFromContext). Other requests are answered by ErrorHandler, or as
// listed on Authenticator.
//
// Handler panics when a.Client is nil, as net/http's ServeMux panics when
// a handler is registered wrongly: a middleware that could never let a
// request through is a setup error, not a run of 503s.
func (a *Authenticator) Handler(next http.Handler) http.Handler {
	if err := a.checkClient(); err != nil {
		panic("management: Authenticator.Handler: " + errtext.Unprefixed(err).Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, _, err := a.CheckAuthorization(r.Context(), r.Header["Authorization"])
		if err != nil {
			if a.ErrorHandler != nil {
				a.ErrorHandler(w, r, err)
				return
			}
			writeRefusal(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// The default refusals that are not relayed from the service.
var (
	defaultInvalidBody = ClientErrorBody{ErrorCode: http.StatusUnauthorized, Reason: "auth.unauthorized",
		ErrorMessage: "The access token is invalid."}
	missingTokenBody = ClientErrorBody{ErrorCode: http.StatusUnauthorized, Reason: "auth.unauthorized",
		ErrorMessage: "An access token must be provided in the Authorization header."}
	forbiddenRoleBody = ClientErrorBody{ErrorCode: http.StatusForbidden, Reason: "auth.forbidden",
		ErrorMessage: "This access token is not allowed here."}
	unavailableBody = ClientErrorBody{ErrorCode: http.StatusServiceUnavailable, Reason: "auth.unavailable",
		ErrorMessage: "The access token could not be checked; try again later."}
)

// relayable returns the answer to relay for an invalid token: the service's
// own, with a status that is a 4xx, or a default 401 when it sent none.
func relayable(cr *ClientResponse) *ClientResponse {
	out := ClientResponse{HTTPCode: http.StatusUnauthorized, HTTPBody: defaultInvalidBody}
	if cr == nil {
		return &out
	}
	if cr.HTTPCode >= 400 && cr.HTTPCode <= 499 {
		out.HTTPCode = cr.HTTPCode
	}
	if cr.HTTPBody != (ClientErrorBody{}) {
		out.HTTPBody = cr.HTTPBody
	}
	return &out
}

// writeRefusal is the default ErrorHandler: the answers of the table on
// Authenticator.
func writeRefusal(w http.ResponseWriter, err error) {
	var invalid *InvalidTokenError
	var held *AuthenticationUnavailableError
	switch {
	case errors.Is(err, ErrMissingToken):
		writeClientError(w, http.StatusUnauthorized, missingTokenBody)
	case errors.As(err, &invalid) && invalid.Response != nil:
		writeClientError(w, invalid.Response.HTTPCode, invalid.Response.HTTPBody)
	case errors.Is(err, ErrForbiddenRole):
		writeClientError(w, http.StatusForbidden, forbiddenRoleBody)
	case errors.As(err, &held):
		// The rest of the breaker's cool-down: when the service will be
		// asked again, and a different time on each replica (jittered).
		w.Header().Set("Retry-After", strconv.FormatInt(int64((held.RetryAfter+time.Second-1)/time.Second), 10))
		writeClientError(w, http.StatusServiceUnavailable, unavailableBody)
	case errors.Is(err, ErrTooManyChecks), errors.Is(err, ErrOverMissBudget):
		// The bound is local and clears as calls end (within Timeout, most
		// within milliseconds): a client may well try again in a second.
		w.Header().Set("Retry-After", "1")
		writeClientError(w, http.StatusServiceUnavailable, unavailableBody)
	default:
		// No Retry-After: when the service will answer again is not known
		// here (until the breaker opens), and one fixed hint would bring
		// every client back at once.
		writeClientError(w, http.StatusServiceUnavailable, unavailableBody)
	}
}

func writeClientError(w http.ResponseWriter, status int, body ClientErrorBody) {
	b, _ := json.Marshal(body) // a struct of strings and an int always encodes
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// endUserKey is the context key of the *checked that let an End User
// through.
type endUserKey struct{}

// EndUserFromContext returns the End User that Authenticator.Handler let
// through, from the context of the request it passed on, or that
// Authenticator.CheckAuthorization let through, from the context it
// returned (and those derived from it).
func EndUserFromContext(ctx context.Context) (*EndUser, bool) {
	c, ok := ctx.Value(endUserKey{}).(*checked)
	if !ok || c == nil {
		return nil, false
	}
	return &c.user, true
}
