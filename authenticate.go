package management

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Role is the role of an authenticated token's owner.
type Role string

// The roles the authenticate endpoint reports.
const (
	// RoleAppUser is the role of an End User.
	RoleAppUser Role = "APPUSER"
	// RoleServiceAccount is reported when a management token was presented
	// instead of an End User token.
	RoleServiceAccount Role = "SERVICE_ACCOUNT"
)

// EndUserAuthentication is the service's verdict on an End User access token.
type EndUserAuthentication struct {
	Valid          bool            `json:"is_token_valid"`
	UserID         string          `json:"user_id"`            // "" when invalid
	Role           Role            `json:"user_role"`          // RoleAppUser, RoleServiceAccount; "" when invalid
	ClientResponse *ClientResponse `json:"to_client_response"` // nil when valid
}

// ClientResponse is the answer the service suggests a backend relays to its
// client when an End User token is invalid.
type ClientResponse struct {
	HTTPCode int             `json:"http_code"`
	HTTPBody ClientErrorBody `json:"http_body"`
}

// ClientErrorBody is the body of a ClientResponse.
type ClientErrorBody struct {
	ErrorCode    int    `json:"error_code"`
	Reason       string `json:"reason"` // lower case: "auth.unauthorized"
	ErrorMessage string `json:"error_message"`
}

// authenticateRequest is the authenticate endpoint's request body.
type authenticateRequest struct {
	AccessToken string `json:"access_token"`
}

// authenticateResponse is the authenticate endpoint's answer as sent, with
// pointers so that a missing is_token_valid can be told from false.
type authenticateResponse struct {
	Valid          *bool           `json:"is_token_valid"`
	UserID         *string         `json:"user_id"`
	Role           *string         `json:"user_role"`
	ClientResponse *ClientResponse `json:"to_client_response"`
}

// Authenticate asks the service whether an End User access token is valid,
// and for which User. accessToken is the End User's credential in its wire
// form "<type> <token>" (for example "Bearer eu-123"), exactly what the End
// User sent in its Authorization header; it is sent unchanged. The request
// itself is authorised by the management token.
//
// An invalid token is not an error: the answer has Valid false and, when the
// service sent one, the ClientResponse to relay. An invalid answer never
// names a User (UserID and Role are ""), and a valid one carries no
// ClientResponse. An answer without is_token_valid, or a valid End User one
// without a user_id, is not trusted: it fails with a *DecodeError. A valid
// RoleServiceAccount answer may have an empty UserID. A blank accessToken,
// or one that is not valid UTF-8 (JSON cannot carry it unchanged), fails with
// ErrInvalidArgument before anything is sent; a 400 or 401 of the service is
// an *APIError. The service's answers may quote the token: an *APIError
// returned here has every occurrence of it (the whole value, and the token
// after its type) replaced by "REDACTED" in its Reason, Message and Body.
func (c *Client) Authenticate(ctx context.Context, accessToken string) (*EndUserAuthentication, error) {
	if strings.TrimSpace(accessToken) == "" {
		return nil, errorf("%w: the End User access token is empty", ErrInvalidArgument)
	}
	if !utf8.ValidString(accessToken) {
		// encoding/json would replace the bad bytes: another token would be checked.
		return nil, errorf("%w: the End User access token is not valid UTF-8", ErrInvalidArgument)
	}
	body, err := json.Marshal(authenticateRequest{AccessToken: accessToken})
	if err != nil {
		return nil, errorf("%w: the End User access token cannot be encoded", ErrInvalidArgument)
	}
	req := c.newRequest(http.MethodPost, "/authenticate", "", body).named("/authenticate")
	req.secret = true
	var ar authenticateResponse
	status, err := c.do(ctx, req, &ar)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			newTokenRedactor(accessToken).apiError(ae)
		}
		return nil, err
	}
	return ar.verdict(req, status)
}

// tokenRedactor removes an End User credential from texts the service sent.
type tokenRedactor struct {
	forms []string // the credential as it may appear, longest first
}

