package management

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Observer is a set of hooks that tracing and metrics systems attach to a
// Client (Config.Observer), in the manner of net/http/httptrace.ClientTrace:
// every field is optional, and a nil Observer or nil hook costs a nil check.
// Package github.com/serviceconnect/management/otel builds one on
// OpenTelemetry; for another system, set the hooks you need:
//
//	obs := &management.Observer{
//		OperationStart: func(ctx context.Context, op management.Operation) context.Context {
//			return startSpan(ctx, op.Name()) // span named "GET /users/{user_id}"
//		},
//		OperationDone: func(ctx context.Context, op management.Operation, r management.OperationResult) {
//			endSpan(ctx, r.Status, r.Err)
//		},
//	}
//
// An operation is one request of the API as the caller sees it: retries,
// their waits and the replay after a 401 are inside it. The management
// token's fetch is an operation of its own (route "/auth/token"), started
// inside the operation that needed the token, with that operation's
// context. The Authenticator of a Client reports its checks through the
// Client's Observer.
//
// Hooks may be called from several goroutines at once and must not block.
// A hook that panics in a goroutine of the SDK's own (a token request, an
// Authenticator's check) fails that call, logged; it never takes the
// process down. Every error a hook receives has been redacted (see
// APIError).
// The SDK never passes a token, a secret or a body to a hook; ids are only
// in Operation.PathValues, which an observer should record only when its
// user asks for it.
type Observer struct {
	// OperationStart is called as an operation starts. The context it
	// returns (ctx when nil is returned) carries the operation: the
	// HTTP requests, log records and the other hooks of the operation get
	// it, so a span started here is their parent.
	OperationStart func(ctx context.Context, op Operation) context.Context
	// OperationDone is called once when the operation ends, with the
	// context OperationStart returned.
	OperationDone func(ctx context.Context, op Operation, r OperationResult)
	// Retry is called after an attempt that will be retried, before the wait.
	Retry func(ctx context.Context, op Operation, r RetryInfo)
	// AuthCheck is called once per Authenticator.Check with its outcome
	// (AuthStale for a token let through under StaleIfError).
	AuthCheck func(ctx context.Context, outcome AuthOutcome)
	// AuthCallsInFlight is called when an Authenticator starts (delta 1)
	// or ends (delta -1) an authenticate call: the sum of the deltas is the
	// number of calls in flight.
	AuthCallsInFlight func(ctx context.Context, delta int)

	// AttemptStart is called before each HTTP request an operation sends:
	// the first, each retry, the replay after a 401, and the token request
	// (an operation of its own). The context it returns (ctx when nil is
	// returned) is the request's: a span started here is the parent of
	// whatever the HTTPClient records. Fields it sets in a.Header are sent
	// with the request (trace propagation), except those the SDK sets,
	// that could carry or redirect a credential or that change how the
	// answer comes (see Attempt.Header).
	AttemptStart func(ctx context.Context, op Operation, a Attempt) context.Context
	// AttemptDone is called once per AttemptStart, when the answer's
	// headers came or the request failed, with the context AttemptStart
	// returned.
	AttemptDone func(ctx context.Context, op Operation, a Attempt, r AttemptResult)
	// FlightJoined is called when an operation waits for a call that
	// another operation started and that serves them both (the management
	// token's fetch; an End User token's check, where the Authenticator's
	// check stands for the operation): ctx is the waiter's context, started
	// the context of the one that started the call, whose descendants the
	// call's own operations are. A tracer links the waiter's span to the
	// starter's. It is not called for the starter itself.
	FlightJoined func(ctx, started context.Context)
	// BreakerChange is called when one of the Client's breakers opens
	// (after a failure, the SDK leaves what it guards alone for a
	// cool-down, going on without it) or closes (a probe succeeded). It is
	// called from the call that met the failure or made the probe (a
	// check's, a token fetch's, a Forget's), with that call's context.
	BreakerChange func(ctx context.Context, b BreakerInfo)
}

// BreakerName names a breaker of a Client.
type BreakerName string

