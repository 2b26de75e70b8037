package management

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// Token is a management access token.
//
// Token is safe to print and log: String, GoString, LogValue, MarshalJSON
// and Format (every fmt verb) redact the access token. The one exception is
// fmt's, not Token's: %p on a Token value (not a pointer), which go vet
// reports, prints the fields without calling any method.
type Token struct {
	AccessToken string
	TokenType   string    // as returned ("Bearer"); sent back as "<TokenType> <AccessToken>"
	Expiry      time.Time // derived from expires_in at receipt; zero: never expires
}

// String describes t with the access token redacted.
func (t Token) String() string {
	return fmt.Sprintf("management.Token{TokenType:%q, AccessToken:%s, Expiry:%s}",
		t.TokenType, redact(t.AccessToken), t.Expiry.Format(time.RFC3339))
}

// GoString is String, so that %#v redacts too.
func (t Token) GoString() string { return t.String() }

// LogValue describes t to log/slog with the access token redacted.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("token_type", t.TokenType),
		slog.String("access_token", redact(t.AccessToken)),
		slog.Time("expiry", t.Expiry),
	)
}

// MarshalJSON encodes t with the access token redacted, so that a Token
// nested in a value logged by slog's JSON handler stays safe.
func (t Token) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"token_type":   t.TokenType,
		"access_token": redact(t.AccessToken),
		"expiry":       t.Expiry,
	})
}

// Format writes String whatever the verb (quoted for %q), so that no verb,
// %d or %x included, prints the access token.
func (t Token) Format(f fmt.State, verb rune) { formatRedacted(f, verb, t.String()) }

// check says why t cannot be sent, naming the offending field (accessName
// or typeName), never its value: an empty access token, or a character that
// cannot travel in an Authorization header, or that would split it. An
// empty TokenType is allowed; it is sent as "Bearer".
func (t *Token) check(accessName, typeName string) error {
	if t.AccessToken == "" {
		return fmt.Errorf("%s is empty", accessName)
	}
	if why := headerUnsafe(t.AccessToken); why != "" {
		return fmt.Errorf("%s %s", accessName, why)
	}
	if why := headerUnsafe(t.TokenType); why != "" {
		return fmt.Errorf("%s %s", typeName, why)
	}
	return nil
}

// headerUnsafe says what in s keeps it from being one word of a header
// value: a control character (CR, LF, NUL, DEL, ...) would be refused by
// net/http on every request or end the header, a space would split
// "<type> <token>". It returns "" when s is safe.
func headerUnsafe(s string) string {
	for i := range len(s) {
		switch b := s[i]; {
		case b < 0x20 || b == 0x7f:
			return "holds a control character, which cannot travel in an HTTP header"
		case b == ' ':
			return "holds a space, which would split the Authorization header"
		}
	}
	return ""
}