// newTokenRedactor returns the redactor of the Authorization header value
// header: the value as sent and trimmed, the token after its type, and the
// JSON-escaped spellings of each (a body may quote them escaped).
func newTokenRedactor(header string) tokenRedactor {
	trimmed := strings.TrimSpace(header)
	_, token, ok := strings.Cut(trimmed, " ")
	if !ok {
		token = trimmed
	}
	var forms []string
	for _, f := range []string{header, trimmed, strings.TrimSpace(token)} {
		esc, _ := json.Marshal(f) // a string always encodes
		quoted := string(esc[1 : len(esc)-1])
		forms = append(forms, f, quoted, strings.ReplaceAll(quoted, "/", `\/`))
	}
	forms = slices.DeleteFunc(forms, func(f string) bool { return f == "" })
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return tokenRedactor{forms: slices.Compact(forms)}
}

// string returns s without the credential.
func (r tokenRedactor) string(s string) string {
	for _, f := range r.forms {
		s = strings.ReplaceAll(s, f, redacted)
	}
	return s
}

// apiError redacts e's texts in place. A Body cut at maxErrorBody may end
// with the start of the credential: that is redacted too.
func (r tokenRedactor) apiError(e *APIError) {
	e.Reason, e.Message = r.string(e.Reason), r.string(e.Message)
	if e.Body == nil {
		return
	}
	body := r.string(string(e.Body))
	if len(e.Body) >= maxErrorBody {
		body = r.cutTail(body)
	}
	e.Body = []byte(body)
}

// cutTail redacts the end of s when it is the start of the credential, as
// long a start as any form has there.
func (r tokenRedactor) cutTail(s string) string {
	cut := 0
	for _, f := range r.forms {
		for n := min(len(f)-1, len(s)); n > cut; n-- {
			if f[n-1] == s[len(s)-1] && strings.HasSuffix(s, f[:n]) {
				cut = n
				break
			}
		}
	}
	if cut == 0 {
		return s
	}
	return s[:len(s)-cut] + redacted
}

// verdict checks the answer's shape and normalises it.
func (ar *authenticateResponse) verdict(req *request, status int) (*EndUserAuthentication, error) {
	bad := func(msg string) error {
		return &DecodeError{Method: req.method, Path: req.path, StatusCode: status, Err: errors.New(msg)}
	}
	if ar.Valid == nil {
		return nil, bad("authenticate response without is_token_valid")
	}
	if !*ar.Valid {
		return &EndUserAuthentication{ClientResponse: ar.ClientResponse}, nil
	}
	auth := &EndUserAuthentication{Valid: true}
	if ar.Role != nil {
		auth.Role = Role(*ar.Role)
	}
	if ar.UserID != nil {
		auth.UserID = *ar.UserID
	}
	// An End User (or an answer without a role) must be named; a
	// SERVICE_ACCOUNT answer may carry no user_id, and is refused by role.
	if auth.UserID == "" && (auth.Role == "" || auth.Role == RoleAppUser) {
		return nil, bad("valid authenticate response without user_id")
	}
	return auth, nil
}

