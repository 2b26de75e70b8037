package management

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// Client is a client of the management API. It holds the token, refreshed
// as needed, and the connection pool: create one per service and share it.
// A Client is safe for concurrent use by multiple goroutines.
type Client struct {
	// Users lists and reads Users and manages their associated Things.
	Users *UsersService
	// Things lists, reads and updates Things.
	Things *ThingsService

	base        *url.URL // Config.BaseURL, parsed
	port        int      // the port of base, made explicit (443 for https)
	baseURL     string   // scheme://host[:port][/path], no trailing slash
	basePath    string   // the path of baseURL, for checking next_page links
	prefix      string
	tokens      TokenSource
	bearer      bearer                          // gives each request of the API the token tokens holds then
	invalidator interface{ Invalidate(*Token) } // nil when tokens cannot drop a refused token
	httpClient  *http.Client
	logger      *slog.Logger
	observer    *Observer // nil: nothing observed
	maxRetries  int
	waitMin     time.Duration
	waitMax     time.Duration
	unsetMarker unsetMarker
	maxBody     int64
	userAgent   string
	pauses      routePauses // routes the service asked to slow down (see retry.go)
	deprecated  sync.Map    // routeKey → struct{}: routes whose deprecation was logged

	// creds are the client credentials as an answer may echo them: the
	// secret, "id:secret" and the Basic header value; nil with a
	// TokenSource. Every error's texts are redacted of them (redact.go).
	creds []string

	// lastRedactor is the redactor of creds and the token last used (see
	// ownRedactor).
	lastRedactor atomic.Pointer[keptRedactor]

	// seal seals what goes into a shared store; nil without a secret to
	// derive it from (see Config.SharedStoreKey).
	seal   *fleet.Sealer
	stores fleet.Guard // bounds every call to a shared store (see store.go)
}

