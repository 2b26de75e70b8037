package management

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// The retry policy. Every operation of this API is safe to repeat (reads,
// PATCH merges, associate answers 200 when the association exists), so
// connection failures, 429, 500, 502, 503 and 504 are retried; no other
// status is. A POST or PATCH of Client.Do, to an endpoint the SDK does not
// know, is the exception: it is retried only when it cannot have reached
// the service (see reached). Waits honour Retry-After on 429 and 503
// (between RetryWaitMin and RetryWaitMax) and are otherwise exponential
// with full jitter between RetryWaitMin and RetryWaitMax. A wait that
// would pass the context's deadline is not taken: the last answer is
// returned at once.
//
// This file holds the policy and the waits; Client.send (client.go) is the
// loop that applies them. A 429 or 503 with Retry-After also pauses its
// route for the other calls (routePauses, below).

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

// reached reports whether the request of an attempt that ended with resp
// or err may have reached the service, which may then have acted on it:
// any answer but 429 (the service did nothing; a 401 is replayed before
// this is asked), and any failure but one that made no connection at all.
func reached(resp *http.Response, err error) bool {
	if err != nil {
		return !unconnected(err)
	}
	return resp.StatusCode != http.StatusTooManyRequests
}

// unconnected reports whether err says that no connection was made: the
// name did not resolve, the connection was refused, or the proxy could
// not be reached. Nothing was written, so nothing reached the service.
func unconnected(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect")
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
	msg := withoutURL(err, "").Error()
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

// checkCall marks the context of an Authenticator's call to the service
// (see withCheckRetries): its retries stop once they cannot help the check,
// with no knob of their own.
type checkCall struct {
	breaker interface{ IsOpen() bool } // the authenticate breaker
	probe   bool                       // the call is the breaker's probe
}

type checkCallKey struct{}

// withCheckRetries returns ctx marking the call of an Authenticator whose
// breaker on the authenticate call is breaker; probe says that the call is
// its probe.
func withCheckRetries(ctx context.Context, breaker interface{ IsOpen() bool }, probe bool) context.Context {
	return context.WithValue(ctx, checkCallKey{}, &checkCall{breaker: breaker, probe: probe})
}

// held reports whether the call must not reach the service: the breaker
// opened after it started, and it is not the probe (one call at a time
// while the breaker is open). false for a call of no Authenticator.
func (c *checkCall) held() bool {
	return c != nil && !c.probe && c.breaker.IsOpen()
}

// checkRetries returns the mark of an Authenticator's call on ctx, nil
// for any other call.
func checkRetries(ctx context.Context) *checkCall {
	c, _ := ctx.Value(checkCallKey{}).(*checkCall)
	return c
}

// stop says why an Authenticator's call does not try again, "" when it
// may: once the breaker is open (the calls in flight as it opens, and its
// probe, which tells whether the service answers at all, one try each:
// the checks do not wait for them), or when another try, taking as long
// as the last, would end (at end) past the call's deadline (Timeout): its
// answer would come too late for the check. Other calls retry as the
// Client's policy says.
func (c *checkCall) stop(end, deadline time.Time) string {
	switch {
	case c == nil:
		return ""
	case c.breaker.IsOpen():
		return "the service is not called for a cool-down (the authenticate breaker is open)"
	case !deadline.IsZero() && end.After(deadline):
		return "another attempt would not end before the deadline"
	}
	return ""
}

// routePauses is the Client's memory of the service asking it to slow down.
// When an answer is 429 or 503 with Retry-After, every other call to the
// same route is about to get the same answer: until the announced time
// (capped at RetryWaitMax), new attempts and retries on that route wait,
// each bounded by its own context, then go out spread over the second after
// the pause (see spreadOffset) rather than all at once. A route is a method
// and a path template, so one proxy's 503 on one route does not hold the
// others; the token endpoint is a route of its own, and the requests of
// Client.Do are one route for each method (see routeOf).
type routePauses struct {
	paused atomic.Bool // any pause was ever set: calls skip the lock until then
	mu     sync.Mutex
	routes map[routeKey]*pauseState
}

// pauseState is one route's pause: until when, and how many attempts have
// been given a turn after it.
type pauseState struct {
	until time.Time
	turns uint64
}

// pauseSpread is how long after a pause the attempts it held go out. The
// release is a deliberate burst, not a capped rate: however many attempts
// were held, they go out within this second, evenly spread, so that a
// patient call waits at most this long past the pause whatever the others
// do; the service said how long to wait, not how fast to come back.
const pauseSpread = time.Second

// spreadOffset is when the k-th attempt held by a pause goes out, after
// the pause: the k-th point of the van der Corput sequence (k's bits
// reversed after the binary point: 0, 1/2, 1/4, 3/4, 1/8, ...) times
// pauseSpread. However many attempts there turn out to be, the first n are
// spread evenly over the second, every gap at most twice the even one, and
// none goes out a second or more past the pause.
func spreadOffset(k uint64) time.Duration {
	hi, _ := bits.Mul64(bits.Reverse64(k), uint64(pauseSpread))
	return time.Duration(hi)
}

// routeKey names a route: a method and a path template.
type routeKey struct{ method, route string }

// routeOf is req's route. A request of Client.Do has no template, and its
// path may hold values, which neither the pauses' map nor a log may keep
// (and which would grow the map without bound): the requests of Do share
// one route for each method, doRoute.
func routeOf(req *request) routeKey {
	if req.route == "" {
		return routeKey{req.method, doRoute}
	}
	return routeKey{req.method, req.route}
}

// doRoute is the route of the requests of Client.Do: "GET Client.Do" is
// every Do GET, whatever its path.
const doRoute = "Client.Do"

// turn returns how long an attempt on route must wait: at least floor, and
// while the route is paused until the attempt's turn after the pause. When
// the wait would reach deadline (unless it is zero), the attempt is refused
// and takes no turn, so that impatient calls do not push patient ones back.
func (p *routePauses) turn(route routeKey, now, deadline time.Time, floor time.Duration) (wait time.Duration, refused bool) {
	if !p.paused.Load() {
		return floor, !deadline.IsZero() && !now.Add(floor).Before(deadline)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	wait = floor
	st := p.routes[route]
	paused := st != nil && now.Before(st.until)
	if paused {
		wait = max(wait, st.until.Add(spreadOffset(st.turns)).Sub(now))
	}
	if !deadline.IsZero() && !now.Add(wait).Before(deadline) {
		return wait, true
	}
	if paused {
		st.turns++
	}
	return wait, false
}

// wait returns once route's pause, if any, is over and it is this
// attempt's turn, or at once with an error matching ErrRateLimited when ctx
// would end first. An attempt whose turn comes while a new pause holds the
// route (a 429 answered an attempt released before it) waits for a turn
// after that one.
func (p *routePauses) wait(ctx context.Context, route routeKey) error {
	if !p.paused.Load() {
		return nil // the common case, without reading the clock
	}
	deadline, _ := ctx.Deadline()
	for {
		d, refused := p.turn(route, time.Now(), deadline, 0)
		switch {
		case d <= 0:
			return nil
		case refused:
			return errorf("%w: the service asked for a pause of %v, past the context's deadline", ErrRateLimited, d.Round(time.Millisecond))
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// pause holds route for d from now; it reports whether this starts a pause
// (rather than extending one), so that a pause is logged once.
func (p *routePauses) pause(route routeKey, d time.Duration, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		p.routes = make(map[routeKey]*pauseState)
		p.paused.Store(true)
	}
	st := p.routes[route]
	until := now.Add(d)
	switch {
	case st == nil || !now.Before(st.until):
		p.routes[route] = &pauseState{until: until}
		return true
	case until.After(st.until):
		st.until = until
	}
	return false
}

// notePause records a 429 or 503 answer with Retry-After as a pause of its
// route, logged once per pause.
func (c *Client) notePause(ctx context.Context, req *request, status int, retryAfter time.Duration) {
	d := clamp(retryAfter, c.waitMin, c.waitMax)
	key := routeOf(req)
	if c.pauses.pause(key, d, time.Now()) {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service asked to slow down; pausing the route",
			slog.String("method", key.method), slog.String("route", key.route), slog.Int("status", status), slog.Duration("pause", d))
	}
}