// Defaults of the zero values of Authenticator.
const (
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
// Requests are refused with JSON bodies shaped like the service's
// ({"error_code", "reason", "error_message"}):
//   - no or a blank Authorization header: 401, without calling the service
//     (ErrMissingToken);
//   - an invalid token: the service's to_client_response, its http_code as
//     the status (401 unless it is a 4xx) and its http_body as the body
//     (*InvalidTokenError); likewise, without a call, a header that is not
//     valid UTF-8, and a request with more than one Authorization header
//     (which one the service would judge is ambiguous);
//   - a valid token of another role, such as a management token
//     (RoleServiceAccount): 403 (ErrForbiddenRole);
//   - no verdict (the service unreachable, failing after the client's
//     retries or past Timeout, refusing the management token, or answering
//     in an unknown shape): 503, failing closed, with the cause logged
//     through the Client's logger (ErrAuthenticationUnavailable); also 503
//     when the request's context ends while waiting;
//   - a token that would need a call while MaxConcurrentChecks calls are in
//     flight: 503 with Retry-After: 1, at once and without a call
//     (ErrTooManyChecks, which also matches ErrAuthenticationUnavailable).
//
// Verdicts are cached in memory, keyed by a SHA-256 digest of the header
// value (raw tokens are not kept): valid ones for CacheTTL, invalid ones for
// at most 5 s, failures never. Concurrent checks of one token make one call.
// Memory stays bounded under any stream of tokens: at most CacheSize
// verdicts and MaxConcurrentChecks (64) calls in flight, each ended after
// Timeout (5 s). Cached verdicts are served whatever is in flight. A
// revoked token is accepted until its entry expires, unless Forget drops it.
//
// Set the fields before the first use and do not change them afterwards; an
// Authenticator is then safe for concurrent use. It must not be copied after
// first use.
type Authenticator struct {
	// Client makes the authenticate calls. Required: Handler panics
	// without it.
	Client *Client
	// CacheTTL is how long a valid verdict is cached. 0: 30 s; negative:
	// verdicts are not cached (concurrent checks of one token still share
	// one call). Invalid verdicts are cached for CacheTTL or 5 s, whichever
	// is shorter.
	CacheTTL time.Duration
	// CacheSize bounds the number of cached verdicts, so that memory stays
	// bounded under a flood of random tokens; the least recently used is
	// dropped first. 0 or negative: 10 000.
	CacheSize int
	// MaxConcurrentChecks bounds the authenticate calls in flight, so that
	// a flood of uncached tokens holds neither unbounded memory nor the
	// service: a check that would start one more call fails at once with
	// ErrTooManyChecks (a check that joins the call in flight for its
	// token starts none). 0 or negative: 64.
	MaxConcurrentChecks int
	// MissBudget bounds the rate of checks that reach the service (a token
	// whose verdict is neither in the cache nor, with a SharedStore, stored
	// by another replica), so that a flood of random tokens cannot spend the
	// management rate limit the rest of the backend shares: beyond it, such
	// a check fails with ErrOverMissBudget (503 with Retry-After), while
	// cached verdicts keep being served. With a SharedStore, a check is
	// refused once the store has no verdict for it: each random token then
	// costs a few store reads and a lease attempt, holding one of
	// MaxConcurrentChecks meanwhile. The zero value sets no budget; setting
	// one is recommended.
	MissBudget MissBudget
	// Timeout bounds one check's call to the service, retries and their
	// waits included (a Retry-After that would pass it is not waited for).
	// 0 or negative: 5 s. The request's own context may end the wait
	// sooner; the call then goes on for the other requests waiting for it.
	Timeout time.Duration
	// ErrorHandler writes the answer to a refused request; optional. err
	// tells the cases apart: errors.Is(err, ErrMissingToken),
	// errors.As(err, new(*InvalidTokenError)), errors.Is(err,
	// ErrForbiddenRole), errors.Is(err, ErrTooManyChecks); anything else
	// (ErrAuthenticationUnavailable, the request's context error) means no
	// verdict was had. nil: the answers described on Authenticator.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)
	// SharedStore, when set, shares verdicts with the other replicas of the
	// service (see package redisstore), behind the in-process cache: one
	// authenticate call per End User token per CacheTTL for the whole
	// fleet. Verdicts are stored under an HMAC of the token and sealed, with
	// keys derived from the Client's secret (Config.ClientSecret or
	// Config.SharedStoreKey), so that whoever can write the store cannot
	// forge one. With a store, an entry of the in-process cache lives at
	// most 5 s: that long, at most, another replica may still accept a
	// token that Forget dropped. A failing or slow store (Config.
	// SharedStoreTimeout) never fails a check and is never a verdict. While
	// another replica holds a token's lease and asks the service, a check
	// waits for its verdict at most 1 s (half the request's time left, if
	// less), then asks itself. Every replica must have the same CacheTTL.
	SharedStore SharedStore

	once       sync.Once
	failing    atomic.Bool // the shared store is failing (logged once a streak)
	validTTL   time.Duration
	invalidTTL time.Duration
	timeout    time.Duration
	maxCalls   int

	mu       sync.Mutex
	cache    *simplelru.LRU[[sha256.Size]byte, authVerdict] // nil when caching is off
	inflight map[[sha256.Size]byte]*flight[authVerdict]     // the call whose verdict a token's checks take
	misses   *rate.Limiter                                  // nil without a MissBudget
	calls    int                                            // calls running, forgotten ones included; <= maxCalls
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
}

// authVerdict is the outcome of one authenticate call, as cached.
type authVerdict struct {
	user    EndUser // when err is nil
	err     error   // a refusal: *InvalidTokenError or ErrForbiddenRole
	expires time.Time
}

// result returns the verdict as Check does; each caller gets its own EndUser.
func (v *authVerdict) result() (*EndUser, error) {
	if v.err != nil {
		return nil, v.err
	}
	u := v.user
	return &u, nil
}

func (a *Authenticator) init() {
	a.validTTL = cmp.Or(a.CacheTTL, defaultAuthCacheTTL)
	a.invalidTTL = min(a.validTTL, maxInvalidTTL)
	a.timeout = orDefault(a.Timeout, defaultAuthTimeout)
	a.maxCalls = orDefault(a.MaxConcurrentChecks, defaultMaxConcurrentChecks)
	if a.MissBudget.PerSecond > 0 {
		a.misses = rate.NewLimiter(rate.Limit(a.MissBudget.PerSecond), max(a.MissBudget.Burst, 1))
	}
	a.inflight = make(map[[sha256.Size]byte]*flight[authVerdict])
	if a.validTTL < 0 {
		return
	}
	// simplelru rather than expirable: expirable.LRU starts a cleanup
	// goroutine that cannot be stopped, and one TTL would not fit two.
	a.cache, _ = simplelru.NewLRU[[sha256.Size]byte, authVerdict](orDefault(a.CacheSize, defaultAuthCacheSize), nil) // fails only for size <= 0
}

// orDefault returns v when it is positive, def otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// errNoClient is Check's answer when Authenticator.Client is not set.
var errNoClient = errorf("%w: Authenticator.Client is nil", ErrInvalidArgument)

// Check reports who the End User of r is: the request's Authorization
// header is checked with the service (or the cache). It returns the End User
// when the token is valid and of role RoleAppUser; otherwise an error as
// described on Authenticator.ErrorHandler, or one matching
// ErrInvalidArgument, naming Authenticator.Client, when it is not set. r's
// context bounds the wait; a request whose context has ended starts no
// call. Check does not call ErrorHandler.
func (a *Authenticator) Check(r *http.Request) (*EndUser, error) {
	a.once.Do(a.init)
	if err := a.checkSetup(); err != nil {
		return nil, err
	}
	outcome := AuthRefused
	defer func() { a.observeCheck(r.Context(), outcome) }()
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		// The service would judge one of them and a proxy or handler may
		// read another: no verdict can be trusted for the request.
		return nil, &InvalidTokenError{Response: relayable(nil)}
	}
	if len(values) == 0 || strings.TrimSpace(values[0]) == "" {
		return nil, ErrMissingToken
	}
	header := values[0]
	if !utf8.ValidString(header) {
		// No token of the service looks like this; it cannot be sent as is.
		return nil, &InvalidTokenError{Response: relayable(nil)}
	}
	key := tokenKey(header)
	now := time.Now()
	a.mu.Lock()
	if v, ok := a.cached(key, now); ok {
		a.mu.Unlock()
		outcome = AuthHit
		return v.result()
	}
	call, err := a.join(r.Context(), key, header)
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	outcome = AuthMiss
	return a.wait(r.Context(), call)
}