// headerValueSafe reports whether net/http sends s as a header value: no
// control character but the horizontal tab.
func headerValueSafe(s string) bool {
	for i := range len(s) {
		if b := s[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// header is the Authorization header value that carries t.
func (t *Token) header() string {
	typ := t.TokenType
	if typ == "" {
		typ = "Bearer"
	}
	return typ + " " + t.AccessToken
}

// expired reports whether t can no longer be used at now.
func (t *Token) expired(now time.Time) bool {
	return !t.Expiry.IsZero() && !now.Before(t.Expiry)
}

// TokenSource supplies management tokens. Implementations must be safe for
// concurrent use. Set Config.TokenSource to replace the client-credentials flow.
type TokenSource interface {
	// Token returns a token that is valid now. ctx bounds the wait.
	Token(ctx context.Context) (*Token, error)
}

// checkedSource is a Config.TokenSource as the Client uses it: each token
// it returns is checked before it is sent, so that a source's mistake (no
// token, an empty one, one with a line break) fails the call with an error
// rather than a panic or a request that cannot be sent.
type checkedSource struct {
	src  TokenSource
	last atomic.Pointer[Token] // the token last returned: a panic's value is redacted of it
}

// Token returns the source's token once checked. Its errors pass unchanged.
func (s *checkedSource) Token(ctx context.Context) (*Token, error) {
	tok, err := s.src.Token(ctx)
	switch {
	case err != nil:
		return nil, err
	case tok == nil:
		return nil, errorf("%w: Config.TokenSource returned neither a token nor an error", ErrInvalidArgument)
	}
	if err := tok.check("AccessToken", "TokenType"); err != nil {
		return nil, errorf("%w: Config.TokenSource returned a Token whose %v", ErrInvalidArgument, err)
	}
	if s.last.Load() != tok {
		s.last.Store(tok)
	}
	return tok, nil
}

// knownCredentials are the credentials c holds now: the client
// credentials and the management token it last had (cached or returned by
// its TokenSource). A panic's value is redacted of them.
func (c *Client) knownCredentials() []string {
	creds := append([]string(nil), c.creds...)
	if tok := c.currentToken(); tok != nil {
		creds = append(creds, tok.header(), tok.AccessToken)
	}
	return creds
}

// currentToken is the management token c last had (cached or returned by
// its TokenSource), nil when none.
func (c *Client) currentToken() *Token {
	switch src := c.tokens.(type) {
	case *tokenCache:
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.tok
	case *checkedSource:
		return src.last.Load()
	}
	return nil
}

// Format names the source's type only: the source may hold credentials.
func (s *checkedSource) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, fmt.Sprintf("management.checkedSource{TokenSource:%T}", s.src))
}

// tokenFetchTimeout bounds one token request, which runs detached from the
// callers waiting for it.
const tokenFetchTimeout = 30 * time.Second

// maxTokenLifetime caps expires_in, in seconds.
const maxTokenLifetime = 24 * 60 * 60

// maxBackoffShift caps the doubling of the wait after failed refreshes:
// 2^17 s is more than a day, the longest lifetime kept.
const maxBackoffShift = 17

// tokenCache is the client's TokenSource: it fetches tokens with the
// client-credentials flow, keeps one, and refreshes it lazily before expiry.
// However many goroutines need a token at once, one request is made.
type tokenCache struct {
	client *Client
	auth   string        // "Basic base64(id:secret)"; never printed
	margin time.Duration // Config.RefreshMargin

	mu        sync.Mutex
	tok       *Token
	refreshAt time.Time        // when tok is due for refresh
	retryAt   time.Time        // after a failed refresh, the earliest next one while tok is valid
	failures  int              // token requests failed in a row
	warned    bool             // this run of failures has been logged
	inflight  *flight[fetched] // non-nil while a request is under way
	running   int              // flights whose call has not returned, left-behind ones included
	refused   string           // the access token last refused with 401, not to be taken from the shared store again
	shared    *sharedTokens    // nil without Config.SharedStore
	hurry     *fleet.Hurry     // the flight under way's, with a shared store: callers that need a token now hurry its lease wait
}

// fetched is the outcome of a token flight.
type fetched struct {
	tok       *Token
	refreshAt time.Time
}

// maxTokenCalls bounds the token requests whose goroutines are still
// running: one, and a few left behind by a RoundTripper or store that
// ignored its deadline. Beyond it, callers fail at once.
const maxTokenCalls = 4

func newTokenCache(c *Client, id, secret string, margin time.Duration) *tokenCache {
	return &tokenCache{
		client: c,
		auth:   "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret)),
		margin: margin,
	}
}

// Format describes s without its credentials or token, whatever the verb.
func (s *tokenCache) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, "management.tokenCache{Credentials:"+redacted+"}")
}