// NewClient validates cfg and returns a Client. It sends nothing: the first
// token is fetched by the first call that needs one. A refusal, an error
// matching ErrInvalidArgument, names the fields of cfg it refuses, or, for
// a Config from ConfigFromEnv, the environment variables they were read
// from ("MANAGEMENT_BASE_URL uses http:// ...; use https or set
// MANAGEMENT_ALLOW_INSECURE_HTTP=true"), a field the program set since
// excepted.
func NewClient(cfg Config) (*Client, error) {
	base, err := checkBaseURL(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkCredentials(cfg); err != nil {
		return nil, err
	}
	if cfg.RetryWaitMin < 0 || cfg.RetryWaitMax < 0 {
		return nil, errorf("%w: %s and %s must not be negative", ErrInvalidArgument, cfg.named("RetryWaitMin"), cfg.named("RetryWaitMax"))
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, errorf("%w: %s must not be negative", ErrInvalidArgument, cfg.named("MaxResponseBytes"))
	}
	if !headerValueSafe(cfg.UserAgent) {
		// net/http would refuse every request: fail here, not on each call.
		return nil, errorf("%w: %s holds a control character, which an HTTP header cannot carry", ErrInvalidArgument, cfg.named("UserAgent"))
	}
	if cfg.PathPrefix != "" && (!strings.HasPrefix(cfg.PathPrefix, "/") || strings.ContainsAny(cfg.PathPrefix, "?#")) {
		return nil, errorf("%w: %s must be a path starting with /", ErrInvalidArgument, cfg.named("PathPrefix"))
	}
	d := cfg.withDefaults() // what the Client uses: the defaults are written there, once
	c := &Client{
		base:        base,
		baseURL:     strings.TrimSuffix(base.String(), "/"),
		basePath:    strings.TrimSuffix(base.EscapedPath(), "/"),
		prefix:      strings.TrimSuffix(d.PathPrefix, "/"),
		httpClient:  withoutRedirects(cfg.HTTPClient),
		logger:      cfg.Logger,
		observer:    cfg.Observer,
		maxRetries:  d.MaxRetries,
		waitMin:     d.RetryWaitMin,
		waitMax:     d.RetryWaitMax,
		unsetMarker: unsetMarker{d.UnsetMarker, cfg.named("UnsetMarker")},
		maxBody:     d.MaxResponseBytes,
		userAgent:   strings.TrimSpace(cfg.UserAgent + " management-go/" + Version),
	}
	c.port, _ = strconv.Atoi(explicitPort(base))
	if err := c.checkBaseWithoutPrefix(cfg); err != nil {
		return nil, err
	}
	if c.waitMin > c.waitMax {
		return nil, errorf("%w: %s (%v) is longer than %s (%v)", ErrInvalidArgument, cfg.named("RetryWaitMin"), c.waitMin, cfg.named("RetryWaitMax"), c.waitMax)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TokenSource != nil {
		c.tokens = &checkedSource{src: cfg.TokenSource}
		c.invalidator, _ = cfg.TokenSource.(interface{ Invalidate(*Token) })
	} else {
		cache := newTokenCache(c, cfg.ClientID, cfg.ClientSecret, cfg.RefreshMargin)
		c.tokens, c.invalidator = cache, cache
		c.creds = append([]string{cfg.ClientSecret, cfg.ClientID + ":" + cfg.ClientSecret}, authForms(cache.auth)...)
	}
	c.bearer.tokens = c.tokens
	if err := c.setSharedStore(d); err != nil {
		return nil, err
	}
	c.Users = &UsersService{client: c}
	c.Things = &ThingsService{client: c}
	return c, nil
}

// newTransport returns a transport with its own pool, sized for an SDK that
// many goroutines share (net/http keeps only 2 idle connections per host).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// String describes c without its credentials or tokens.
func (c *Client) String() string {
	return fmt.Sprintf("management.Client{BaseURL:%q}", c.baseURL)
}

// GoString is String, so that %#v shows no credentials either.
func (c *Client) GoString() string { return c.String() }

// Format describes c without its credentials or tokens, whatever the verb.
func (c *Client) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// LogValue describes c to log/slog as String does: its base URL.
func (c *Client) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", c.baseURL))
}

// The request path. Every call of the API reads top to bottom, in this file:
//
//	UsersService.Get (users.go)  checks the id (path.go), builds the request: newRequest
//	  or Client.Do (do.go)       checks the method, path (path.go), body and out; builds the
//	                             request of a path it does not know: linkRequest
//	Client.do                    the operation: starts it, ends it (deferred), replays once after a 401
//	Client.send                  the HTTP requests, with their retries: each gets the token
//	                             (auth.go), waits its route's pause and its backoff (retry.go),
//	                             and is an attempt between Observer.AttemptStart and AttemptDone
//	checkResponse                maps a non-2xx answer to an error
//	Client.decode                reads and checks a 2xx body
//
// The token request (requestToken, auth.go) goes through newRequest, send
// and decode too, with the client credentials, its own response check and
// no replay. The HTTPClient below follows no redirect (redirect.go).

// request is one request of the API, built by newRequest or linkRequest.
type request struct {
	method string
	url    string
	path   string // below the prefix, escaped, without the query, redacted: names the request in logs and errors
	body   []byte // JSON; nil for none. A []byte, so that a retry or replay sends it again exactly.
	// secret is set for the requests whose answers can carry credentials
	// (the token endpoint issues tokens; authenticate's answer is about an
	// End User token): no error quotes their bodies.
	secret bool
	// once is set for a request that may not be safe to repeat (a POST or
	// PATCH of Client.Do): it is not sent again once it may have reached
	// the service (see reached). The typed methods' requests are all safe
	// to repeat: they never set it.
	once bool
	// credential is the End User's Authorization value that authenticate
	// checks: redacted from the answer's texts like the SDK's own.
	credential string
	// carried is the management token the answer do returned was got
	// with: the redactor of texts read after do (a verdict's) needs it.
	carried *Token

	// For an Observer: the route template and its parameters' raw values
	// (set with named), and what the attempts counted. A request of
	// Client.Do has no route: the SDK cannot tell its path's names from
	// its values.
	route    string
	values   [maxPathValues]string
	attempts int
	waited   time.Duration

	// answer reads the 2xx body decode reads: held here, as the request
	// is allocated anyway.
	answer limitedBody
}

// maxPathValues is the most parameters a route of the API has.
const maxPathValues = 2

// newRequest builds a request for path (below the prefix, segments
// escaped by pathSegment) with an encoded query ("" for none) and a JSON body.
func (c *Client) newRequest(method, path, query string, body []byte) *request {
	u := c.baseURL + c.prefix + path
	if query != "" {
		u += "?" + query
	}
	return &request{method: method, url: u, path: path, body: body}
}

// linkRequest builds the GET of a next_page link that checkPageLink
// accepted: appended to the base URL as it stands. Its path came from
// outside: the request is named by it as r redacts it.
func (c *Client) linkRequest(link string, r *redactor) *request {
	p, _, _ := strings.Cut(link, "?")
	if rest, ok := strings.CutPrefix(p, c.prefix); ok && (rest == "" || rest[0] == '/') {
		p = rest
	}
	return &request{method: http.MethodGet, url: c.baseURL + link, path: r.text(p)}
}

// named sets the route template of req and the raw values of its
// parameters, in order, and returns req. The values are kept in an array
// so that naming costs no allocation when nothing observes.
func (req *request) named(route string, values ...string) *request {
	req.route = route
	copy(req.values[:], values)
	return req
}

// do sends req with the management token and decodes a 2xx answer into out
// (nil: the body is read and dropped). When the service refuses the token
// with 401, do drops it and replays req once with a fresh one. It returns
// the final status. Every error it returns has passed the redactor of the
// attempt it comes from, before the Observer sees it.
func (c *Client) do(ctx context.Context, req *request, out any) (status int, err error) {
	if c == nil || c.tokens == nil {
		return 0, errNotNewClient
	}
	ctx, op := c.startOperation(ctx, req)
	defer func() { c.endOperation(ctx, op, req, status, err) }()
	for why := ResendNone; ; why = ResendReplay {
		resp, used, err := c.send(ctx, req, &c.bearer, why)
		req.carried = used
		if err != nil {
			return 0, c.redactor(req, used).error(err)
		}
		if resp.StatusCode == http.StatusUnauthorized && why != ResendReplay && c.invalidator != nil {
			discard(resp.Body)
			c.invalidator.Invalidate(used)
			c.logger.LogAttrs(ctx, slog.LevelInfo, "management: token refused, replaying with a new token",
				slog.String("method", req.method), pathAttr(req))
			continue
		}
		if err := c.checkResponse(req, resp, used); err != nil {
			return resp.StatusCode, err
		}
		if err := c.decode(req, resp, out); err != nil {
			return resp.StatusCode, err
		}
		return resp.StatusCode, nil
	}
}

// startOperation calls the OperationStart hook of c's Observer for req
// and returns the context the operation runs with, and the Operation to
// end it with (nil when no hook wants it: endOperation then does nothing).
func (c *Client) startOperation(ctx context.Context, req *request) (context.Context, *Operation) {
	obs := c.observer
	if obs == nil || (obs.OperationStart == nil && obs.OperationDone == nil) {
		return ctx, nil
	}
	op := req.operation()
	if obs.OperationStart != nil {
		if octx := obs.OperationStart(ctx, op); octx != nil {
			ctx = octx
		}
	}
	return markOperation(ctx, obs), &op
}

// endOperation calls the OperationDone hook for the operation that
// startOperation started.
func (c *Client) endOperation(ctx context.Context, op *Operation, req *request, status int, err error) {
	if op == nil || c.observer.OperationDone == nil {
		return
	}
	if status == 0 && err == nil {
		// Every return sets one or the other: the operation is ending
		// in a panic (of a RoundTripper, a TokenSource, a hook), which goes
		// on after this; it is not a success.
		err = errOperationPanicked
	}
	c.observer.OperationDone(ctx, *op, OperationResult{Status: status, Attempts: req.attempts, RetryWait: req.waited, Err: err})
}

// notAuthorized is the error of req when its n-th request got no token: a
// *TransportError naming the operation when the caller's context ended
// while it waited (the error table of docs/errors.md promises one for a
// context that ended), else the token's own error as it is (a *TokenError,
// or the TokenSource's error, unchanged).
func (c *Client) notAuthorized(ctx context.Context, req *request, n int, err error) error {
	if ctx.Err() != nil {
		return &TransportError{Method: req.method, Path: req.path, Attempts: n - 1, Err: err}
	}
	return err
}

// send makes req's HTTP requests through the retry policy and returns the
// final answer (any status) or a *TransportError, with the token the last
// request carried (nil with the client credentials): the redactor of an
// error needs it, and Client.do drops it after a 401. Each request carries
// what auth gives at that moment, so that a retry never carries a token
// the source replaced during the wait. why says why the first request is
// itself a resend (the replay after a 401).
func (c *Client) send(ctx context.Context, req *request, auth authorizer, why ResendReason) (*http.Response, *Token, error) {
	route := routeOf(req)
	if err := c.pauses.wait(ctx, route); err != nil {
		return nil, nil, &TransportError{Method: req.method, Path: req.path, Err: err}
	}
	var tok *Token
	for n := 1; ; n, why = n+1, ResendRetry {
		header, t, err := auth.authorize(ctx)
		if err != nil {
			return nil, tok, c.notAuthorized(ctx, req, n, err)
		}
		tok = t
		hr, err := c.newHTTPRequest(ctx, req, header)
		if err != nil {
			return nil, tok, &TransportError{Method: req.method, Path: req.path, Err: withoutURL(err, req.url)}
		}
		tried := time.Now()
		resp, err := c.sendOnce(ctx, req, hr, tok, why)
		took := time.Since(tried)
		status := 0
		if resp != nil {
			status = resp.StatusCode
			c.noteAnswer(ctx, req, tok, resp)
		}
		c.logAttempt(ctx, slog.LevelDebug, "management: attempt", req, n, status)
		final := func(err error) (*http.Response, *Token, error) {
			if err == nil {
				return resp, tok, nil
			}
			if resp != nil {
				discard(resp.Body)
			}
			return nil, tok, &TransportError{Method: req.method, Path: req.path, Attempts: n, Err: withoutURL(err, req.url)}
		}
		switch {
		case ctx.Err() != nil:
			return final(ctx.Err())
		case !retryable(ctx, resp, err):
			return final(err)
		case req.once && reached(resp, err):
			c.logAttempt(ctx, slog.LevelInfo, "management: not retrying, the service may have acted on the request", req, n, status)
			return final(err)
		case n > c.maxRetries:
			c.logAttempt(ctx, slog.LevelInfo, "management: giving up", req, n, status)
			return final(err)
		}
		now := time.Now()
		deadline, _ := ctx.Deadline()
		// While the route is paused, the wait lasts until this attempt's turn;
		// a retry that gives up takes none.
		wait, giveUp := c.pauses.turn(route, now, deadline, retryWait(c.waitMin, c.waitMax, n-1, resp, now))
		if giveUp {
			c.logAttempt(ctx, slog.LevelInfo, "management: not retrying, the wait would pass the deadline", req, n, status, slog.Duration("wait", wait))
			return final(err)
		}
		if why := checkRetries(ctx).stop(now.Add(wait+took), deadline); why != "" {
			c.logAttempt(ctx, slog.LevelInfo, "management: not retrying, "+why, req, n, status, slog.Duration("wait", wait))
			return final(err)
		}
		req.waited += wait
		c.observeRetry(ctx, req, RetryInfo{Attempt: n, Status: status, Wait: wait})
		if err != nil {
			text := escape(c.redactor(req, tok).text(withoutURL(err, req.url).Error()))
			c.logAttempt(ctx, slog.LevelInfo, "management: retrying", req, n, status, slog.Duration("wait", wait), slog.String("error", text))
		} else {
			discard(resp.Body)
			c.logAttempt(ctx, slog.LevelInfo, "management: retrying", req, n, status, slog.Duration("wait", wait))
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, tok, &TransportError{Method: req.method, Path: req.path, Attempts: n, Err: err}
		}
	}
}

// newHTTPRequest is one HTTP request of req, with the Authorization
// header auth.
func (c *Client) newHTTPRequest(ctx context.Context, req *request, auth string) (*http.Request, error) {
	var body io.Reader // nil for none; a *bytes.Reader, which net/http knows how to rewind (GetBody)
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, body)
	if err != nil {
		return nil, err
	}
	hr.Header = http.Header{
		"Authorization": {auth},
		"Content-Type":  {"application/json"},
		"Accept":        {"application/json"},
		"User-Agent":    {c.userAgent},
	}
	return hr, nil
}

