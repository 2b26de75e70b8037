package managementtest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/serviceconnect/management"
)

// Fault injection, for tests of code that must survive a failing or slow
// service. Faults are queued per Route and consumed one per request, in
// the order they were added; each request of a route first takes its
// pending delay (if any), then its pending failure (if any), before any
// other check, the token's included. Requests counts every request that
// reached a route, faulted or not.

// fault is a pending failure or delay of the next n requests of a route.
type fault struct {
	n          int
	status     int
	retryAfter time.Duration
	delay      time.Duration
}

// faults are the pending faults per route. The Server's mutex guards them.
type faults struct {
	fail  map[Route][]*fault
	delay map[Route][]*fault
}

// take consumes one request's worth of the first pending fault of route.
func take(q map[Route][]*fault, route Route) *fault {
	pending := q[route]
	if len(pending) == 0 {
		return nil
	}
	f := pending[0]
	if f.n--; f.n == 0 {
		q[route] = pending[1:]
	}
	return f
}

// FailNext makes the next n requests of route fail with status (400 to
// 599), with a Retry-After header of retryAfter rounded up to whole
// seconds when retryAfter > 0. The body has the shape the route uses for
// errors: {error, error_description} for RouteToken (the spec's
// invalid_client for 401 and unsupported_grant_type for 400,
// temporarily_unavailable otherwise), else
// {reason, error_message} with the spec's reason for 400, 401 (with an
// empty message, as for an expired token) and 404, and
// "MANAGEMENTTEST.INJECTED_FAULT" for other statuses.
//
// FailNext panics on an unknown route, n < 1, a status outside 400 to 599
// or a negative retryAfter.
func (s *Server) FailNext(route Route, n, status int, retryAfter time.Duration) {
	knownRoute(route, "FailNext")
	if n < 1 || status < 400 || status > 599 || retryAfter < 0 {
		panic(fmt.Sprintf("managementtest: FailNext(%s, %d, %d, %v): want n >= 1, a status from 400 to 599 and retryAfter >= 0", route, n, status, retryAfter))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.fail == nil {
		s.faults.fail = make(map[Route][]*fault)
	}
	s.faults.fail[route] = append(s.faults.fail[route], &fault{n: n, status: status, retryAfter: retryAfter})
}

// DelayNext makes the next n requests of route wait d before they are
// served. A request whose context ends during the wait gets no answer
// (the server stops; the client sees its context's error), nor does one
// still waiting when Close is called (see Close). It panics on an unknown
// route, n < 1 or d <= 0.
func (s *Server) DelayNext(route Route, n int, d time.Duration) {
	knownRoute(route, "DelayNext")
	if n < 1 || d <= 0 {
		panic(fmt.Sprintf("managementtest: DelayNext(%s, %d, %v): want n >= 1 and d > 0", route, n, d))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.delay == nil {
		s.faults.delay = make(map[Route][]*fault)
	}
	s.faults.delay[route] = append(s.faults.delay[route], &fault{n: n, delay: d})
}

// ClearFaults drops every pending failure and delay.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faults{}
}

// Requests returns how many requests reached route so far, including
// refused and faulted ones. It panics on an unknown route.
func (s *Server) Requests(route Route) int {
	knownRoute(route, "Requests")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[route]
}

// applyFaults counts the request and applies its pending faults. It
// reports whether the request was answered (or abandoned) here.
func (s *Server) applyFaults(w http.ResponseWriter, r *http.Request, route Route) bool {
	s.mu.Lock()
	s.requests[route]++
	d := take(s.faults.delay, route)
	s.mu.Unlock()
	if d != nil && !s.wait(r, d.delay) {
		return true // the client left: there is no one to answer
	}
	s.mu.Lock()
	f := take(s.faults.fail, route)
	s.mu.Unlock()
	if f == nil {
		return false
	}
	if f.retryAfter > 0 {
		secs := (f.retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	if route == RouteToken {
		writeJSON(w, f.status, tokenError{Error: injectedTokenCode(f.status), ErrorDescription: "managementtest: injected failure"})
		return true
	}
	reason, msg := injectedReason(f.status)
	writeError(w, f.status, reason, msg)
	return true
}

// wait sleeps d, or until the request's context ends; it reports whether
// the whole wait passed. When Close ends the wait, it drops the connection
// (http.ErrAbortHandler) rather than answer a request it did not serve.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
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
