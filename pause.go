package management

import (
	"cmp"
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// routePauses is the Client's memory of the service asking it to slow down.
// When an answer is 429 or 503 with Retry-After, every other call to the
// same route is about to get the same answer: until the announced time
// (capped at RetryWaitMax), new attempts on that route wait, each bounded by
// its own context, then go out spread over a short interval rather than all
// at once. A route is a method and a path template, so one proxy's 503 on
// one route does not hold the others; the token endpoint is a route of its
// own.
type routePauses struct {
	paused atomic.Bool // any pause was ever set: calls skip the lock until then
	mu     sync.Mutex
	until  map[routeKey]time.Time
}

// routeKey names a route: a method and a path template.
type routeKey struct{ method, route string }

// routeOf is req's route; the path stands in for a request without a template.
func routeOf(req *request) routeKey {
	return routeKey{req.method, cmp.Or(req.route, req.path)}
}

// maxPauseSpread bounds how far past a pause's end the waiting attempts
// are spread.
const maxPauseSpread = time.Second

// wait returns once route's pause, if any, is over, or at once with an
// error matching ErrRateLimited when ctx would end first.
func (p *routePauses) wait(ctx context.Context, route routeKey) error {
	if !p.paused.Load() {
		return nil
	}
	p.mu.Lock()
	until, ok := p.until[route]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	d += rand.N(min(d/4, maxPauseSpread) + 1) // no thundering herd at the end
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return errorf("%w: the service asked for a pause of %v, past the context's deadline", ErrRateLimited, d.Round(time.Millisecond))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pause holds route until now+d; it reports whether this starts a pause
// (rather than extending one), so that a pause is logged once.
func (p *routePauses) pause(route routeKey, d time.Duration, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = make(map[routeKey]time.Time)
		p.paused.Store(true)
	}
	prev, paused := p.until[route]
	if until := now.Add(d); until.After(prev) {
		p.until[route] = until
	}
	return !paused || !now.Before(prev)
}

// notePause records a 429 or 503 answer with Retry-After as a pause of its
// route, logged once per pause.
func (x *exchange) notePause(ctx context.Context, status int, retryAfter time.Duration) {
	c := x.client
	d := clamp(retryAfter, c.waitMin, c.waitMax)
	key := routeOf(x.req)
	if c.pauses.pause(key, d, time.Now()) {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service asked to slow down; pausing the route",
			slog.String("method", key.method), slog.String("route", key.route), slog.Int("status", status), slog.Duration("pause", d))
	}
}