// sendOnce sends hr, one HTTP request of req, between the Observer's
// AttemptStart and AttemptDone.
func (c *Client) sendOnce(ctx context.Context, req *request, hr *http.Request, tok *Token, why ResendReason) (*http.Response, error) {
	resent := req.attempts
	req.attempts++
	if obs := c.observer; obs == nil || (obs.AttemptStart == nil && obs.AttemptDone == nil) {
		return c.httpClient.Do(hr)
	}
	op, a := req.operation(), c.attempt(req, resent, why)
	if actx := c.startAttempt(ctx, op, a, hr); actx != ctx {
		hr = hr.WithContext(actx)
		ctx = actx
	}
	// A RoundTripper that panics still ends the attempt (a span the hook
	// started), before the panic goes on, unrecovered.
	answered := false
	defer func() {
		if !answered {
			c.doneAttempt(ctx, op, a, req, tok, nil, errAttemptPanicked)
		}
	}()
	resp, err := c.httpClient.Do(hr)
	answered = true
	c.doneAttempt(ctx, op, a, req, tok, resp, err)
	return resp, err
}

// errAttemptPanicked is the error AttemptDone gets for an attempt whose
// HTTPClient panicked, and errOperationPanicked the error OperationDone
// gets for an operation that ends in a panic.
var (
	errAttemptPanicked   = errors.New("the HTTP client panicked")
	errOperationPanicked = errors.New("management: the operation panicked")
)

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// logAttempt writes one record about attempt n of req, if the logger wants it.
func (c *Client) logAttempt(ctx context.Context, level slog.Level, msg string, req *request, n, status int, extra ...slog.Attr) {
	if !c.logger.Enabled(ctx, level) {
		return
	}
	attrs := append([]slog.Attr{slog.String("method", req.method), pathAttr(req),
		slog.Int("status", status), slog.Int("attempt", n)}, extra...)
	c.logger.LogAttrs(ctx, level, msg, attrs...)
}