// Token returns the cached token. Once the token is due for refresh, the
// first call starts one token request; until it completes, callers keep
// getting the current token while it has not expired, so a refresh neither
// delays them nor fails them. When a refresh fails, the current token is
// used until it expires and the next refresh waits (1 s, then 2, 4, ...,
// never past the expiry), so a failing token endpoint is not asked on
// every call. Without a valid token, callers wait for the request, each
// only as long as its own ctx allows; the request runs detached from ctx,
// so a caller that gives up does not fail the others.
func (s *tokenCache) Token(ctx context.Context) (*Token, error) {
	now := time.Now()
	s.mu.Lock()
	cur := s.tok
	valid := cur != nil && !cur.expired(now)
	if valid && (now.Before(s.refreshAt) || now.Before(s.retryAt)) {
		s.mu.Unlock()
		return cur, nil
	}
	f := s.inflight
	if f == nil {
		if s.running >= maxTokenCalls {
			s.mu.Unlock()
			return s.stale(cur, valid)
		}
		refused := s.refused
		var hurry *fleet.Hurry
		if s.shared != nil {
			hurry = &fleet.Hurry{}
		}
		s.running++
		f = startFlight(fleet.KeepDeadline(ctx), s.host(), tokenFetchTimeout,
			func(ctx context.Context) (fetched, error) { return s.fetch(ctx, refused, hurry) },
			s.finish, s.release)
		s.inflight, s.hurry = f, hurry
	}
	hurry := s.hurry
	s.mu.Unlock()
	if valid {
		return cur, nil
	}
	if hurry != nil {
		// This caller needs a token now (a replay after a 401, a token
		// that expired): the flight, which may have started when a token
		// was still valid, waits on another replica's lease no longer than
		// this caller can afford.
		hurry.For(ctx, s.client.stores.Timeout, s.shared.urgent())
	}
	got, err := f.wait(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, errorf("waiting for a token: %w", ctx.Err())
	}
	return got.tok, err
}

// stale is Token's answer while maxTokenCalls requests are still running:
// the current token while it is valid, else an error.
func (s *tokenCache) stale(cur *Token, valid bool) (*Token, error) {
	if valid {
		return cur, nil
	}
	return nil, errorf("%d token requests are still running past their deadline; not starting another", maxTokenCalls)
}

// host describes the token flight: a panic's value is redacted of the
// client credentials.
func (s *tokenCache) host() flightHost {
	return flightHost{what: "management token request", logger: s.client.logger,
		redactor: func() *redactor { return newRedactor(s.client.creds...) }}
}

// release counts a token flight's call as returned.
func (s *tokenCache) release() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
}

// fetch gets the token of the flight under way: from the shared store, when
// there is one (within the flight's budget of store time), else with a
// token request.
func (s *tokenCache) fetch(ctx context.Context, refused string, hurry *fleet.Hurry) (fetched, error) {
	var f fetched
	var err error
	if s.shared != nil {
		ctx = fleet.WithBudget(ctx, s.client.stores.Timeout, hurry)
		f.tok, f.refreshAt, err = s.shared.token(ctx, refused, s.request)
	} else {
		f.tok, f.refreshAt, err = s.request(ctx)
	}
	return f, err
}

// finish records a flight's outcome (a panic or a hang of the hosted code
// is a failure like any other) before the callers waiting for it are
// woken, and returns the log of it, which runs once they are: the Logger
// is hosted code. A run of failed refreshes is logged twice, at its start
// (Warn) and at its end (Info), however long it lasts.
func (s *tokenCache) finish(ctx context.Context, got fetched, err error) (report func()) {
	s.mu.Lock()
	failures := s.failures
	var started, ended bool
	if err == nil {
		ended = s.succeeded(got.tok, got.refreshAt)
	} else {
		started = s.failed(time.Now())
	}
	s.inflight, s.hurry = nil, nil
	s.mu.Unlock()

	log := s.client.logger
	switch {
	case started:
		return func() {
			log.LogAttrs(ctx, slog.LevelWarn, "management: token refresh failed, using the current token until it expires and retrying with backoff",
				slog.String("error", err.Error()))
		}
	case ended:
		return func() {
			log.LogAttrs(ctx, slog.LevelInfo, "management: token refresh succeeded again", slog.Int("failures", failures))
		}
	}
	return nil
}

