package managementtest

import (
	"net/http"
	"net/url"
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

// endpointKind is what an endpoint does, as the recorder (which refuses
// writes and learns the token endpoint's answers), the replayer and the
// fidelity check (which follows lists and stages tokens) need to know.
type endpointKind uint8

const (
	readEndpoint         endpointKind = iota // reads one item
	listEndpoint                             // reads a page of a list
	writeEndpoint                            // changes the service's data
	tokenEndpoint                            // issues a management token; changes nothing
	authenticateEndpoint                     // judges an End User token; changes nothing
)

// routeSpec is a row of the route table.
type routeSpec struct {
	route Route
	kind  endpointKind
	// serve answers a request the mux routed to route, once the steps
	// every endpoint takes are done (see service.endpoint).
	serve func(s *service, w http.ResponseWriter, r *http.Request)
}

// routeTable is every endpoint, once: the fake's mux registers them in
// this order, and the recorder, the replayer, the cassette and the
// fidelity check tell a request's endpoint by it (matchRoute). Adding an
// endpoint is a constant above, a row here and its handler; a fidelity
// check learns what its answers show from seeders.
var routeTable = [...]routeSpec{
	{RouteToken, tokenEndpoint, (*service).issueToken},
	{RouteListUsers, listEndpoint, (*service).listUsers},
	{RouteGetUser, readEndpoint, func(s *service, w http.ResponseWriter, r *http.Request) { s.getUser(w, r.PathValue("user_id")) }},
	{RouteAssociate, writeEndpoint, func(s *service, w http.ResponseWriter, r *http.Request) { s.associate(w, r, r.PathValue("user_id")) }},
	{RouteDisassociate, writeEndpoint, func(s *service, w http.ResponseWriter, r *http.Request) {
		s.disassociate(w, r.PathValue("user_id"), r.PathValue("physical_id"))
	}},
	{RouteListThings, listEndpoint, (*service).listThings},
	{RouteGetThing, readEndpoint, func(s *service, w http.ResponseWriter, r *http.Request) {
		s.getThing(w, r.PathValue("thing_physical_id"))
	}},
	{RouteUpdateThing, writeEndpoint, func(s *service, w http.ResponseWriter, r *http.Request) {
		s.updateThing(w, r, r.PathValue("thing_physical_id"))
	}},
	{RouteAuthenticate, authenticateEndpoint, (*service).authenticate},
}

// kind returns what r is, and false when r is not in the route table.
func (r Route) kind() (endpointKind, bool) {
	for _, spec := range routeTable {
		if spec.route == r {
			return spec.kind, true
		}
	}
	return 0, false
}

// is reports whether r is an endpoint of kind k.
func (r Route) is(k endpointKind) bool {
	got, ok := r.kind()
	return ok && got == k
}

// changesData reports whether a request of method to route (a Route, or
// "" when it reaches none) changes the service's data: a write endpoint,
// or any method but GET, HEAD and OPTIONS to a path that is no endpoint
// (the token and authenticate requests are POSTs that change nothing).
func changesData(method string, route Route) bool {
	if route != "" {
		return route.is(writeEndpoint)
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// template returns the path of r, below the prefix, with its parameters
// in braces: "/users/{user_id}".
func (r Route) template() string {
	_, t, _ := strings.Cut(string(r), " ")
	return t
}

// matchRoute returns the Route that a request of method reaches at
// escapedPath, a path below the base URL's path, whatever path prefix
// comes before the endpoint's path: the route whose path matches the most
// segments at the end of escapedPath (a literal segment as it is, a
// parameter any segment but an empty one). It also returns the prefix,
// escaped ("" for none), and the path values, unescaped. ok is false when
// no route matches.
func matchRoute(method, escapedPath string) (route Route, prefix string, values map[string]string, ok bool) {
	segs := strings.Split(escapedPath, "/")
	best := -1
	for _, spec := range routeTable {
		if spec.route.method() != method {
			continue
		}
		tmpl := strings.Split(spec.route.template(), "/")[1:]
		at := len(segs) - len(tmpl)
		if len(tmpl) <= best || at < 1 || !segmentsMatch(tmpl, segs[at:]) {
			continue
		}
		route, best = spec.route, len(tmpl)
	}
	if best < 0 {
		return "", "", nil, false
	}
	at := len(segs) - best
	prefix = strings.Join(segs[:at], "/")
	if names := route.params(); len(names) > 0 {
		values = make(map[string]string, len(names))
		tmpl := strings.Split(route.template(), "/")[1:]
		for i, seg := range tmpl {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				v, err := url.PathUnescape(segs[at+i])
				if err != nil {
					v = segs[at+i]
				}
				values[strings.TrimSuffix(name, "}")] = v
			}
		}
	}
	return route, prefix, values, true
}

// segmentsMatch reports whether the path segments got match those of a
// route's template.
func segmentsMatch(tmpl, got []string) bool {
	for i, seg := range tmpl {
		if strings.HasPrefix(seg, "{") {
			if got[i] == "" {
				return false
			}
		} else if got[i] != seg {
			return false
		}
	}
	return true
}

// belowBase returns escapedPath without basePath (a base URL's path, with
// no trailing slash), and whether escapedPath is basePath or below it:
// the one place the base path is trimmed from a recorded path.
func belowBase(basePath, escapedPath string) (string, bool) {
	rest, ok := strings.CutPrefix(escapedPath, basePath)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "", false
	}
	return rest, true
}

// The reasons of the fake's answers to requests that reach no endpoint
// (the spec has none for them).
const (
	reasonNoRoute      = "MANAGEMENTTEST.NO_SUCH_ENDPOINT"
	reasonNoSuchMethod = "MANAGEMENTTEST.METHOD_NOT_ALLOWED"
)

// knownRoute panics unless r is one of the Route constants, so that a
// misspelt route in a test fails loudly instead of never matching.
func knownRoute(r Route, caller string) {
	if _, ok := r.kind(); !ok {
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