// pathAttr names req in a log record: by its path, or for a request of
// Client.Do, whose path may hold values the SDK cannot tell from names, by
// the route its pause is kept under (see routeOf), which holds none.
func pathAttr(req *request) slog.Attr {
	if req.route == "" {
		return slog.String("route", doRoute)
	}
	return slog.String("path", req.path)
}

// observeRetry reports a retry of req to c's Observer.
func (c *Client) observeRetry(ctx context.Context, req *request, r RetryInfo) {
	if c.observer != nil && c.observer.Retry != nil {
		c.observer.Retry(ctx, req.operation(), r)
	}
}

// noteAnswer notes what an answer says beyond its status. A route the
// service says is deprecated (Deprecation, RFC 9745) or will go away
// (Sunset, RFC 8594) is logged once per route and Client, so that the news
// reaches whoever reads the logs before the route is gone. A 429 or 503
// with Retry-After pauses the route for the other calls (see routePauses).
func (c *Client) noteAnswer(ctx context.Context, req *request, tok *Token, resp *http.Response) {
	if deprecation, sunset := resp.Header.Get("Deprecation"), resp.Header.Get("Sunset"); deprecation != "" || sunset != "" {
		key := routeOf(req)
		if _, seen := c.deprecated.LoadOrStore(key, struct{}{}); !seen {
			r := c.redactor(req, tok) // the values come from outside
			c.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service says this route is deprecated",
				slog.String("method", key.method), slog.String("route", key.route),
				slog.String("deprecation", escape(r.kept(deprecation, 64, false))), slog.String("sunset", escape(r.kept(sunset, 64, false))))
		}
	}
	if status := resp.StatusCode; status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			c.notePause(ctx, req, status, d)
		}
	}
}

