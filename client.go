package management

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the SDK's version, sent in the User-Agent header.
const Version = "0.1.0"

// Defaults of the zero values of Config.
const (
	defaultPathPrefix       = "/v2/api/management/service_connect"
	defaultUnsetMarker      = "$ServiceUnset$"
	defaultMaxRetries       = 4
	defaultRetryWaitMin     = 250 * time.Millisecond
	defaultRetryWaitMax     = 15 * time.Second
	defaultMaxResponseBytes = 32 << 20
	maxErrorBodyRead        = 64 << 10 // error bodies are read this far, then dropped
)

// Config configures a Client. BaseURL and either ClientID and ClientSecret
// or TokenSource are required; the zero value of every other field selects a
// documented default.
//
// Config is safe to print and log: String, GoString and LogValue redact the
// client id and secret.
type Config struct {
	// BaseURL is the service's address, "https://host[:port][/path]",
	// without query or fragment. next_page links are appended to it as
	// they stand. http:// is accepted only for a loopback host unless
	// AllowInsecureHTTP is set.
	BaseURL string
	// ClientID identifies the client application. Required unless TokenSource is set.
	ClientID string
	// ClientSecret is the client application's secret. Required unless
	// TokenSource is set. It is sent only to the token endpoint and never printed.
	ClientSecret string

	// TokenSource, when set, replaces the client-credentials flow: the
	// client asks it for a token before every request. If it has a method
	// Invalidate(*Token), the client calls it when the service refuses a
	// token with 401 and replays the request once with a fresh token.
	TokenSource TokenSource
	// HTTPClient is the client under the retry layer (proxy, TLS, tracing).
	// nil: a client with its own connection pool. Its Timeout, when set,
	// bounds each attempt; the caller's context bounds the whole call.
	HTTPClient *http.Client
	// Logger receives a Debug record per attempt and an Info record per
	// retry decision: method, path without query, status, attempt, wait.
	// Never headers, bodies, tokens or secrets. nil discards.
	Logger *slog.Logger
	// UserAgent is prepended to "management-go/<Version>".
	UserAgent string
	// MaxRetries bounds the retries after the first attempt. 0: 4; negative: never retry.
	MaxRetries int
	// RetryWaitMin is the shortest wait between attempts. 0: 250ms.
	RetryWaitMin time.Duration
	// RetryWaitMax is the longest wait between attempts, Retry-After
	// included. 0: 15s.
	RetryWaitMax time.Duration
	// RefreshMargin is how long before expiry the token is refreshed.
	// 0: a tenth of the token's lifetime; negative: no margin. Never more
	// than half the lifetime.
	RefreshMargin time.Duration
	// PathPrefix precedes every path. "": "/v2/api/management/service_connect".
	PathPrefix string
	// UnsetMarker is the custom settings value that removes a key.
	// "": "$ServiceUnset$". ThingUpdate's Unset is sent as this value.
	UnsetMarker string
	// AllowInsecureHTTP permits http:// to a host that is not loopback.
	AllowInsecureHTTP bool
	// MaxResponseBytes bounds a response body. 0: 32 MiB. A larger
	// successful body fails with ErrResponseTooLarge.
	MaxResponseBytes int64
}

const redacted = "REDACTED"

func redact(s string) string {
	if s == "" {
		return `""`
	}
	return redacted
}

// String describes c with the client id and secret redacted.
func (c Config) String() string {
	return fmt.Sprintf("management.Config{BaseURL:%q, ClientID:%s, ClientSecret:%s, TokenSource:%t, PathPrefix:%q, MaxRetries:%d}",
		c.BaseURL, redact(c.ClientID), redact(c.ClientSecret), c.TokenSource != nil, c.PathPrefix, c.MaxRetries)
}

// GoString is String, so that %#v redacts too.
func (c Config) GoString() string { return c.String() }

// LogValue describes c to log/slog with the client id and secret redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("client_id", redact(c.ClientID)),
		slog.String("client_secret", redact(c.ClientSecret)),
		slog.Bool("token_source", c.TokenSource != nil),
	)
}

