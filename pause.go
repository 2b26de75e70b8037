package management

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// routePauses is the Client's memory of the service asking it to slow down.
// When an answer is 429 or 503 with Retry-After, every other call to the
// same route is about to get the same answer: until the announced time
// (capped at RetryWaitMax), new attempts and retries on that route wait,
// each bounded by its own context, then go out one after the other (see
// pauseSlots) rather than all at once. A route is a method and a path template, so one proxy's 503 on
// one route does not hold the others; the token endpoint is a route of its
// own.
type routePauses struct {
	paused atomic.Bool // any pause was ever set: calls skip the lock until then
	mu     sync.Mutex
	routes map[routeKey]*pauseState
}

// pauseState is one route's pause: until when, how long it was, and how
// many attempts have been given a slot after it.
type pauseState struct {
	until  time.Time
	length time.Duration
	slots  int
}

// pauseSlots is how many attempts a pause's length lets out, one after the
// other, once it ends: the service said how long to wait, not how fast to
// come back, so attempts resume at a rate that a service answering a few
// hundred requests a second takes without another 429, rather than all at
// once. The first attempt goes at the end of the pause exactly.
const pauseSlots = 100

// routeKey names a route: a method and a path template.
type routeKey struct{ method, route string }

// routeOf is req's route; the path stands in for a request without a template.
func routeOf(req *request) routeKey {
	return routeKey{req.method, cmp.Or(req.route, req.path)}
}

// slot returns how long an attempt on route must wait, if the route is
// paused: until the next free slot after the pause.
func (p *routePauses) slot(route routeKey, now time.Time) (time.Duration, bool) {
	if !p.paused.Load() {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.routes[route]
	if st == nil || !now.Before(st.until) {
		return 0, false
	}
	at := st.until.Add(time.Duration(st.slots) * st.length / pauseSlots)
	st.slots++
	return at.Sub(now), true
}

// wait returns once route's pause, if any, is over and it is this
// attempt's turn, or at once with an error matching ErrRateLimited when ctx
// would end first.
func (p *routePauses) wait(ctx context.Context, route routeKey) error {
	if !p.paused.Load() {
		return nil // the common case, without reading the clock
	}
	d, ok := p.slot(route, time.Now())
	if !ok {
		return nil
	}
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
		p.routes[route] = &pauseState{until: until, length: d}
		return true
	case until.After(st.until):
		st.until, st.length = until, d
	}
	return false
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