// checkResponse maps an answer that is not a 2xx, got by an attempt that
// carried tok, to an *APIError, redacted: the {reason, error_message}
// shape (or the token endpoint's shape, should a management endpoint send
// it), or the start of the raw body, redacted whole (as far as it was
// read), then cut. A redirect is never followed (see withoutRedirects). It
// closes the body of an answer it maps; 429 answers also match
// ErrRateLimited.
func (c *Client) checkResponse(req *request, resp *http.Response, tok *Token) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	r := c.redactor(req, tok)
	body, cut := readErrorBody(resp)
	if isRedirect(resp.StatusCode) {
		return r.error(redirectError(req, resp, r))
	}
	var w wireError
	_ = json.Unmarshal(body, &w) // a body of another shape leaves w empty
	e := &APIError{StatusCode: resp.StatusCode, Method: req.method, Path: req.path}
	e.Header, e.RequestID, e.RetryAfter = answerMeta(resp.Header, time.Now())
	switch {
	case w.Reason != nil && *w.Reason != "":
		e.Reason, e.Message = *w.Reason, w.ErrorMessage
	case w.Error != nil && *w.Error != "":
		e.Reason, e.Message = *w.Error, w.ErrorDescription
	case req.secret:
		e.BodyLength = int64(len(body))
	default:
		e.Body = r.body(body, maxErrorBody, cut)
	}
	return r.error(e)
}

