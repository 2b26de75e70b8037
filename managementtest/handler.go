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

// serveHTTP is the whole fake: it logs the request, strips the path
// prefix and lets the mux route the request. It answers the requests the
// mux would answer in plain text (404, 405) or redirect (unclean paths)
// itself, in the API's error shape.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	e, body := receive(r)
	in, ok := s.below(r)
	if !ok {
		s.record(e, "", nil)
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+r.URL.EscapedPath())
		return
	}
	// A match counts only for the pattern's own method: ServeMux routes
	// HEAD to GET patterns.
	if _, pattern := s.mux.Handler(in); !strings.HasPrefix(pattern, r.Method+" ") {
		s.record(e, "", nil)
		s.refuse(w, in, r.URL.EscapedPath())
		return
	}
	s.mux.ServeHTTP(w, withEntry(in, e, body))
}

// refuse answers a request that matched no route: 405 with an Allow
// header when the path has endpoints for other methods, 404 otherwise.
func (s *Server) refuse(w http.ResponseWriter, in *http.Request, escapedPath string) {
	allow := s.allowedMethods(in)
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, reasonNoRoute, "no endpoint at "+escapedPath)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, reasonNoSuchMethod, "method "+in.Method+" is not allowed at "+escapedPath)
}

// serveRoute serves one route: it logs and counts the request, applies
// injected faults, checks the management token and dispatches.
func (s *Server) serveRoute(route Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := pathValues(r, route)
		s.record(r.Context().Value(entryKey{}).(*Request), route, values)
		if s.applyFaults(w, r, route, values) || s.rateLimited(w) {
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
		// The spec asks it of every request but the token one, bodiless GET
		// and DELETE included; the SDK always sends it.
		if !isJSON(r.Header.Get("Content-Type")) {
			validationError(w, "Content-Type must be application/json")
			return
		}
		s.dispatch(w, r, route)
	})
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, route Route) {
	switch route {
	case RouteListUsers:
		s.listUsers(w, r)
	case RouteGetUser:
		s.getUser(w, r.PathValue("user_id"))
	case RouteAssociate:
		s.associate(w, r, r.PathValue("user_id"))
	case RouteDisassociate:
		s.disassociate(w, r.PathValue("user_id"), r.PathValue("physical_id"))
	case RouteListThings:
		s.listThings(w, r)
	case RouteGetThing:
		s.getThing(w, r.PathValue("thing_physical_id"))
	case RouteUpdateThing:
		s.updateThing(w, r, r.PathValue("thing_physical_id"))
	case RouteAuthenticate:
		s.authenticate(w, r)
	}
}