// MarshalJSON encodes c with the client id and secret redacted, so that a
// Config nested in a value logged by slog's JSON handler stays safe.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"base_url":      c.BaseURL,
		"client_id":     redact(c.ClientID),
		"client_secret": redact(c.ClientSecret),
		"token_source":  c.TokenSource != nil,
	})
}

// Client is a client of the management API. It holds the token, refreshed
// as needed, and the connection pool: create one per service and share it.
// A Client is safe for concurrent use by multiple goroutines.
type Client struct {
	// Users lists and reads Users and manages their associated Things.
	Users *UsersService
	// Things lists, reads and updates Things.
	Things *ThingsService

	base        *url.URL // Config.BaseURL, parsed
	baseURL     string   // scheme://host[:port][/path], no trailing slash
	basePath    string   // the path of baseURL, for checking next_page links
	prefix      string
	tokens      TokenSource
	invalidator interface{ Invalidate(*Token) } // nil when tokens cannot drop a refused token
	httpClient  *http.Client
	logger      *slog.Logger
	maxRetries  int
	waitMin     time.Duration
	waitMax     time.Duration
	unsetMarker string
	maxBody     int64

	// Header values shared by every request; net/http never modifies a
	// request's headers, so one slice each saves allocations per call.
	jsonHeader      []string
	userAgentHeader []string

	exchanges sync.Pool                  // of *exchange, see newExchange
	lastAuth  atomic.Pointer[authHeader] // see authorization
}