// readErrorBody reads the start of an error answer's body, at most
// maxErrorBodyRead bytes, and closes it. cut says that the body may go on
// past what was read: the read stopped at the limit or failed (a
// connection dropped in the middle of it).
func readErrorBody(resp *http.Response) (body []byte, cut bool) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyRead))
	return body, err != nil || len(body) == maxErrorBodyRead
}

// wireError is either error shape of the service.
type wireError struct {
	Reason           *string `json:"reason"`
	ErrorMessage     string  `json:"error_message"`
	Error            *string `json:"error"`
	ErrorDescription string  `json:"error_description"`
}

// decode reads a 2xx body into out (nil: reads it to the end) and closes
// it, then lets out check what it got (validate). A body that is not one
// JSON value of out's shape, or that is larger than Config.MaxResponseBytes,
// is a *DecodeError that says what came back, redacted by the redactor of
// the attempt that carried req.carried.
func (c *Client) decode(req *request, resp *http.Response, out any) error {
	defer resp.Body.Close()
	body := &req.answer
	*body = limitedBody{r: resp.Body, left: c.maxBody, keep: !req.secret}
	err := decodeJSON(body, out)
	switch {
	case body.over:
		err = errorf("%w (limit %d bytes)", ErrResponseTooLarge, c.maxBody)
	case err != nil && body.cut != nil:
		// Not the body the service sent: the network cut it (the decoder
		// may say "unexpected EOF" as it does for truncated JSON; here the
		// read itself failed).
		err = &cutBodyError{body.cut}
	}
	if err == nil {
		return nil
	}
	if req.secret && notJSON(err) {
		// The body is withheld, so the error cannot show it: say that the
		// answer was not JSON at all, which no answer of the route is.
		err = &notJSONError{err}
	}
	body.fill()
	r := c.redactor(req, req.carried)
	e := &DecodeError{
		Method: req.method, Path: req.path, StatusCode: resp.StatusCode,
		ContentType: r.kept(resp.Header.Get("Content-Type"), maxContentType, false),
		// What was kept is the whole body only if the decoder saw its end
		// and all it read was kept: a credential the bound cut is one.
		Body: r.body(body.start(), maxDecodeErrorBody, !body.ended || body.over || body.past),
		Err:  err,
	}
	if req.secret {
		// Withheld, but measured, so that the text can say what came back.
		_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBodyRead))
		e.BodyLength = c.maxBody - body.left
		if resp.ContentLength > e.BodyLength {
			e.BodyLength = resp.ContentLength
		}
	}
	return r.error(e)
}