// join returns the call in flight for key, or starts one within the bound
// on calls. a.mu must be held.
func (a *Authenticator) join(ctx context.Context, key [sha256.Size]byte, header string) (*flight[authVerdict], error) {
	if call := a.inflight[key]; call != nil {
		return call, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, errorf("waiting for the End User token check: %w", err)
	}
	if a.calls >= a.maxCalls {
		return nil, ErrTooManyChecks
	}
	if a.SharedStore == nil && !a.withinBudget() { // with a store, judge spends it, once the store has no verdict
		return nil, ErrOverMissBudget
	}
	var call *flight[authVerdict]
	call = startFlight(keepDeadline(ctx), a.timeout, func(ctx context.Context) (authVerdict, error) {
		a.observeCalls(ctx, 1)
		defer a.observeCalls(ctx, -1)
		v, err := a.judge(ctx, header)
		a.mu.Lock()
		a.calls--
		current := a.inflight[key] == call // else Forget dropped it: its verdict is not cached
		if current {
			delete(a.inflight, key)
			if err == nil && a.cache != nil {
				a.cache.Add(key, a.firstLevel(v))
			}
		}
		a.mu.Unlock()
		return v, err
	})
	a.inflight[key] = call
	a.calls++
	return call, nil
}

// tokenKey is the cache key of an Authorization header value: its SHA-256
// digest, so that raw tokens are not kept. (The conversion to []byte does
// not allocate: sha256.Sum256 does not keep it.)
func tokenKey(header string) [sha256.Size]byte {
	return sha256.Sum256([]byte(header))
}

