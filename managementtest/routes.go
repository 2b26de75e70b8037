package managementtest

import (
	"net/http"
	"net/url"
	"strings"
)

// A Route names one endpoint of the API, as "<METHOD> <path below the
// prefix>" with the spec's parameter names. Requests counts requests per
// Route, and FailNext and DelayNext inject faults per Route.
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

// What match answers for a path that is no endpoint, and the reasons of
// the fake's answers to such requests (the spec has none for them).
const (
	routeNotFound      Route = ""
	routeNoSuchMethod  Route = "405"
	reasonNoRoute            = "MANAGEMENTTEST.NO_SUCH_ENDPOINT"
	reasonNoSuchMethod       = "MANAGEMENTTEST.METHOD_NOT_ALLOWED"
)

var routes = []Route{
	RouteToken, RouteListUsers, RouteGetUser, RouteAssociate, RouteDisassociate,
	RouteListThings, RouteGetThing, RouteUpdateThing, RouteAuthenticate,
}

// knownRoute panics unless r is one of the Route constants, so that a
// misspelt route in a test fails loudly instead of never matching.
func knownRoute(r Route, caller string) {
	for _, k := range routes {
		if r == k {
			return
		}
	}
	panic("managementtest: " + caller + ": unknown route " + string(r) + "; use one of the Route constants")
}

// match finds the route of a path below the prefix (still escaped) and
// returns its unescaped parameters. It returns routeNoSuchMethod when the
// path exists for another method, routeNotFound when it does not exist.
func match(method, escapedPath string) (Route, []string) {
	segs, ok := segments(escapedPath)
	if !ok {
		return routeNotFound, nil
	}
	var route Route
	switch {
	case len(segs) == 2 && segs[0] == "auth" && segs[1] == "token":
		route = RouteToken
	case len(segs) == 1 && segs[0] == "authenticate":
		route = RouteAuthenticate
	case len(segs) == 1 && segs[0] == "users":
		route = RouteListUsers
	case len(segs) == 2 && segs[0] == "users":
		route = RouteGetUser
	case len(segs) == 3 && segs[0] == "users" && segs[2] == "associated_things":
		route = RouteAssociate
	case len(segs) == 4 && segs[0] == "users" && segs[2] == "associated_things":
		route = RouteDisassociate
	case len(segs) == 1 && segs[0] == "things":
		route = RouteListThings
	case len(segs) == 2 && segs[0] == "things" && method == http.MethodPatch:
		route = RouteUpdateThing
	case len(segs) == 2 && segs[0] == "things":
		route = RouteGetThing
	default:
		return routeNotFound, nil
	}
	if m, _, _ := strings.Cut(string(route), " "); m != method {
		return routeNoSuchMethod, nil
	}
	var params []string
	for i, s := range segs {
		if i%2 == 1 { // the odd segments are the identifiers
			params = append(params, s)
		}
	}
	return route, params
}

// segments splits an escaped path "/a/b%2Fc" into unescaped segments
// ["a", "b/c"], so that an identifier may hold any character. Empty
// segments are refused.
func segments(escapedPath string) ([]string, bool) {
	rest, ok := strings.CutPrefix(escapedPath, "/")
	if !ok || rest == "" {
		return nil, false
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil || u == "" {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}
