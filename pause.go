package management

import (
	"cmp"
	"context"
	"log/slog"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// routePauses is the Client's memory of the service asking it to slow down.
// When an answer is 429 or 503 with Retry-After, every other call to the
// same route is about to get the same answer: until the announced time
// (capped at RetryWaitMax), new attempts and retries on that route wait,
// each bounded by its own context, then go out spread over the second after
// the pause (see spreadOffset) rather than all at once. A route is a method
// and a path template, so one proxy's 503 on one route does not hold the
// others; the token endpoint is a route of its own.
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

// routeOf is req's route; the path stands in for a request without a template.
func routeOf(req *request) routeKey {
	return routeKey{req.method, cmp.Or(req.route, req.path)}
}

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
func (x *exchange) notePause(ctx context.Context, status int, retryAfter time.Duration) {
	c := x.client
	d := clamp(retryAfter, c.waitMin, c.waitMax)
	key := routeOf(x.req)
	if c.pauses.pause(key, d, time.Now()) {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "management: the service asked to slow down; pausing the route",
			slog.String("method", key.method), slog.String("route", key.route), slog.Int("status", status), slog.Duration("pause", d))
	}
}