func decodeJSON(r io.Reader, out any) error {
	if out == nil {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	if d, ok := out.(bodyDecoder); ok { // a list's page (pagination.go), Client.Do's out (do.go)
		return d.decode(r)
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		if err == io.EOF {
			if _, ok := out.(*emptyAnswer); ok {
				return nil
			}
			return errEmptyBody
		}
		return err
	}
	// Anything but white space after the value means a body we do not understand.
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	if v, ok := out.(interface{ validate() error }); ok {
		return v.validate()
	}
	return nil
}

// bodyDecoder is an out that decodes a body its own way.
type bodyDecoder interface{ decode(r io.Reader) error }

// cutBodyError is the decoding error of a body whose read failed: the
// connection was cut in the middle of the answer (io.ErrUnexpectedEOF, a
// reset), not a malformed answer. It matches errBodyCut, and its read
// error.
type cutBodyError struct{ err error }

// Error says the body was cut, then the read's own error: the text names
// what happened to the answer, not what the decoder made of its start.
func (e *cutBodyError) Error() string {
	return "the body was cut short: " + e.err.Error()
}

// Unwrap returns the read's error.
func (e *cutBodyError) Unwrap() error { return e.err }

// Is reports whether target is errBodyCut.
func (e *cutBodyError) Is(target error) bool { return target == errBodyCut }

// errBodyCut is matched by a cutBodyError, through a *DecodeError and its
// redacted copy: for the Authenticator, an answer the network cut is no
// answer (see unreachable).
var errBodyCut = errors.New("body cut")

// errEmptyBody is decodeJSON's error for a body with no JSON value.
var errEmptyBody = errors.New("empty body")

// notJSON reports whether err says that a body was not JSON at all: empty,
// or not starting like a JSON value.
func notJSON(err error) bool {
	var syntax *json.SyntaxError
	return err == errEmptyBody || errors.As(err, &syntax)
}

// notJSONError is the decoding error of a body that was withheld and was
// not JSON at all: no answer of the API, so the answer of something else
// where Config.BaseURL points (see DecodeError.Is). Its text is err's.
type notJSONError struct{ err error }

// Error is the decoder's text alone: the hint that names Config.BaseURL
// is DecodeError's to add, once, where it wraps this.
func (e *notJSONError) Error() string { return e.err.Error() }

// Unwrap returns the decoder's error.
func (e *notJSONError) Unwrap() error { return e.err }

// Is reports whether target is errNotJSON; the redacted copy of the
// error (redactedError) answers it too.
func (e *notJSONError) Is(target error) bool { return target == errNotJSON }

// errNotJSON is matched by a notJSONError.
var errNotJSON = errors.New("not JSON")

// maxDecodeErrorBody bounds DecodeError.Body, and maxContentType
// DecodeError.ContentType: enough to recognise the answer. The start of a
// body is kept up to maxDecodeErrorRead bytes, redacted, then cut at
// maxDecodeErrorBody: so that a credential the bound cuts is redacted
// whole (and one that maxDecodeErrorRead cuts, as a credential cut).
const (
	maxDecodeErrorBody = 256
	maxDecodeErrorRead = 2 * maxDecodeErrorBody
	maxContentType     = 128
)

// limitedBody reads a 2xx body: at most left bytes (reading past them fails
// with ErrResponseTooLarge), keeping the first ones for a DecodeError. Any
// limit up to math.MaxInt64 works: a body is known to be longer than the
// limit by reading one byte more once the limit is reached.
type limitedBody struct {
	r     io.Reader
	left  int64 // bytes that may still be read
	over  bool  // the body had more than the limit
	ended bool  // the body was read to its end
	cut   error // the read of the body failed (the connection was cut): its error
	keep  bool  // whether head records the body
	past  bool  // more was read than head holds
	head  [maxDecodeErrorRead]byte
	nhead int
}

// Read stops at the limit; past it, a probe of one byte tells a body of
// exactly the limit from a longer one.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.probe()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.ended = b.ended || err == io.EOF
	if err != nil && err != io.EOF && b.cut == nil {
		b.cut = err
	}
	if b.keep {
		k := copy(b.head[b.nhead:], p[:n])
		b.nhead += k
		b.past = b.past || k < n
	}
	return n, err
}

// probe reads past the limit: io.EOF when the body ends there.
func (b *limitedBody) probe() error {
	if !b.over {
		var one [1]byte
		n, err := io.ReadFull(b.r, one[:])
		if n == 0 {
			return err
		}
		b.over = true
	}
	return ErrResponseTooLarge
}

// fill reads on until head is full or the body ends: how far a decoder
// read before it failed depends on its buffering (Go 1.27's reads less
// than 1.26's), and what a DecodeError shows of the body must not.
func (b *limitedBody) fill() {
	var buf [maxDecodeErrorRead]byte
	for b.keep && !b.ended && !b.over && b.left > 0 && b.nhead < len(b.head) {
		n, err := b.Read(buf[:len(b.head)-b.nhead])
		if err != nil || n == 0 {
			return
		}
	}
}

