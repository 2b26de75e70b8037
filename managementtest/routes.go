package managementtest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// A Route names one endpoint of the API, as "<METHOD> <path below the
// prefix>" with the spec's parameter names. Requests counts requests per
// Route, FailNext, FailNextWith, FailNextFor and DelayNext inject faults
// per Route, and Log tells which Route each request reached.
//
// A Route is also the net/http.ServeMux pattern the fake routes with.
type Route string

// The endpoints of the API.
const (
	RouteToken        Route = "POST /auth/token"
	RouteListUsers    Route = "GET /users" // first and further pages
	RouteGetUser      Route = "GET /users/{user_id}"
	RouteAssociate    Route = "POST /users/{user_id}/associated_things"
	RouteDisassociate Route = "DELETE /users/{user_id}/associated_things/{physical_id}"
	RouteListThings   Route = "GET /things" // first and further pages
	RouteGetThing     Route = "GET /things/{thing_physical_id}"
	RouteUpdateThing  Route = "PATCH /things/{thing_physical_id}"
	RouteAuthenticate Route = "POST /authenticate"
)

// The reasons of the fake's answers to requests that reach no endpoint
// (the spec has none for them).
const (
	reasonNoRoute      = "MANAGEMENTTEST.NO_SUCH_ENDPOINT"
	reasonNoSuchMethod = "MANAGEMENTTEST.METHOD_NOT_ALLOWED"
)

// knownRoute panics unless r is one of the Route constants, so that a
// misspelt route in a test fails loudly instead of never matching.
func (s *service) knownRoute(r Route, caller string) {
	if !slices.Contains(s.routes, r) {
		panic("managementtest: " + caller + ": unknown route " + string(r) + "; use one of the Route constants")
	}
}

// method returns the HTTP method of r.
func (r Route) method() string {
	m, _, _ := strings.Cut(string(r), " ")
	return m
}

// params returns the names of r's path values, in order.
func (r Route) params() []string {
	var names []string
	for _, seg := range strings.Split(string(r), "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(name, "}"))
		}
	}
	return names
}

// pathValues returns the path values of a request the mux routed to route.
func pathValues(r *http.Request, route Route) map[string]string {
	names := route.params()
	if len(names) == 0 {
		return nil
	}
	values := make(map[string]string, len(names))
	for _, name := range names {
		values[name] = r.PathValue(name)
	}
	return values
}

// below returns a shallow copy of r whose path is the part below the
// prefix, or false when r's path is not below the prefix or holds an
// empty segment. The copy's path is one ServeMux takes as it is: the mux
// cleans paths and redirects to the clean one, where the fake answers
// 404 to an empty segment and takes "." and ".." as identifiers (ids are
// path-escaped, and escaping keeps dots). So dot segments are escaped,
// which the mux unescapes into path values, as it does "%2F".
func (s *service) below(r *http.Request) (*http.Request, bool) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), s.escapedPrefix)
	if !ok || !strings.HasPrefix(rest, "/") {
		return nil, false
	}
	segs := strings.Split(rest[1:], "/")
	for i, seg := range segs {
		switch seg {
		case "":
			return nil, false
		case ".", "..":
			segs[i] = strings.ReplaceAll(seg, ".", "%2E")
		}
	}
	escaped := "/" + strings.Join(segs, "/")
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, false
	}
	in := new(http.Request)
	*in = *r
	in.URL = new(url.URL)
	*in.URL = *r.URL
	in.URL.Path, in.URL.RawPath = path, escaped
	return in, true
}

// allowedMethods returns the methods that have an endpoint at the path of
// in (a request from below), sorted; none when the path is no endpoint.
// HEAD is not among them: ServeMux lets GET patterns take HEAD, the fake
// does not, as the spec has no HEAD.
func (s *service) allowedMethods(in *http.Request) []string {
	probe := *in
	var allow []string
	for _, m := range s.methods {
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); strings.HasPrefix(pattern, m+" ") {
			allow = append(allow, m)
		}
	}
	return allow
}
