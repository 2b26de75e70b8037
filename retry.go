package management

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
			return nil, tok, err
		}
		tok = t
		hr, err := c.newHTTPRequest(ctx, req, header)
		if err != nil {
			return nil, tok, &TransportError{Method: req.method, Path: req.path, Err: withoutURL(err)}
		}
		resp, err := c.sendOnce(ctx, req, hr, tok, why)
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
			return nil, tok, &TransportError{Method: req.method, Path: req.path, Attempts: n, Err: withoutURL(err)}
		}
		switch {
		case ctx.Err() != nil:
			return final(ctx.Err())
		case !retryable(ctx, resp, err):
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
		req.waited += wait
		c.observeRetry(ctx, req, RetryInfo{Attempt: n, Status: status, Wait: wait})
		if err != nil {
			text := escape(c.redactor(req, tok).text(withoutURL(err).Error()))
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
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, bodyOf(req))
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
	if !c.observesAttempts() {
		return c.httpClient.Do(hr)
	}
	op, a := req.operation(), c.attempt(req, resent, why)
	if actx := c.startAttempt(ctx, op, a, hr); actx != ctx {
		hr = hr.WithContext(actx)
		ctx = actx
	}
	resp, err := c.httpClient.Do(hr)
	c.doneAttempt(ctx, op, a, req, tok, resp, err)
	return resp, err
}

// bodyOf is req's body as a reader net/http can rewind (it sets GetBody
// for a *bytes.Reader); nil for none.
func bodyOf(req *request) io.Reader {
	if req.body == nil {
		return nil
	}
	return bytes.NewReader(req.body)
}

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
	attrs := append([]slog.Attr{slog.String("method", req.method), slog.String("path", req.path),
		slog.Int("status", status), slog.Int("attempt", n)}, extra...)
	c.logger.LogAttrs(ctx, level, msg, attrs...)
}

// noteAnswer notes what an answer says beyond its status: that its route
// is deprecated, or that the service asks the route to pause.
func (c *Client) noteAnswer(ctx context.Context, req *request, tok *Token, resp *http.Response) {
	c.noteDeprecation(ctx, req, tok, resp.Header)
	if status := resp.StatusCode; status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			c.notePause(ctx, req, status, d)
		}
	}
}

// retryable reports whether an attempt that ended with resp or err is worth
// another: 429, 500, 502, 503 and 504, and the connection failures that
// retryablehttp's policy retries (not a TLS verification failure, an
// unsupported scheme or a header net/http refused, which a retry cannot
// mend), but not a request net/http refused to write.
func retryable(ctx context.Context, resp *http.Response, err error) bool {
	if err != nil {
		retry, _ := retryablehttp.DefaultRetryPolicy(ctx, nil, err)
		return retry && !refusedToSend(err)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// refusedToSend reports whether net/http refused to send the request at
// all for a reason retryablehttp's policy does not know (a method or URL it
// cannot write) or a TLS verification failure it does not recognise (one
// wrapped by a RoundTripper): the same request would fail again.
func refusedToSend(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	var hostname x509.HostnameError
	if errors.As(err, &unknownCA) || errors.As(err, &verify) || errors.As(err, &hostname) {
		return true
	}
	msg := withoutURL(err).Error()
	for _, s := range []string{"net/http: invalid method", "http: no Host in request URL", "net/http: nil Request"} {
		if strings.Contains(msg, s) {
			return true
		}
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
	// retryablehttp's backoff without an answer: min doubled n times,
	// at most max.
	ceiling := retryablehttp.DefaultBackoff(min, max, n, nil)
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
func (c *Client) noteDeprecation(ctx context.Context, req *request, tok *Token, h http.Header) {
	deprecation, sunset := h.Get("Deprecation"), h.Get("Sunset")
	if deprecation == "" && sunset == "" {
		return
	}
	key := routeOf(req)
	if _, seen := c.deprecated.LoadOrStore(key, struct{}{}); seen {
		return
	}
	r := c.redactor(req, tok) // the values come from outside
	c.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service says this route is deprecated",
		slog.String("method", key.method), slog.String("route", key.route),
		slog.String("deprecation", escape(truncate(r.text(deprecation), 64))), slog.String("sunset", escape(truncate(r.text(sunset), 64))))
}