// cached returns the unexpired verdict for key. a.mu must be held.
func (a *Authenticator) cached(key [sha256.Size]byte, now time.Time) (authVerdict, bool) {
	if a.cache == nil {
		return authVerdict{}, false
	}
	v, ok := a.cache.Get(key)
	if !ok || !now.Before(v.expires) {
		return authVerdict{}, false
	}
	return v, true
}

// wait waits for call as long as ctx allows.
func (a *Authenticator) wait(ctx context.Context, call *flight[authVerdict]) (*EndUser, error) {
	v, err := call.wait(ctx)
	switch {
	case err != nil && err == ctx.Err():
		return nil, errorf("waiting for the End User token check: %w", err)
	case err != nil:
		return nil, err
	}
	return v.result()
}

// Forget drops the cached verdict of the Authorization header value
// authorization, as on sign-out: once the service has revoked the token,
// the next check asks the service again instead of accepting the token for
// the rest of CacheTTL. A check in flight for it when Forget runs still
// answers the requests already waiting, but its verdict is not cached, and
// later checks make a call of their own. With a SharedStore, the fleet
// forgets it too (ctx bounds that): Forget gives the token a new epoch in
// the store, under which no verdict is stored yet, so that no replica reads
// a verdict stored before, even one a check in flight elsewhere writes
// after Forget; another replica may still accept the token from its
// in-process cache for at most 5 s. Forget fails only for a blank
// authorization; a failing store is logged, not returned.
func (a *Authenticator) Forget(ctx context.Context, authorization string) error {
	if strings.TrimSpace(authorization) == "" {
		return errorf("%w: authorization is empty", ErrInvalidArgument)
	}
	a.once.Do(a.init)
	key := tokenKey(authorization)
	a.mu.Lock()
	if a.cache != nil {
		a.cache.Remove(key)
	}
	// The call keeps running (and counting against the bound) but is no
	// longer the one this token's checks join or whose verdict is cached.
	delete(a.inflight, key)
	a.mu.Unlock()
	a.dropShared(ctx, authorization)
	return nil
}

// judge has the verdict on header: from the shared store when a replica
// stored one, else from the service, and then stored. With a store, the
// replica that holds the token's lease asks the service; the others wait
// for its verdict (see awaitShared).
func (a *Authenticator) judge(ctx context.Context, header string) (authVerdict, error) {
	v, key, ok := a.awaitShared(ctx, header)
	if ok {
		return v, nil
	}
	if a.SharedStore != nil && !a.withinBudget() {
		return authVerdict{}, ErrOverMissBudget
	}
	auth, err := a.authenticate(ctx, header)
	if err != nil {
		return authVerdict{}, err
	}
	v = a.verdictFor(auth, header, time.Now())
	a.storeShared(ctx, key, auth, v.expires)
	return v, nil
}

// withinBudget spends one check of MissBudget, if it allows one: only a
// check about to reach the service spends it.
func (a *Authenticator) withinBudget() bool {
	return a.misses == nil || a.misses.Allow()
}

// authenticate asks the service about header, or fails with an error
// matching ErrAuthenticationUnavailable (never cached).
func (a *Authenticator) authenticate(ctx context.Context, header string) (*EndUserAuthentication, error) {
	auth, err := a.Client.Authenticate(ctx, header)
	if err != nil {
		// Authenticate redacts the token from the service's texts; the log
		// record is redacted again so that no path can carry it there.
		a.Client.logger.LogAttrs(ctx, slog.LevelWarn, "management: End User token check failed, refusing with 503",
			slog.String("error", newTokenRedactor(header).string(err.Error())))
		return nil, errorf("%w: %w", ErrAuthenticationUnavailable, err)
	}
	return auth, nil
}