const (
	// BreakerSharedStore guards the shared stores (Config.SharedStore,
	// Authenticator.SharedStore): after a store operation fails or times
	// out (Config.SharedStoreTimeout), calls and checks go on as without a
	// store, Forget excepted, for a cool-down of about one
	// SharedStoreTimeout that doubles while the one probe at a time (a
	// read, in the background: no call waits for it) fails, up to 30 s.
	BreakerSharedStore BreakerName = "shared_store"
	// BreakerLeaseWaits guards the waits on other replicas' leases in the
	// shared store: after three leases waited out in a row (held by a
	// replica that died, or on purpose), the Client waits on none for a
	// cool-down of about 5 s that doubles while the one wait at a time it
	// then risks is waited out too, up to 30 s.
	BreakerLeaseWaits BreakerName = "lease_waits"
	// BreakerAuthenticate guards an Authenticator's calls to the service:
	// after 3 calls in a row got no answer (each after the Client's
	// retries, within Authenticator.Timeout), checks do not call the
	// service for a cool-down of about 1 s that doubles while the one
	// probe at a time (the call of a check whose token needs one, which
	// that check does not wait for) fails, up to 30 s. Meanwhile a check
	// answers at once: from the cache, a stale pass (see
	// Authenticator.StaleIfError), or an *AuthenticationUnavailableError.
	// Each Authenticator has its own; Client.Authenticate has none: it
	// asks the service whatever the breaker's state.
	BreakerAuthenticate BreakerName = "authenticate"
)

// BreakerInfo describes a breaker opening or closing.
type BreakerInfo struct {
	// Breaker names the breaker.
	Breaker BreakerName
	// Open is true when it opened, false when it closed.
	Open bool
	// CoolDown is, when it opened, the time until its first probe.
	CoolDown time.Duration
	// Err is, when it opened, the failure that opened it (redacted, as
	// every error a hook gets).
	Err error
	// Skipped is, when it closed, the operations that went without what
	// it guards while it was open.
	Skipped int64
	// OpenFor is, when it closed, how long it was open.
	OpenFor time.Duration
}

// Attempt describes one HTTP request of an operation. It holds no id:
// the route's parameters are in Operation.PathValues.
type Attempt struct {
	// Method is the HTTP method, "GET".
	Method string
	// Route is the operation's path template, "/users/{user_id}"; "" for
	// a Client.Do (see Operation.Route).
	Route string
	// ServerAddress and ServerPort are the host and port of Config.BaseURL,
	// the port made explicit (443 for https).
	ServerAddress string
	ServerPort    int
	// URL is the URL requested with each path parameter's value replaced by
	// "REDACTED" and without the query, which can hold a page cursor. For
	// a Client.Do, the whole path below the prefix is one "REDACTED".
	URL string
	// ResendCount is the number of requests the operation sent before this
	// one: 0 for the first.
	ResendCount int
	// Resend says why this request is sent again; ResendNone for the first.
	Resend ResendReason
	// Header starts empty for AttemptStart to fill. The fields set are
	// added to the request, but never Authorization, Cookie, Host,
	// Content-*, Proxy-*, the hop-by-hop fields, a field the SDK sets
	// (Accept, User-Agent), one that changes how the answer comes
	// (Accept-Encoding, Range, If-*), or a name or value net/http cannot
	// send; a name is read with its underscores as hyphens (User_Agent is
	// User-Agent). A hook can neither read nor replace the request's
	// credentials, nor turn off net/http's decompression of gzip.
	Header http.Header
}

// ResendReason says why an attempt is sent again.
type ResendReason int

const (
	// ResendNone: the operation's first request.
	ResendNone ResendReason = iota
	// ResendRetry: a retry after a connection failure, 429 or 5xx.
	ResendRetry
	// ResendReplay: the replay with a new token after the service refused
	// the previous one with 401.
	ResendReplay
)

// String returns "none", "retry" or "replay".
func (r ResendReason) String() string {
	switch r {
	case ResendNone:
		return "none"
	case ResendRetry:
		return "retry"
	case ResendReplay:
		return "replay"
	}
	return "unknown"
}

// AttemptResult is how an attempt ended.
type AttemptResult struct {
	// Status is the HTTP status; 0 when no answer came.
	Status int
	// Protocol is the answer's HTTP version, "1.1" or "2"; "" without one.
	Protocol string
	// RequestID is the id the service gave the request, redacted as
	// APIError.RequestID is; RequestIDHeader names the header it came in.
	RequestID       string
	RequestIDHeader string
	// Err is why no answer came (redacted, as every error a hook gets); nil
	// when one did, whatever its status.
	Err error
}