// request makes a token request and says when its token is due for refresh.
func (s *tokenCache) request(ctx context.Context) (*Token, time.Time, error) {
	tok, lifetime, err := s.client.requestToken(ctx, s.auth)
	if err != nil {
		return nil, time.Time{}, err
	}
	return tok, tok.Expiry.Add(-refreshMargin(s.margin, lifetime)), nil
}

// succeeded stores tok and ends any run of failures; it reports whether
// that run had been logged. s.mu is held.
func (s *tokenCache) succeeded(tok *Token, refreshAt time.Time) (endedLogged bool) {
	endedLogged = s.warned
	s.tok = tok
	s.refreshAt = refreshAt
	s.retryAt, s.failures, s.warned = time.Time{}, 0, false
	return endedLogged
}

// failed counts a failed request. While the current token is valid, it
// sets when the next refresh may start and reports whether this failure
// starts a run to log. Without a valid token there is no wait: the callers
// waiting get the error, and the next call asks again. s.mu is held.
func (s *tokenCache) failed(now time.Time) (startedRun bool) {
	s.failures++
	if s.tok == nil || s.tok.expired(now) {
		return false
	}
	wait := time.Second << min(s.failures-1, maxBackoffShift)
	s.retryAt = now.Add(min(wait, s.tok.Expiry.Sub(now)))
	if s.warned {
		return false
	}
	s.warned = true
	return true
}

// refreshMargin is how long before expiry a token of the given lifetime is
// refreshed: the configured margin (default a tenth of the lifetime), never
// more than half of it, so a short-lived token is not refreshed on every call.
func refreshMargin(configured, lifetime time.Duration) time.Duration {
	m := configured
	switch {
	case m < 0:
		return 0
	case m == 0:
		m = lifetime / 10
	}
	return min(m, lifetime/2)
}

// Invalidate drops stale from the cache, if the cache still holds it, so
// that the next Token call fetches a new one. A token already replaced by a
// concurrent refresh is left alone.
func (s *tokenCache) Invalidate(stale *Token) {
	s.mu.Lock()
	if s.tok == stale {
		s.tok = nil
		s.refused = stale.AccessToken
	}
	s.mu.Unlock()
}

// tokenResponse is the token endpoint's AccessTokenResponse. Error is not
// part of it: it catches the OAuth error shape sent with a 200.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Error       string `json:"error"`
}

// Format describes r without its access token, whatever the verb.
func (r tokenResponse) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, fmt.Sprintf("management.tokenResponse{AccessToken:%s, TokenType:%q, ExpiresIn:%d}",
		redact(r.AccessToken), r.TokenType, r.ExpiresIn))
}

// check says why r is not a token the client can use, naming the field at
// fault, never a token.
func (r *tokenResponse) check() error {
	switch {
	case r == nil:
		return errors.New("token response is null")
	case r.Error != "":
		return fmt.Errorf("token response is an error, %q", r.Error)
	case r.ExpiresIn <= 0:
		return errors.New("token response without a positive expires_in")
	}
	tok := Token{AccessToken: r.AccessToken, TokenType: r.TokenType}
	return tok.check("access_token", "token_type")
}

// grantBody is the token request's body; the grant is always client credentials.
const grantBody = `{"grant_type":"client_credentials"}`

