package managementtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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

// locked runs f under the server's lock and encodes its answer before
// unlocking, because the answer shares maps and pointers with the store.
func (s *Server) locked(w http.ResponseWriter, f func() answer) {
	s.mu.Lock()
	a := f()
	var body []byte
	if a.body != nil {
		var err error
		if body, err = json.Marshal(a.body); err != nil {
			s.mu.Unlock()
			panic(fmt.Sprintf("managementtest: encoding a response: %v", err)) // seeding checks encodability
		}
	}
	s.mu.Unlock()
	if body == nil {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(a.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(body)
}

// serveHTTP is the whole fake: it finds the route, counts the request,
// applies injected faults, checks the management token and dispatches.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), s.escapedPrefix())
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
	if (r.Method == http.MethodPost || r.Method == http.MethodPatch) && !isJSON(r.Header.Get("Content-Type")) {
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

// escapedPrefix is the path prefix as it appears in a request's escaped path.
func (s *Server) escapedPrefix() string {
	return (&url.URL{Path: s.opts.pathPrefix}).EscapedPath()
}