// Operation names one operation of the API.
type Operation struct {
	// Method is the HTTP method, "GET".
	Method string
	// Route is the path template below the prefix, as the spec writes it:
	// "/users/{user_id}", "/users" for every page of a listing,
	// "/auth/token" for the management token's fetch. It never holds an id.
	// It is "" for a Client.Do: the SDK cannot tell the names of its path
	// from values, so it shows none of it.
	Route string
	// PathValues maps the route's parameters to this operation's values
	// ("user_id": "u-1"), unescaped; nil for a route without any, and for
	// a Client.Do.
	PathValues map[string]string
}

// Name is Method and Route, "GET /users/{user_id}": a span name. Without a
// Route (a Client.Do) it is the Method alone, "GET", as the HTTP semantic
// conventions name a span whose route template is unknown.
func (op Operation) Name() string {
	if op.Route == "" {
		return op.Method
	}
	return op.Method + " " + op.Route
}

// OperationResult is how an operation ended.
type OperationResult struct {
	// Status is the final HTTP status; 0 when no answer came.
	Status int
	// Attempts counts the HTTP requests sent, retries and replay included;
	// 0 when none was sent.
	Attempts int
	// RetryWait is the total time chosen to wait between attempts.
	RetryWait time.Duration
	// Err is the operation's error, nil on success. Its text may name ids
	// (never tokens).
	Err error
}

// RetryInfo describes an attempt that is about to be retried.
type RetryInfo struct {
	// Attempt is the number of the attempt that failed, from 1.
	Attempt int
	// Status is its HTTP status; 0 when the connection failed.
	Status int
	// Wait is the wait before the next attempt.
	Wait time.Duration
}

// AuthOutcome is the outcome of one Authenticator.Check.
type AuthOutcome int

const (
	// AuthHit: the verdict came from the in-process cache.
	AuthHit AuthOutcome = iota + 1
	// AuthMiss: the check joined or started an authenticate call.
	AuthMiss
	// AuthRefused: the check was refused without a call (no or malformed
	// Authorization header, too many checks, context ended, the breaker on
	// the authenticate call open).
	AuthRefused
	// AuthStale: the service could not answer (or was not asked: see
	// BreakerAuthenticate), and the token was let through under
	// Authenticator.StaleIfError, its EndUser marked Stale. A verdict
	// still fresh in the cache is AuthHit, whatever the service's state.
	AuthStale
)

// String returns "hit", "miss", "refused" or "stale".
func (o AuthOutcome) String() string {
	switch o {
	case AuthHit:
		return "hit"
	case AuthMiss:
		return "miss"
	case AuthRefused:
		return "refused"
	case AuthStale:
		return "stale"
	}
	return "unknown"
}

// operation describes req for an observer.
func (req *request) operation() Operation {
	op := Operation{Method: req.method, Route: req.route}
	rest := req.route
	for i := 0; i < maxPathValues; i++ {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			break
		}
		name, tail, _ := strings.Cut(after, "}")
		if op.PathValues == nil {
			op.PathValues = make(map[string]string, maxPathValues)
		}
		op.PathValues[name] = req.values[i]
		rest = tail
	}
	return op
}

// markOperation returns the context of an operation that obs observes,
// marked for the flights the operation waits for (see joined) when obs
// has a FlightJoined hook.
func markOperation(ctx context.Context, obs *Observer) context.Context {
	if obs == nil || obs.FlightJoined == nil {
		return ctx
	}
	return context.WithValue(ctx, operationKey{}, &operationMark{obs: obs})
}

// operationKey keys an operation's *operationMark in its context.
type operationKey struct{}

// operationMark tells the operations apart for the flights they wait for:
// a flight keeps its starter's, and reports every other waiter's.
type operationMark struct{ obs *Observer }

// markOf returns the mark of the operation ctx is in, nil when none (or
// no FlightJoined hook).
func markOf(ctx context.Context) *operationMark {
	m, _ := ctx.Value(operationKey{}).(*operationMark)
	return m
}

// joined reports, to the waiter's Observer, that the operation of ctx
// waits for a flight that the operation of started began; origin is the
// starter's mark, nil when the flight was started outside an operation.
func joined(ctx, started context.Context, origin *operationMark) {
	if m := markOf(ctx); m != nil && m != origin {
		m.obs.FlightJoined(ctx, started)
	}
}

// observer is the Observer of a's Client, nil when none.
func (a *Authenticator) observer() *Observer {
	if a.Client == nil {
		return nil
	}
	return a.Client.observer
}

