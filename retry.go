package management

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// The retry policy. Every operation of this API is safe to repeat (reads,
// PATCH merges, associate answers 200 when the association exists), so
// connection failures, 429, 500, 502, 503 and 504 are retried; no other
// status is. Waits honour Retry-After on 429 and 503 (between RetryWaitMin
// and RetryWaitMax) and are otherwise exponential with full jitter between
// RetryWaitMin and RetryWaitMax. A wait that would pass the context's
// deadline is not taken: the last answer is returned at once.

// send makes req's HTTP exchange through the retry policy, with the
// Authorization header auth, and returns the final answer (any status) or
// a *TransportError. When tok is the management token that auth carries,
// each retry carries the token the source holds by then (it may have been
// refreshed during the wait), and send returns the token of the last
// attempt, for Client.do to drop after a 401.
func (c *Client) send(ctx context.Context, req *request, auth string, tok *Token) (*http.Response, *Token, error) {
	if err := c.pauses.wait(ctx, routeOf(req)); err != nil {
		return nil, nil, &TransportError{Method: req.method, Path: req.path, Err: err}
	}
	hr, err := retryablehttp.NewRequestWithContext(ctx, req.method, req.url, bodyOf(req))
	if err != nil {
		return nil, nil, &TransportError{Method: req.method, Path: req.path, Err: withoutURL(err)}
	}
	hr.Header.Set("Authorization", auth)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.userAgent)

	x := &exchange{client: c, req: req, token: tok}
	x.rc = retryablehttp.Client{
		HTTPClient:   c.httpClient,
		Logger:       nil, // x logs, without URLs' query strings
		RetryWaitMin: c.waitMin,
		RetryWaitMax: c.waitMax,
		RetryMax:     c.maxRetries,
		CheckRetry:   x.checkRetry,
		Backoff:      x.backoff,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	if tok != nil {
		x.rc.PrepareRetry = x.prepareRetry
	}
	resp, err := x.rc.Do(hr)
	if err != nil {
		if resp != nil {
			discard(resp.Body)
		}
		if _, ours := err.(*TransportError); !ours {
			err = &TransportError{Method: req.method, Path: req.path, Attempts: x.attempts, Err: withoutURL(err)}
		}
		return nil, nil, err
	}
	return resp, x.token, nil
}

// bodyOf is req's body as retryablehttp takes it: nil, not a nil []byte,
// for none.
func bodyOf(req *request) any {
	if req.body == nil {
		return nil
	}
	return req.body
}

// exchange is the state of one call of send; its methods are the hooks of
// the retryablehttp.Client made for that call (held here, so that the two
// are one allocation). retryablehttp hands Backoff
// no context (and no response when the connection failed), so the wait
// that checkRetry chose, knowing the deadline, is passed on here rather
// than on the request's context.
type exchange struct {
	rc       retryablehttp.Client // made for this call, its hooks bound to x
	client   *Client
	req      *request
	token    *Token // the management token the last attempt carried; nil for the token endpoint
	attempts int
	wait     time.Duration // chosen by checkRetry, taken by backoff
}

// checkRetry runs after every attempt: it counts and logs it, and decides
// whether to retry and after what wait.
func (x *exchange) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	x.attempts++
	x.req.attempts++
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	log := func(level slog.Level, msg string, extra ...slog.Attr) { x.log(ctx, level, msg, status, extra...) }
	log(slog.LevelDebug, "management: attempt")
	if resp != nil {
		x.noteDeprecation(ctx, resp.Header)
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			x.notePause(ctx, status, d)
		}
	}
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case !retryable(resp, err):
		return false, nil
	case x.attempts > x.client.maxRetries:
		log(slog.LevelInfo, "management: giving up")
		return false, nil
	}
	now := time.Now()
	deadline, _ := ctx.Deadline()
	// While the route is paused, the wait lasts until this attempt's turn;
	// a retry that gives up takes none.
	wait, giveUp := x.client.pauses.turn(routeOf(x.req), now, deadline, retryWait(x.client.waitMin, x.client.waitMax, x.attempts-1, resp, now))
	if giveUp {
		log(slog.LevelInfo, "management: not retrying, the wait would pass the deadline", slog.Duration("wait", wait))
		return false, nil
	}
	x.wait = wait
	x.req.waited += wait
	x.client.observeRetry(ctx, x.req, RetryInfo{Attempt: x.attempts, Status: status, Wait: wait})
	if err != nil {
		log(slog.LevelInfo, "management: retrying", slog.Duration("wait", wait), slog.String("error", withoutURL(err).Error()))
	} else {
		log(slog.LevelInfo, "management: retrying", slog.Duration("wait", wait))
	}
	return true, nil
}

// log writes one record about the attempt, if the logger wants it.
func (x *exchange) log(ctx context.Context, level slog.Level, msg string, status int, extra ...slog.Attr) {
	if !x.client.logger.Enabled(ctx, level) {
		return
	}
	attrs := append([]slog.Attr{slog.String("method", x.req.method), slog.String("path", x.req.path),
		slog.Int("status", status), slog.Int("attempt", x.attempts)}, extra...)
	x.client.logger.LogAttrs(ctx, level, msg, attrs...)
}

func (x *exchange) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	return x.wait
}

// prepareRetry gives a retry the token the source holds now, so that it
// never carries a token known to be stale.
func (x *exchange) prepareRetry(req *http.Request) error {
	tok, err := x.client.tokens.Token(req.Context())
	if err != nil {
		return err
	}
	if tok != x.token {
		req.Header = req.Header.Clone() // the previous attempt's request keeps its own
		req.Header.Set("Authorization", tok.header())
		x.token = tok
	}
	return nil
}

// retryable reports whether an attempt that ended with resp or err is worth
// another: connection failures (but not TLS verification failures, which a
// retry cannot mend), 429, 500, 502, 503 and 504.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		var unknownCA x509.UnknownAuthorityError
		var verify *tls.CertificateVerificationError
		var hostname x509.HostnameError
		return !errors.As(err, &unknownCA) && !errors.As(err, &verify) && !errors.As(err, &hostname)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryWait is the wait before retry number n (0 for the first retry).
func retryWait(min, max time.Duration, n int, resp *http.Response, now time.Time) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return clamp(d, min, max)
		}
	}
	ceiling := max
	if n < 32 && min<<n > 0 && min<<n < max {
		ceiling = min << n
	}
	if ceiling <= min {
		return min
	}
	return min + rand.N(ceiling-min+1)
}

func clamp(d, lo, hi time.Duration) time.Duration {
	return min(max(d, lo), hi)
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at.Sub(now), true
	}
	return 0, false
}

// withoutURL drops the URL that *url.Error prints (net/http and
// retryablehttp print it whole, query string included) and keeps the cause.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// noteDeprecation logs, once per route and Client, an answer that says its
// route is deprecated (Deprecation, RFC 9745) or will go away (Sunset, RFC
// 8594), so that the news reaches whoever reads the logs before the route
// is gone.
func (x *exchange) noteDeprecation(ctx context.Context, h http.Header) {
	deprecation, sunset := h.Get("Deprecation"), h.Get("Sunset")
	if deprecation == "" && sunset == "" {
		return
	}
	key := routeOf(x.req)
	if _, seen := x.client.deprecated.LoadOrStore(key, struct{}{}); seen {
		return
	}
	x.client.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service says this route is deprecated",
		slog.String("method", key.method), slog.String("route", key.route),
		slog.String("deprecation", truncate(deprecation, 64)), slog.String("sunset", truncate(sunset, 64)))
}
