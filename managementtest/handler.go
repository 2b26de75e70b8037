package managementtest

import (
	"net/http"
	"strings"
)

// answer is a response computed under the server's lock: a status and a
// body to encode as JSON (nil: an empty body).
type answer struct {
	status int
	body   any
}

func errorAnswer(status int, reason, message string) answer {
	return answer{status: status, body: apiError{Reason: reason, ErrorMessage: message}}
}

// locked runs f under the server's lock and answers what it returns. The
// answer is encoded before unlocking, because it shares maps and pointers
// with the store, and written after, so that a slow client holds no lock.
func (s *Server) locked(w http.ResponseWriter, f func() answer) {
	status, body := s.encodeLocked(f)
	writeBody(w, status, body)
}

// encodeLocked runs f and encodes its answer under the server's lock. The
// deferred unlock keeps the server usable after a panic, which net/http
// recovers from.
func (s *Server) encodeLocked(f func() answer) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := f()
	if a.body == nil {
		return a.status, nil
	}
	return a.status, encode(a.body)
}

// serveHTTP is the whole fake: it finds the route, counts the request,
// applies injected faults, checks the management token and dispatches.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), s.escapedPrefix)
	if !ok {
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+r.URL.EscapedPath())
		return
	}
	route, params := match(r.Method, rest)
	switch route {
	case routeNotFound:
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+r.URL.EscapedPath())
		return
	case routeNoSuchMethod:
		writeError(w, http.StatusMethodNotAllowed, reasonNoSuchMethod, "method "+r.Method+" is not allowed at "+r.URL.EscapedPath())
		return
	}
	if s.applyFaults(w, r, route) {
		return
	}
	if route == RouteToken {
		s.issueToken(w, r)
		return
	}
	if !s.validManagementToken(r.Header.Get("Authorization")) {
		unauthorized(w)
		return
	}
	// The spec asks it of every request but the token one, bodiless GET and
	// DELETE included; the SDK always sends it.
	if !isJSON(r.Header.Get("Content-Type")) {
		validationError(w, "Content-Type must be application/json")
		return
	}
	s.dispatch(w, r, route, params)
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, route Route, params []string) {
	switch route {
	case RouteListUsers:
		s.listUsers(w, r)
	case RouteGetUser:
		s.getUser(w, params[0])
	case RouteAssociate:
		s.associate(w, r, params[0])
	case RouteDisassociate:
		s.disassociate(w, params[0], params[1])
	case RouteListThings:
		s.listThings(w, r)
	case RouteGetThing:
		s.getThing(w, params[0])
	case RouteUpdateThing:
		s.updateThing(w, r, params[0])
	case RouteAuthenticate:
		s.authenticate(w, r)
	}
}