// observeCheck reports a check's outcome.
func (a *Authenticator) observeCheck(ctx context.Context, outcome AuthOutcome) {
	if obs := a.observer(); obs != nil && obs.AuthCheck != nil {
		obs.AuthCheck(ctx, outcome)
	}
}

// observeCalls reports a call starting (1) or ending (-1).
func (a *Authenticator) observeCalls(ctx context.Context, delta int) {
	if obs := a.observer(); obs != nil && obs.AuthCallsInFlight != nil {
		obs.AuthCallsInFlight(ctx, delta)
	}
}

// attempt describes the attempt of req that resent requests preceded.
func (c *Client) attempt(req *request, resent int, why ResendReason) Attempt {
	return Attempt{
		Method: req.method, Route: req.route,
		ServerAddress: c.base.Hostname(), ServerPort: c.port,
		// A Client.Do's path may be values alone: it is redacted whole.
		URL:         c.baseURL + c.prefix + redactedRoute(cmp.Or(req.route, "/{path}")),
		ResendCount: resent, Resend: why,
		Header: make(http.Header),
	}
}

// redactedRoute is route with each parameter replaced by REDACTED.
func redactedRoute(route string) string {
	var b strings.Builder
	for {
		before, after, ok := strings.Cut(route, "{")
		b.WriteString(before)
		if !ok {
			return b.String()
		}
		_, route, _ = strings.Cut(after, "}")
		b.WriteString("REDACTED")
	}
}

// startAttempt calls AttemptStart and adds the fields it set to hr's
// header; it returns the attempt's context.
func (c *Client) startAttempt(ctx context.Context, op Operation, a Attempt, hr *http.Request) context.Context {
	if c.observer.AttemptStart == nil {
		return ctx
	}
	if actx := c.observer.AttemptStart(ctx, op, a); actx != nil {
		ctx = actx
	}
	for name, values := range a.Header {
		name = http.CanonicalHeaderKey(name)
		// "The SDK set it" reads the name as the block list does: a hook's
		// User_Agent would otherwise travel beside the SDK's User-Agent.
		if !propagated(name) || hr.Header[name] != nil || hr.Header[hyphenated(name)] != nil {
			continue
		}
		for _, v := range values {
			if headerValueSafe(v) {
				hr.Header.Add(name, v)
			}
		}
	}
	return ctx
}

// propagated reports whether a field an AttemptStart hook set may be
// sent: a valid name that neither carries nor steers credentials, nor
// changes how the request is framed or routed, nor how the answer comes:
// Accept-Encoding (net/http decodes gzip only when it asked for it
// itself), Range and the conditional If- fields (a part of the answer, or
// none). A name is judged with its underscores read as hyphens, as CGI and
// some proxies read them: "Proxy_Authorization" is Proxy-Authorization to
// them.
func propagated(name string) bool {
	h := hyphenated(name)
	if name == "" || strings.HasPrefix(h, "Content-") || strings.HasPrefix(h, "Proxy-") || strings.HasPrefix(h, "If-") {
		return false
	}
	switch h {
	case "Authorization", "Cookie", "Host", "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
		"Accept-Encoding", "Range":
		return false
	}
	for i := range len(name) {
		b := name[i]
		if b <= ' ' || b >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, b) >= 0 {
			return false
		}
	}
	return true
}

// hyphenated is the canonical form of name with its underscores read as
// hyphens: "User-Agent" for "User_agent".
func hyphenated(name string) string {
	return http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// doneAttempt calls AttemptDone with what came back: resp, or err,
// redacted of the credentials the attempt carried.
func (c *Client) doneAttempt(ctx context.Context, op Operation, a Attempt, req *request, tok *Token, resp *http.Response, err error) {
	if c.observer.AttemptDone == nil {
		return
	}
	var res AttemptResult
	if err != nil {
		res.Err = c.redactor(req, tok).error(&TransportError{Method: req.method, Path: req.path, Attempts: 1, Err: withoutURL(err, req.url)})
	} else {
		res.Status = resp.StatusCode
		switch resp.ProtoMajor {
		case 0: // a RoundTripper that did not say
		case 1:
			res.Protocol = "1." + strconv.Itoa(resp.ProtoMinor)
		default:
			res.Protocol = strconv.Itoa(resp.ProtoMajor)
		}
		if id, name := requestIDOf(resp.Header); id != "" {
			res.RequestID, res.RequestIDHeader = c.redactor(req, tok).requestID(id), name
		}
	}
	c.observer.AttemptDone(ctx, op, a, res)
}