// requestToken makes the client-credentials request (RFC 6749 section 4.4,
// with the JSON body the service requires) with the Basic credentials
// basicAuth. It differs from Client.do in three ways: its credentials, its
// error shape (checkTokenResponse) and no replay after a 401. An answer that
// is not a token the client can send is a *DecodeError, so that it is never
// cached. Its error is redacted before anyone sees it, the Observer first.
func (c *Client) requestToken(ctx context.Context, basicAuth string) (tok *Token, lifetime time.Duration, err error) {
	req := c.newRequest(http.MethodPost, "/auth/token", "", []byte(grantBody)).named("/auth/token")
	req.secret = true
	ctx, op := c.startOperation(ctx, req)
	status := 0
	defer func() { c.endOperation(ctx, op, req, status, err) }()
	r := c.redactor(req, nil)
	redact := r.error
	resp, _, err := c.send(ctx, req, basic(basicAuth), ResendNone)
	if err != nil {
		return nil, 0, redact(err)
	}
	status = resp.StatusCode
	if err := checkTokenResponse(req, resp, r); err != nil {
		return nil, 0, redact(err)
	}
	var tr *tokenResponse
	if err := c.decode(req, resp, &tr); err != nil {
		return nil, 0, err // redacted by decode
	}
	received := time.Now()
	if err := tr.check(); err != nil {
		return nil, 0, redact(&DecodeError{Method: req.method, Path: req.path, StatusCode: status, Err: err})
	}
	// A lifetime beyond a day is treated as a day: time.Duration would
	// overflow for absurd values, and a refresh a day costs nothing.
	lifetime = time.Duration(min(tr.ExpiresIn, maxTokenLifetime)) * time.Second
	return &Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType, Expiry: received.Add(lifetime)}, lifetime, nil
}

// An authorizer gives each HTTP request its Authorization header: read
// for every attempt, so that a retry carries the token the source holds
// by then.
type authorizer interface {
	// authorize returns the header value and the management token it
	// carries (nil for the client credentials).
	authorize(ctx context.Context) (string, *Token, error)
}

// bearer authorizes a request of the API with the management token. It
// keeps the header of the token it last gave, so that the header is built
// once per token rather than once per request; it compares the token's
// fields, not its pointer, as a TokenSource may change a Token in place.
type bearer struct {
	tokens TokenSource
	last   atomic.Pointer[bearerHeader]
}

// bearerHeader is the Authorization header value of a token.
type bearerHeader struct{ access, typ, value string }

func (b *bearer) authorize(ctx context.Context) (string, *Token, error) {
	tok, err := b.tokens.Token(ctx)
	if err != nil {
		return "", nil, err
	}
	if h := b.last.Load(); h != nil && h.access == tok.AccessToken && h.typ == tok.TokenType {
		return h.value, tok, nil
	}
	h := &bearerHeader{access: tok.AccessToken, typ: tok.TokenType, value: tok.header()}
	b.last.Store(h)
	return h.value, tok, nil
}

// basic authorizes the token request with the client credentials.
type basic string

func (b basic) authorize(context.Context) (string, *Token, error) { return string(b), nil, nil }

// checkTokenResponse maps an answer of the token endpoint that is not a
// 2xx: its OAuth 2.0 shape to a *TokenError, whatever the status (a 503
// "temporarily_unavailable" keeps its code and Retry-After; unreachable
// judges it by its status); a 429 or 5xx without it to an *APIError, an
// outage that the retries could not outlast; a redirect, or
// any other answer without it, to an error matching ErrMisconfigured: the
// request did not reach the token endpoint. The body is never kept: it
// could quote the credentials; a redirect's path is redacted by r. It
// closes the body of an answer it maps.
func checkTokenResponse(req *request, resp *http.Response, r *redactor) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	body, _ := readErrorBody(resp)
	var w wireError
	_ = json.Unmarshal(body, &w)
	header, requestID, retryAfter := answerMeta(resp.Header, time.Now())
	switch status := resp.StatusCode; {
	case isRedirect(status):
		return redirectError(req, resp, r)
	case w.Error != nil && *w.Error != "":
		return &TokenError{StatusCode: status, Code: *w.Error, Description: w.ErrorDescription, Header: header, RequestID: requestID, RetryAfter: retryAfter}
	case status == http.StatusTooManyRequests || status >= 500:
		return &APIError{StatusCode: status, Method: req.method, Path: req.path, BodyLength: int64(len(body)), Header: header, RequestID: requestID, RetryAfter: retryAfter}
	default:
		return &TokenError{StatusCode: status, BodyLength: int64(len(body)), Header: header, RequestID: requestID}
	}
}