// NewClient validates cfg and returns a Client. It sends nothing: the first
// token is fetched by the first call that needs one.
func NewClient(cfg Config) (*Client, error) {
	base, err := checkBaseURL(cfg.BaseURL, cfg.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	if cfg.TokenSource == nil && (cfg.ClientID == "" || cfg.ClientSecret == "") {
		return nil, fmt.Errorf("%w: Config.ClientID and Config.ClientSecret are required unless Config.TokenSource is set", ErrInvalidArgument)
	}
	if cfg.RetryWaitMin < 0 || cfg.RetryWaitMax < 0 {
		return nil, fmt.Errorf("%w: Config.RetryWaitMin and Config.RetryWaitMax must not be negative", ErrInvalidArgument)
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("%w: Config.MaxResponseBytes must not be negative", ErrInvalidArgument)
	}
	if cfg.PathPrefix != "" && (!strings.HasPrefix(cfg.PathPrefix, "/") || strings.ContainsAny(cfg.PathPrefix, "?#")) {
		return nil, fmt.Errorf("%w: Config.PathPrefix must be a path starting with /", ErrInvalidArgument)
	}
	c := &Client{
		base:        base,
		baseURL:     strings.TrimSuffix(base.String(), "/"),
		basePath:    strings.TrimSuffix(base.EscapedPath(), "/"),
		prefix:      strings.TrimSuffix(cmp.Or(cfg.PathPrefix, defaultPathPrefix), "/"),
		httpClient:  cfg.HTTPClient,
		logger:      cfg.Logger,
		maxRetries:  cfg.MaxRetries,
		waitMin:     cmp.Or(cfg.RetryWaitMin, defaultRetryWaitMin),
		waitMax:     cmp.Or(cfg.RetryWaitMax, defaultRetryWaitMax),
		unsetMarker: cmp.Or(cfg.UnsetMarker, defaultUnsetMarker),
		maxBody:     cmp.Or(cfg.MaxResponseBytes, defaultMaxResponseBytes),
	}
	c.exchanges.New = c.newExchange
	c.jsonHeader = []string{"application/json"}
	c.userAgentHeader = []string{strings.TrimSpace(cfg.UserAgent + " management-go/" + Version)}
	if c.waitMin > c.waitMax {
		return nil, fmt.Errorf("%w: Config.RetryWaitMin (%v) is longer than Config.RetryWaitMax (%v)", ErrInvalidArgument, c.waitMin, c.waitMax)
	}
	switch {
	case cfg.MaxRetries == 0:
		c.maxRetries = defaultMaxRetries
	case cfg.MaxRetries < 0:
		c.maxRetries = 0
	}
	if c.httpClient == nil {
		c.httpClient = newHTTPClient()
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TokenSource != nil {
		c.tokens = cfg.TokenSource
		c.invalidator, _ = cfg.TokenSource.(interface{ Invalidate(*Token) })
	} else {
		cache := newTokenCache(c, cfg.ClientID, cfg.ClientSecret, cfg.RefreshMargin)
		c.tokens, c.invalidator = cache, cache
	}
	c.Users = &UsersService{client: c}
	c.Things = &ThingsService{client: c}
	return c, nil
}

// String describes c without its credentials or tokens.
func (c *Client) String() string {
	return fmt.Sprintf("management.Client{BaseURL:%q}", c.baseURL)
}

// GoString is String, so that %#v shows no credentials either.
func (c *Client) GoString() string { return c.String() }

// newHTTPClient returns a client with its own pool, sized for an SDK that
// many goroutines share (net/http keeps only 2 idle connections per host).
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

func checkBaseURL(raw string, allowInsecure bool) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("%w: Config.BaseURL is required", ErrInvalidArgument)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: Config.BaseURL is not a URL", ErrInvalidArgument)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: Config.BaseURL must be an absolute http or https URL", ErrInvalidArgument)
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("%w: Config.BaseURL has no host", ErrInvalidArgument)
	case u.User != nil:
		return nil, fmt.Errorf("%w: Config.BaseURL must not hold user info; use ClientID and ClientSecret", ErrInvalidArgument)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return nil, fmt.Errorf("%w: Config.BaseURL must not have a query or fragment", ErrInvalidArgument)
	case u.Scheme == "http" && !allowInsecure && !isLoopback(u.Hostname()):
		return nil, fmt.Errorf("%w: Config.BaseURL uses http:// to a host that is not loopback; use https or set AllowInsecureHTTP", ErrInvalidArgument)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// operation is one request of the API, described once and sent by do.
type operation struct {
	method string
	path   string // below the prefix, segments escaped; used in the URL, logs and errors
	query  string // encoded query without "?", "" for none
	link   string // a checked next_page link, sent instead of prefix+path+query
	body   []byte // JSON, nil for none

	// tokenAuth is the Authorization header of the token endpoint; set, it
	// replaces the management token and errors take the TokenError shape.
	tokenAuth string
}

func (c *Client) url(op *operation) string {
	if op.link != "" {
		return c.baseURL + op.link
	}
	u := c.baseURL + c.prefix + op.path
	if op.query != "" {
		u += "?" + op.query
	}
	return u
}

// do sends op and decodes a 2xx body into out (nil: the body is discarded).
// It attaches the management token and, when the service refuses it with
// 401, drops it and replays op once with a fresh token (op.body is a []byte,
// so the replay is exact). It returns the final status.
func (c *Client) do(ctx context.Context, op *operation, out any) (int, error) {
	x := c.exchanges.Get().(*exchange)
	defer x.done()
	x.start(ctx, op)
	for replay := true; ; replay = false {
		var tok *Token
		if op.tokenAuth == "" {
			var err error
			if tok, err = c.tokens.Token(ctx); err != nil {
				return 0, err
			}
		}
		resp, err := x.send(tok)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode == http.StatusUnauthorized && op.tokenAuth == "" && replay && c.invalidator != nil {
			discard(resp.Body)
			c.invalidator.Invalidate(x.token)
			c.logger.LogAttrs(ctx, slog.LevelInfo, "management: token refused, replaying with a new token",
				slog.String("method", op.method), slog.String("path", x.path))
			continue
		}
		return resp.StatusCode, x.readResponse(resp, out)
	}
}

// send makes the HTTP exchange of x.op through the retry layer, carrying
// tok (nil for the token endpoint), and returns the final response.
// x.token is then the token the last attempt carried.
func (x *exchange) send(tok *Token) (*http.Response, error) {
	c, op := x.client, &x.op
	x.token, x.attempts, x.wait = tok, 0, 0
	var body any
	if op.body != nil {
		body = op.body
	}
	req, err := retryablehttp.NewRequestWithContext(x.ctx, op.method, c.url(op), body)
	if err != nil {
		return nil, &TransportError{Method: op.method, Path: x.path, Err: withoutURL(err)}
	}
	h := req.Header
	if op.tokenAuth != "" {
		h["Authorization"] = []string{op.tokenAuth}
	} else {
		h["Authorization"] = c.authorization(tok)
	}
	h["Content-Type"] = c.jsonHeader
	h["Accept"] = c.jsonHeader
	h["User-Agent"] = c.userAgentHeader

	resp, err := x.rc.Do(req)
	if err != nil {
		// retryablehttp returns a bare context error when the context ends
		// during a wait; name the operation in it like every other failure.
		if _, ours := err.(*TransportError); !ours {
			err = &TransportError{Method: op.method, Path: x.path, Attempts: x.attempts, Err: withoutURL(err)}
		}
		return nil, err
	}
	return resp, nil
}

// readResponse decodes a 2xx body into out, or maps any other answer to an
// *APIError or *TokenError. It always closes the body.
func (x *exchange) readResponse(resp *http.Response, out any) error {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyRead))
		return x.op.errorFor(x.client.prefix, resp.StatusCode, body)
	}
	x.body = io.LimitedReader{R: resp.Body, N: x.client.maxBody + 1}
	if out == nil {
		_, err := io.Copy(io.Discard, &x.body)
		return x.checkBody(resp.StatusCode, err)
	}
	dec := json.NewDecoder(&x.body)
	dec.UseNumber()
	err := dec.Decode(out)
	if err == nil {
		// Anything but white space after the value means a body we do not understand.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if v, ok := out.(interface{ validate() error }); ok && err == nil {
		err = v.validate() // a 2xx body that is not what was asked for
	}
	if err == io.EOF {
		err = errors.New("empty body")
	}
	return x.checkBody(resp.StatusCode, err)
}