// verdictFor turns the service's answer into a cacheable verdict. The role
// named in a refusal comes from the service, so it is redacted like its
// other texts.
func (a *Authenticator) verdictFor(auth *EndUserAuthentication, header string, now time.Time) authVerdict {
	switch {
	case !auth.Valid:
		return authVerdict{err: &InvalidTokenError{Response: relayable(auth.ClientResponse)}, expires: now.Add(a.invalidTTL)}
	case auth.Role != RoleAppUser:
		role := newTokenRedactor(header).string(string(auth.Role))
		return authVerdict{err: errorf("%w: %q", ErrForbiddenRole, role), expires: now.Add(a.validTTL)}
	}
	return authVerdict{user: EndUser{ID: auth.UserID, Role: auth.Role}, expires: now.Add(a.validTTL)}
}

// relayable returns the answer to relay for an invalid token: the service's
// own, with a status that is a 4xx, or a default 401 when it sent none.
func relayable(cr *ClientResponse) *ClientResponse {
	out := ClientResponse{HTTPCode: http.StatusUnauthorized, HTTPBody: ClientErrorBody{
		ErrorCode: http.StatusUnauthorized, Reason: "auth.unauthorized", ErrorMessage: "The access token is invalid.",
	}}
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

// Handler returns a handler that runs next only for requests that Check lets
// through, with the End User in the request's context (see
// EndUserFromContext). Other requests are answered by ErrorHandler, or as
// described on Authenticator.
//
// Handler panics when a.Client is nil, as net/http's ServeMux panics when
// a handler is registered wrongly: a middleware that could never let a
// request through is a setup error, not a run of 503s.
func (a *Authenticator) Handler(next http.Handler) http.Handler {
	if err := a.checkSetup(); err != nil {
		panic("management: Authenticator.Handler: " + unprefixed{err}.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := a.Check(r)
		if err != nil {
			if a.ErrorHandler != nil {
				a.ErrorHandler(w, r, err)
				return
			}
			writeRefusal(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endUserKey{}, user)))
	})
}

// The default refusals that are not relayed from the service.
var (
	missingTokenBody = ClientErrorBody{ErrorCode: http.StatusUnauthorized, Reason: "auth.unauthorized",
		ErrorMessage: "An access token must be provided in the Authorization header."}
	forbiddenRoleBody = ClientErrorBody{ErrorCode: http.StatusForbidden, Reason: "auth.forbidden",
		ErrorMessage: "This access token is not allowed here."}
	unavailableBody = ClientErrorBody{ErrorCode: http.StatusServiceUnavailable, Reason: "auth.unavailable",
		ErrorMessage: "The access token could not be checked; try again later."}
)

// writeRefusal is the default ErrorHandler.
func writeRefusal(w http.ResponseWriter, err error) {
	var invalid *InvalidTokenError
	switch {
	case errors.Is(err, ErrMissingToken):
		writeClientError(w, http.StatusUnauthorized, missingTokenBody)
	case errors.As(err, &invalid) && invalid.Response != nil:
		writeClientError(w, invalid.Response.HTTPCode, invalid.Response.HTTPBody)
	case errors.Is(err, ErrForbiddenRole):
		writeClientError(w, http.StatusForbidden, forbiddenRoleBody)
	case errors.Is(err, ErrTooManyChecks), errors.Is(err, ErrOverMissBudget):
		// The bound is local and clears as calls end (within Timeout, most
		// within milliseconds): a client may well try again in a second.
		w.Header().Set("Retry-After", "1")
		writeClientError(w, http.StatusServiceUnavailable, unavailableBody)
	default:
		// No Retry-After: when the service will answer again is not known
		// here, and one fixed hint would bring every client back at once.
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

// endUserKey is the context key of the End User that Handler let through.
type endUserKey struct{}

// EndUserFromContext returns the End User that Authenticator.Handler let
// through, from the context of the request it passed on.
func EndUserFromContext(ctx context.Context) (*EndUser, bool) {
	u, ok := ctx.Value(endUserKey{}).(*EndUser)
	return u, ok && u != nil
}
