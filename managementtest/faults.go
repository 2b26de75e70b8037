package managementtest

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/serviceconnect/management"
)

// Fault injection, for tests of code that must survive a failing or slow
// service. Faults are queued per Route and consumed one per request, in
// the order they were added; each request of a route first takes its
// pending delay (if any), then the first pending failure that applies to
// it (if any), before any other check, the token's included. Requests
// counts every request that reached a route, faulted or not.

// fault is a pending failure or delay of the next n requests of a route
// (of those with the path value id, when id is set).
type fault struct {
	n     int
	id    string
	resp  Response
	delay time.Duration
}

// faults are the pending faults per route. The Server's mutex guards them.
type faults struct {
	fail  map[Route][]*fault
	delay map[Route][]*fault
}

// take consumes one request's worth of the first pending fault of route
// that applies to a request with the given path values.
func take(q map[Route][]*fault, route Route, values map[string]string) *fault {
	pending := q[route]
	i := slices.IndexFunc(pending, func(f *fault) bool { return f.id == "" || hasValue(values, f.id) })
	if i < 0 {
		return nil
	}
	f := pending[i]
	if f.n--; f.n == 0 {
		q[route] = slices.Delete(pending, i, i+1)
	}
	return f
}

func hasValue(values map[string]string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// add queues f for route. s.mu must be held.
func add(q *map[Route][]*fault, route Route, f *fault) {
	if *q == nil {
		*q = make(map[Route][]*fault)
	}
	(*q)[route] = append((*q)[route], f)
}

// FailNext makes the next n requests of route fail with status (400 to
// 599), with a Retry-After header of retryAfter rounded up to whole
// seconds when retryAfter > 0. The body has the shape the route uses for
// errors: {error, error_description} for RouteToken (the spec's
// invalid_client for 401 and unsupported_grant_type for 400,
// temporarily_unavailable otherwise), else
// {reason, error_message} with the spec's reason for 400, 401 (with an
// empty message, as for an expired token) and 404, and
// "MANAGEMENTTEST.INJECTED_FAULT" for other statuses. For any other
// answer, use FailNextWith.
//
// FailNext panics on an unknown route, n < 1, a status outside 400 to 599
// or a negative retryAfter.
func (s *service) FailNext(route Route, n, status int, retryAfter time.Duration) {
	knownRoute(route, "FailNext")
	if n < 1 || status < 400 || status > 599 || retryAfter < 0 {
		panic(fmt.Sprintf("managementtest: FailNext(%s, %d, %d, %v): want n >= 1, a status from 400 to 599 and retryAfter >= 0", route, n, status, retryAfter))
	}
	s.FailNextWith(route, n, injected(route, status, retryAfter))
}

// FailNextWith makes the next n requests of route get exactly r: any
// status, headers and body, or an answer cut off (see Response). It
// panics on an unknown route, n < 1 or a Response that cannot be sent
// (see Response). The server keeps its own copy of r.
func (s *service) FailNextWith(route Route, n int, r Response) {
	knownRoute(route, "FailNextWith")
	s.addFailure(route, "", n, r, "FailNextWith")
}

// FailNextFor is FailNextWith for the requests of route with id among
// their path values only: FailNextFor(RouteGetThing, "th-1", 1, r) fails
// the next read of Thing th-1 and lets reads of other Things through
// (for RouteDisassociate, id is the User's or the Thing's). It panics on
// an unknown route, a route without path values, an empty id, n < 1 or a
// Response that cannot be sent.
func (s *service) FailNextFor(route Route, id string, n int, r Response) {
	knownRoute(route, "FailNextFor")
	if len(route.params()) == 0 || id == "" {
		panic(fmt.Sprintf("managementtest: FailNextFor(%s, %q): want a route with path values and a non-empty id", route, id))
	}
	s.addFailure(route, id, n, r, "FailNextFor")
}

func (s *service) addFailure(route Route, id string, n int, r Response, caller string) {
	if n < 1 {
		panic(fmt.Sprintf("managementtest: %s(%s, %d): want n >= 1", caller, route, n))
	}
	r.check(caller)
	s.mu.Lock()
	defer s.mu.Unlock()
	add(&s.faults.fail, route, &fault{n: n, id: id, resp: r.clone()})
}

// DelayNext makes the next n requests of route wait d before they are
// served. A request whose context ends during the wait gets no answer
// (the server stops; the client sees its context's error), nor does one
// still waiting when Close is called (see Close). It panics on an unknown
// route, n < 1 or d <= 0.
func (s *service) DelayNext(route Route, n int, d time.Duration) {
	knownRoute(route, "DelayNext")
	if n < 1 || d <= 0 {
		panic(fmt.Sprintf("managementtest: DelayNext(%s, %d, %v): want n >= 1 and d > 0", route, n, d))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	add(&s.faults.delay, route, &fault{n: n, delay: d})
}

// ClearFaults drops every pending failure and delay.
func (s *service) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faults{}
}

// Requests returns how many requests reached route so far, including
// refused and faulted ones. It panics on an unknown route.
func (s *service) Requests(route Route) int {
	knownRoute(route, "Requests")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[route]
}

// applyFaults applies the pending faults of a request to route with the
// given path values. It reports whether the request was answered (or
// abandoned) here.
func (s *service) applyFaults(w http.ResponseWriter, r *http.Request, route Route, values map[string]string) bool {
	s.mu.Lock()
	d := take(s.faults.delay, route, values)
	s.mu.Unlock()
	if d != nil && !s.wait(r, d.delay) {
		return true // the client left: there is no one to answer
	}
	s.mu.Lock()
	f := take(s.faults.fail, route, values)
	s.mu.Unlock()
	if f == nil {
		return false
	}
	f.resp.serve(w)
	return true
}

// wait sleeps d, or until the request's context ends; it reports whether
// the whole wait passed. When Close ends the wait, it drops the connection
// (http.ErrAbortHandler) rather than answer a request it did not serve.
func (s *service) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closed: // nil, never ready, for an in-memory server
		panic(http.ErrAbortHandler)
	}
}

