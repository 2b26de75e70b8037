package management

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
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
	baseURL     string   // scheme://host[:port][/path], no trailing slash
	basePath    string   // the path of baseURL, for checking next_page links
	prefix      string
	tokens      TokenSource
	invalidator interface{ Invalidate(*Token) } // nil when tokens cannot drop a refused token
	httpClient  *http.Client
	logger      *slog.Logger
	observer    *Observer // nil: nothing observed
	maxRetries  int
	waitMin     time.Duration
	waitMax     time.Duration
	unsetMarker string
	maxBody     int64
	userAgent   string
	pauses      routePauses // routes the service asked to slow down (see pause.go)
	deprecated  sync.Map    // routeKey → struct{}: routes whose deprecation was logged

	// creds are the client credentials as an answer may echo them: the
	// secret, "id:secret" and the Basic header value; nil with a
	// TokenSource. Every error's texts are redacted of them (redact.go).
	creds []string

	// seal seals what goes into a shared store; nil without a secret to
	// derive it from (see Config.SharedStoreKey).
	seal   *sealer
	stores storeGuard // bounds every call to a shared store (see store.go)
}

// NewClient validates cfg and returns a Client. It sends nothing: the first
// token is fetched by the first call that needs one.
func NewClient(cfg Config) (*Client, error) {
	base, err := checkBaseURL(cfg.BaseURL, cfg.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	if err := checkCredentials(cfg); err != nil {
		return nil, err
	}
	if cfg.RetryWaitMin < 0 || cfg.RetryWaitMax < 0 {
		return nil, errorf("%w: Config.RetryWaitMin and Config.RetryWaitMax must not be negative", ErrInvalidArgument)
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, errorf("%w: Config.MaxResponseBytes must not be negative", ErrInvalidArgument)
	}
	if !headerValueSafe(cfg.UserAgent) {
		// net/http would refuse every request: fail here, not on each call.
		return nil, errorf("%w: Config.UserAgent holds a control character, which an HTTP header cannot carry", ErrInvalidArgument)
	}
	if cfg.PathPrefix != "" && (!strings.HasPrefix(cfg.PathPrefix, "/") || strings.ContainsAny(cfg.PathPrefix, "?#")) {
		return nil, errorf("%w: Config.PathPrefix must be a path starting with /", ErrInvalidArgument)
	}
	c := &Client{
		base:        base,
		baseURL:     strings.TrimSuffix(base.String(), "/"),
		basePath:    strings.TrimSuffix(base.EscapedPath(), "/"),
		prefix:      strings.TrimSuffix(cmp.Or(cfg.PathPrefix, defaultPathPrefix), "/"),
		httpClient:  withoutRedirects(cfg.HTTPClient),
		logger:      cfg.Logger,
		observer:    cfg.Observer,
		maxRetries:  cfg.MaxRetries,
		waitMin:     cmp.Or(cfg.RetryWaitMin, defaultRetryWaitMin),
		waitMax:     cmp.Or(cfg.RetryWaitMax, defaultRetryWaitMax),
		unsetMarker: cmp.Or(cfg.UnsetMarker, defaultUnsetMarker),
		maxBody:     cmp.Or(cfg.MaxResponseBytes, defaultMaxResponseBytes),
	}
	if err := c.checkBaseWithoutPrefix(); err != nil {
		return nil, err
	}
	c.userAgent = strings.TrimSpace(cfg.UserAgent + " management-go/" + Version)
	if c.waitMin > c.waitMax {
		return nil, errorf("%w: Config.RetryWaitMin (%v) is longer than Config.RetryWaitMax (%v)", ErrInvalidArgument, c.waitMin, c.waitMax)
	}
	switch {
	case cfg.MaxRetries == 0:
		c.maxRetries = defaultMaxRetries
	case cfg.MaxRetries < 0:
		c.maxRetries = 0
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
	if err := c.setSharedStore(cfg); err != nil {
		return nil, err
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

// The request path. A call of the API goes, top to bottom:
//
//	UsersService.Get          builds the request with newRequest
//	Client.do                 attaches the management token, replays once after a 401
//	Client.send (retry.go)    one exchange through the retry policy
//	checkResponse             maps a non-2xx answer to an error
//	decode                    reads and checks a 2xx body
//
// The token endpoint (auth.go) shares newRequest, send and decode, and has
// its own credentials, error shape and no replay.

// request is one request of the API, built by newRequest or linkRequest.
type request struct {
	method string
	url    string
	path   string // below the prefix, escaped, without the query: names the request in logs and errors
	body   []byte // JSON; nil for none. A []byte, so that a retry or replay sends it again exactly.
	// secret is set for the requests whose answers can carry credentials
	// (the token endpoint issues tokens; authenticate's answer is about an
	// End User token): no error quotes their bodies.
	secret bool
	// credential is the End User's Authorization value that authenticate
	// checks: redacted from the answer's texts like the SDK's own.
	credential string

	// For an Observer: the route template and its parameters' raw values
	// (set with named), and what the exchanges counted.
	route    string
	values   [maxPathValues]string
	attempts int
	waited   time.Duration
}

// newRequest builds a request for path (below the prefix, segments
// escaped) with an encoded query ("" for none) and a JSON body.
func (c *Client) newRequest(method, path, query string, body []byte) *request {
	u := c.baseURL + c.prefix + path
	if query != "" {
		u += "?" + query
	}
	return &request{method: method, url: u, path: path, body: body}
}

// linkRequest builds the GET of a next_page link that checkPageLink
// accepted: appended to the base URL as it stands.
func (c *Client) linkRequest(link string) *request {
	p, _, _ := strings.Cut(link, "?")
	if rest, ok := strings.CutPrefix(p, c.prefix); ok && (rest == "" || rest[0] == '/') {
		p = rest
	}
	return &request{method: http.MethodGet, url: c.baseURL + link, path: p}
}

// do sends req with the management token and decodes a 2xx answer into out
// (nil: the body is read and dropped). When the service refuses the token
// with 401, do drops it and replays req once with a fresh one. It returns
// the final status.
func (c *Client) do(ctx context.Context, req *request, out any) (int, error) {
	if c == nil || c.tokens == nil {
		return 0, errNotNewClient
	}
	ctx, op := c.startOperation(ctx, req)
	status, err := c.replaying(ctx, req, out)
	c.endOperation(ctx, op, req, status, err)
	return status, err
}

// errNotNewClient is the answer of a Client that NewClient did not make
// (a zero Client, a nil *Client): it has no credentials to send.
var errNotNewClient = errorf("%w: the Client was not made by NewClient; use NewClient", ErrInvalidArgument)

// notNewClient is the panic of a service of a Client that NewClient did
// not make: a zero Client's Users and Things are nil, and have no Client.
const notNewClient = "management: Client.Users or Client.Things of a Client not made by NewClient; use NewClient"

// c returns the Client of s, or panics with notNewClient.
func (s *UsersService) c() *Client {
	if s == nil || s.client == nil {
		panic(notNewClient)
	}
	return s.client
}

// c returns the Client of s, or panics with notNewClient.
func (s *ThingsService) c() *Client {
	if s == nil || s.client == nil {
		panic(notNewClient)
	}
	return s.client
}

// redactor is the redactor of an answer to req got by an attempt that
// carried tok (nil for none): the client credentials, tok, and the End
// User's credential req checks. It is built only once an error is.
func (c *Client) redactor(req *request, tok *Token) *redactor {
	creds := make([]string, 0, len(c.creds)+4)
	creds = append(creds, c.creds...)
	if tok != nil {
		creds = append(creds, tok.header(), tok.AccessToken)
	}
	return newRedactor(append(creds, authForms(req.credential)...)...)
}

// replaying is do without the Observer. Every error it returns has passed
// the redactor of the attempt it comes from.
func (c *Client) replaying(ctx context.Context, req *request, out any) (int, error) {
	for replay := true; ; replay = false {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return 0, c.redactor(req, nil).error(err)
		}
		resp, used, err := c.send(ctx, req, tok.header(), tok)
		if err != nil {
			return 0, c.redactor(req, cmp.Or(used, tok)).error(err)
		}
		if resp.StatusCode == http.StatusUnauthorized && replay && c.invalidator != nil {
			discard(resp.Body)
			c.invalidator.Invalidate(used)
			c.logger.LogAttrs(ctx, slog.LevelInfo, "management: token refused, replaying with a new token",
				slog.String("method", req.method), slog.String("path", req.path))
			continue
		}
		if err := checkResponse(req, resp); err != nil {
			return resp.StatusCode, c.redactor(req, used).error(err)
		}
		if err := c.decode(req, resp, out); err != nil {
			return resp.StatusCode, c.redactor(req, used).error(err)
		}
		return resp.StatusCode, nil
	}
}

// checkResponse maps an answer that is not a 2xx to an *APIError: the
// {reason, error_message} shape (or the token endpoint's shape, should a
// management endpoint send it), or the start of the raw body. A redirect is
// never followed (see withoutRedirects). It closes the body of an answer it
// maps; 429 answers also match ErrRateLimited.
func checkResponse(req *request, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	body := readErrorBody(resp)
	if isRedirect(resp.StatusCode) {
		return redirectError(req, resp)
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
		e.Body = body[:min(len(body), maxErrorBody)]
	}
	return e
}

// readErrorBody reads the start of an error answer's body and closes it.
func readErrorBody(resp *http.Response) []byte {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyRead))
	return body
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
// is a *DecodeError that says what came back.
func (c *Client) decode(req *request, resp *http.Response, out any) error {
	defer resp.Body.Close()
	body := &limitedBody{r: resp.Body, left: c.maxBody, keep: !req.secret}
	err := decodeJSON(body, out)
	if body.over {
		err = errorf("%w (limit %d bytes)", ErrResponseTooLarge, c.maxBody)
	}
	if err == nil {
		return nil
	}
	e := &DecodeError{
		Method: req.method, Path: req.path, StatusCode: resp.StatusCode,
		ContentType: truncate(resp.Header.Get("Content-Type"), maxContentType),
		Body:        body.start(),
		Err:         err,
	}
	if req.secret {
		// Withheld, but measured, so that the text can say what came back.
		_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBodyRead))
		e.BodyLength = c.maxBody - body.left
		if resp.ContentLength > e.BodyLength {
			e.BodyLength = resp.ContentLength
		}
	}
	return e
}

func decodeJSON(r io.Reader, out any) error {
	if out == nil {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	if p, ok := out.(pageBody); ok { // a list's page (see pagination.go)
		return p.decode(r)
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		if err == io.EOF {
			if _, ok := out.(*emptyAnswer); ok {
				return nil
			}
			return errors.New("empty body")
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

// maxDecodeErrorBody bounds DecodeError.Body, and maxContentType
// DecodeError.ContentType: enough to recognise the answer.
const (
	maxDecodeErrorBody = 256
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
	keep  bool  // whether head records the body
	head  [maxDecodeErrorBody]byte
	nhead int
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.probe()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.keep {
		b.nhead += copy(b.head[b.nhead:], p[:n])
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