// start returns a copy of the first bytes read, nil when none were kept.
func (b *limitedBody) start() []byte {
	if b.nhead == 0 {
		return nil
	}
	return append([]byte(nil), b.head[:b.nhead]...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// discard reads what is left of a body (to reuse the connection) and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBodyRead))
	_ = body.Close()
}

// errNotNewClient is the answer of a Client that NewClient did not make
// (a zero Client, a nil *Client): it has no credentials to send.
var errNotNewClient = errorf("%w: the Client was not made by NewClient; use NewClient", ErrInvalidArgument)

// notNewClient is the panic of a service of a Client that NewClient did
// not make: a zero Client's Users and Things are nil, and have no Client.
const notNewClient = "management: Client.Users or Client.Things of a Client not made by NewClient; use NewClient"

// service is what every service of a Client holds (go-github's shape):
// UsersService and ThingsService are defined on it, so that one guard
// serves them all.
type service struct {
	client *Client
}

// c returns the Client of s, or panics with notNewClient.
func (s *service) c() *Client {
	if s == nil || s.client == nil {
		panic(notNewClient)
	}
	return s.client
}

// c returns the Client of s, or panics with notNewClient.
func (s *UsersService) c() *Client { return (*service)(s).c() }

// c returns the Client of s, or panics with notNewClient.
func (s *ThingsService) c() *Client { return (*service)(s).c() }

// redactor is the redactor of an answer to req got by an attempt that
// carried tok (nil for none): the client credentials, tok, and the End
// User's credential req checks. It is needed only once an error is.
func (c *Client) redactor(req *request, tok *Token) *redactor {
	r := c.ownRedactor(tok)
	if req.credential != "" {
		r = r.with(authForms(req.credential)...)
	}
	return r
}

// ownRedactor is the redactor of the client credentials and tok (nil for
// none). The last one made is kept, for the token it was made for: every
// page of a listing names its next_page link with it, and the token
// changes only with a refresh.
func (c *Client) ownRedactor(tok *Token) *redactor {
	key := ownCredentials{}
	if tok != nil {
		key = ownCredentials{token: true, access: tok.AccessToken, typ: tok.TokenType}
	}
	if kept := c.lastRedactor.Load(); kept != nil && kept.ownCredentials == key {
		return kept.r
	}
	creds := c.creds[:len(c.creds):len(c.creds)]
	if tok != nil {
		creds = append(creds, tok.header(), tok.AccessToken)
	}
	kept := &keptRedactor{ownCredentials: key, r: newRedactor(creds...)}
	c.lastRedactor.Store(kept)
	return kept.r
}

// ownCredentials names the management token a kept redactor knows,
// besides the client credentials; a TokenSource may change a Token in
// place, so the token is named by its fields.
type ownCredentials struct {
	token       bool
	access, typ string
}

// keptRedactor is the redactor Client.ownRedactor made last.
type keptRedactor struct {
	ownCredentials
	r *redactor
}

// withoutURL returns err without the request URL, which net/http's
// *url.Error prints whole, query string included: err's own *url.Error
// layers give way to their causes, and an error of another kind whose text
// shows a URL (a RoundTripper's: a service mesh, a tracing wrapper, with a
// *url.Error of its own, or u, the request's URL, printed its own way)
// becomes a urlFreeError without it.
func withoutURL(err error, u string) error {
	for {
		ue, ok := err.(*url.Error)
		if !ok {
			break
		}
		err = ue.Err
	}
	if err == nil {
		return nil
	}
	text := err.Error()
	var urls []string
	eachURLError(err, func(ue *url.Error) {
		cause := ue.Op
		if ue.Err != nil {
			cause = ue.Err.Error()
		}
		text = strings.ReplaceAll(text, ue.Error(), cause)
		urls = append(urls, ue.URL)
	})
	// What shows a URL its own way (a wrapper that quoted a *url.Error's
	// text): cut it out, its query too.
	for _, v := range append(urls, u) {
		_, query, _ := strings.Cut(v, "?")
		for _, cut := range [...]string{v, query} {
			if cut != "" {
				text = strings.ReplaceAll(text, cut, "")
			}
		}
	}
	if urls == nil && text == err.Error() {
		return err
	}
	return &urlFreeError{text: text, err: err}
}

// eachURLError calls f with each *url.Error in err's tree, outer ones
// first.
func eachURLError(err error, f func(*url.Error)) {
	for err != nil {
		if ue, ok := err.(*url.Error); ok {
			f(ue)
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				eachURLError(e, f)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

// urlFreeError is an error whose text showed a request URL, without it:
// its text is err's with each *url.Error's text replaced by its cause's,
// and any URL left cut out. It matches what err matches (errors.Is), and
// errors.As reaches what err wraps, each without its URL in turn: never a
// *url.Error.
type urlFreeError struct {
	text string
	err  error
}

// Error is err's text without the request URL.
func (e *urlFreeError) Error() string { return e.text }

// Is reports whether err matches target.
func (e *urlFreeError) Is(target error) bool { return errors.Is(e.err, target) }

// Unwrap returns the errors err wraps, each without the request URL.
func (e *urlFreeError) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, c := range u.Unwrap() {
			if c != nil {
				out = append(out, withoutURL(c, ""))
			}
		}
		return out
	case interface{ Unwrap() error }:
		if c := u.Unwrap(); c != nil {
			return []error{withoutURL(c, "")}
		}
	}
	return nil
}