func (x *exchange) checkBody(status int, err error) error {
	if x.body.N <= 0 {
		err = fmt.Errorf("%w (limit %d bytes)", ErrResponseTooLarge, x.client.maxBody)
	}
	if err == nil {
		return nil
	}
	return &DecodeError{Method: x.op.method, Path: x.path, StatusCode: status, Err: err}
}

// discard reads what is left of a body (to reuse the connection) and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBodyRead))
	_ = body.Close()
}

// logPath is the path named in logs and errors: below the prefix, escaped,
// never with the query string.
func (op *operation) logPath(prefix string) string {
	if op.link == "" {
		return op.path
	}
	p, _, _ := strings.Cut(op.link, "?")
	if rest, ok := strings.CutPrefix(p, prefix); ok && (rest == "" || rest[0] == '/') {
		return rest
	}
	return p
}

// authHeader is the Authorization header value of one token.
type authHeader struct {
	tok         *Token
	tokenType   string
	accessToken string
	values      []string
}

// authorization returns the Authorization header that carries tok. The
// last one is kept, so a token used for many requests is formatted once; a
// TokenSource that changes a Token in place still gets a fresh header.
func (c *Client) authorization(tok *Token) []string {
	if a := c.lastAuth.Load(); a != nil && a.tok == tok && a.accessToken == tok.AccessToken && a.tokenType == tok.TokenType {
		return a.values
	}
	a := &authHeader{tok: tok, tokenType: tok.TokenType, accessToken: tok.AccessToken, values: []string{tok.header()}}
	c.lastAuth.Store(a)
	return a.values
}

// newExchange makes an exchange for c's pool. Its retryablehttp.Client has
// the exchange's hooks bound once, so a call allocates neither the client
// nor the six closures.
func (c *Client) newExchange() any {
	x := &exchange{client: c}
	x.rc = retryablehttp.Client{
		HTTPClient:      c.httpClient,
		Logger:          nil, // ours logs, without URLs' query strings
		RetryWaitMin:    c.waitMin,
		RetryWaitMax:    c.waitMax,
		RetryMax:        c.maxRetries,
		RequestLogHook:  x.logAttempt,
		ResponseLogHook: x.logResponse,
		CheckRetry:      x.checkRetry,
		Backoff:         x.backoff,
		ErrorHandler:    x.giveUp,
		PrepareRetry:    x.prepareRetry,
	}
	return x
}