// injected is the answer of FailNext.
func injected(route Route, status int, retryAfter time.Duration) Response {
	h := http.Header{"Content-Type": {"application/json"}}
	if retryAfter > 0 {
		secs := (retryAfter + time.Second - 1) / time.Second
		h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	var body any = tokenError{Error: injectedTokenCode(status), ErrorDescription: "managementtest: injected failure"}
	if route != RouteToken {
		reason, msg := injectedReason(status)
		body = apiError{Reason: reason, ErrorMessage: msg}
	}
	return Response{Status: status, Header: h, Body: string(encode(body))}
}

func injectedReason(status int) (reason, message string) {
	switch status {
	case http.StatusUnauthorized:
		return management.ReasonUnauthorized, ""
	case http.StatusBadRequest:
		return management.ReasonRequestValidation, "managementtest: injected failure"
	case http.StatusNotFound:
		return management.ReasonEntityNotFound, "managementtest: injected failure"
	}
	return "MANAGEMENTTEST.INJECTED_FAULT", "managementtest: injected failure"
}

func injectedTokenCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_client"
	case http.StatusBadRequest:
		return "unsupported_grant_type"
	}
	return "temporarily_unavailable"
}

// rateLimited answers 429 when the request is beyond WithRateLimit's rate.
func (s *service) rateLimited(w http.ResponseWriter) bool {
	if s.limiter == nil {
		return false
	}
	now := time.Now()
	r := s.limiter.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay == 0 {
		return false
	}
	r.CancelAt(now)
	s.mu.Lock()
	s.limited++
	s.mu.Unlock()
	limitedResponse(int(math.Ceil(delay.Seconds()))).serve(w)
	return true
}

// limitedResponse is the answer of a request beyond WithRateLimit's rate:
// 429 with a Retry-After of secs seconds.
func limitedResponse(secs int) Response {
	return Response{
		Status: http.StatusTooManyRequests,
		Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {strconv.Itoa(secs)}},
		Body:   string(encode(apiError{Reason: "MANAGEMENTTEST.RATE_LIMITED", ErrorMessage: "too many requests"})),
	}
}

// RateLimited is the number of requests answered 429 by WithRateLimit.
func (s *service) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}
