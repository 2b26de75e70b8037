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
// status is; a redirect (3xx) is neither followed nor retried. Waits honour
// Retry-After on 429 and 503 (kept between RetryWaitMin and RetryWaitMax)
// and are otherwise exponential with full jitter between RetryWaitMin and
// RetryWaitMax. A wait that would pass the context's deadline is not taken:
// the last answer is returned at once.

// exchange is the state of one call through the retry layer. Its methods are
// the retryablehttp hooks; they run on the caller's goroutine, one at a time.
// Exchanges are pooled per Client (see Client.newExchange); start and done
// bracket each use.
type exchange struct {
	rc retryablehttp.Client // hooks bound to this exchange

	ctx      context.Context // the caller's; held only during the call
	client   *Client
	op       operation   // a copy, so that the caller's does not escape
	path     string      // for logs and errors
	body     limitedBody // of a 2xx answer
	token    *Token      // the management token the last attempt carried
	attempts int
	wait     time.Duration // chosen by checkRetry, taken by backoff
}

func (x *exchange) start(ctx context.Context, op *operation) {
	x.ctx, x.op = ctx, *op
	x.path = op.logPath(x.client.prefix)
}

// done clears what the call held and returns x to its Client's pool.
func (x *exchange) done() {
	x.ctx, x.op, x.token, x.path = nil, operation{}, nil, ""
	x.body.reset(nil, 0, false)
	x.client.exchanges.Put(x)
}

func (x *exchange) logAttempt(_ retryablehttp.Logger, _ *http.Request, n int) {
	x.attempts = n + 1
	x.client.logger.LogAttrs(x.ctx, slog.LevelDebug, "management: request",
		slog.String("method", x.op.method), slog.String("path", x.path), slog.Int("attempt", x.attempts))
}

func (x *exchange) logResponse(_ retryablehttp.Logger, resp *http.Response) {
	x.client.logger.LogAttrs(x.ctx, slog.LevelDebug, "management: response",
		slog.String("method", x.op.method), slog.String("path", x.path),
		slog.Int("status", resp.StatusCode), slog.Int("attempt", x.attempts))
}

func (x *exchange) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if !retryable(resp, err) {
		return false, nil
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	if x.attempts > x.client.maxRetries {
		x.client.logger.LogAttrs(ctx, slog.LevelInfo, "management: giving up",
			slog.String("method", x.op.method), slog.String("path", x.path),
			slog.Int("status", status), slog.Int("attempt", x.attempts))
		return false, nil
	}
	wait := retryWait(x.client.waitMin, x.client.waitMax, x.attempts-1, resp, time.Now())
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		x.client.logger.LogAttrs(ctx, slog.LevelInfo, "management: not retrying, the wait would pass the deadline",
			slog.String("method", x.op.method), slog.String("path", x.path),
			slog.Int("status", status), slog.Int("attempt", x.attempts), slog.Duration("wait", wait))
		return false, nil
	}
	x.wait = wait
	attrs := []slog.Attr{
		slog.String("method", x.op.method), slog.String("path", x.path),
		slog.Int("status", status), slog.Int("attempt", x.attempts), slog.Duration("wait", wait),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", withoutURL(err).Error()))
	}
	x.client.logger.LogAttrs(ctx, slog.LevelInfo, "management: retrying", attrs...)
	return true, nil
}

func (x *exchange) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	return x.wait
}

// giveUp is retryablehttp's ErrorHandler. A final response is handed back
// so that its body becomes an *APIError; a failure without one becomes a
// *TransportError whose text holds no URL.
func (x *exchange) giveUp(resp *http.Response, err error, attempts int) (*http.Response, error) {
	if err == nil && resp != nil {
		return resp, nil
	}
	if resp != nil {
		discard(resp.Body)
	}
	return nil, &TransportError{Method: x.op.method, Path: x.path, Attempts: attempts, Err: withoutURL(err)}
}

// prepareRetry re-reads the cached token so that a retry never carries a
// token known to be stale (the cache may have refreshed it meanwhile).
func (x *exchange) prepareRetry(req *http.Request) error {
	if x.op.tokenAuth != "" {
		return nil
	}
	tok, err := x.client.tokens.Token(req.Context())
	if err != nil {
		return err
	}
	if tok != x.token {
		req.Header = req.Header.Clone() // the previous attempt's request keeps its own
		req.Header["Authorization"] = []string{tok.header()}
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
