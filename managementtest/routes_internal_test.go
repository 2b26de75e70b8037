package managementtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// matchRoute tells the endpoint of a path whatever prefix precedes it,
// by the route whose path matches the most trailing segments.
func TestMatchRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		route        Route
		prefix       string
		values       map[string]string
	}{
		{"POST", "/v2/auth/token", RouteToken, "/v2", nil},
		{"POST", "/auth/token", RouteToken, "", nil},
		{"GET", "/p/users", RouteListUsers, "/p", nil},
		{"GET", "/p/users/u%2F1", RouteGetUser, "/p", map[string]string{"user_id": "u/1"}},
		{"GET", "/p/things/users", RouteGetThing, "/p", map[string]string{"thing_physical_id": "users"}},
		{"PATCH", "/p/things/authenticate", RouteUpdateThing, "/p", map[string]string{"thing_physical_id": "authenticate"}},
		{"POST", "/p/things/authenticate", RouteAuthenticate, "/p/things", nil},
		{"DELETE", "/a/b/users/u-1/associated_things/t%201", RouteDisassociate, "/a/b", map[string]string{"user_id": "u-1", "physical_id": "t 1"}},
		{"POST", "/users/u-1/associated_things", RouteAssociate, "", map[string]string{"user_id": "u-1"}},
	} {
		route, prefix, values, ok := matchRoute(tc.method, tc.path)
		if !ok || route != tc.route || prefix != tc.prefix || !cmp.Equal(values, tc.values) {
			t.Errorf("matchRoute(%s %s) = %q, %q, %v, %t; want %q, %q, %v", tc.method, tc.path, route, prefix, values, ok, tc.route, tc.prefix, tc.values)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/p/users/"}, {"GET", "/p/users//associated_things"}, {"PUT", "/p/things/t-1"}, {"GET", "/p/auth/token"}, {"GET", ""},
	} {
		if route, _, _, ok := matchRoute(tc.method, tc.path); ok {
			t.Errorf("matchRoute(%s %s) = %q; want no route", tc.method, tc.path, route)
		}
	}
}

// What changes data, by the route table: its writes, and any method but
// GET, HEAD and OPTIONS to a path that is no endpoint.
func TestChangesData(t *testing.T) {
	for _, spec := range routeTable {
		if got, want := changesData(spec.route.method(), spec.route), spec.kind == writeEndpoint; got != want {
			t.Errorf("changesData(%s) = %t, want %t", spec.route, got, want)
		}
	}
	for method, want := range map[string]bool{"GET": false, "HEAD": false, "OPTIONS": false, "POST": true, "PUT": true, "PATCH": true, "DELETE": true} {
		if got := changesData(method, ""); got != want {
			t.Errorf("changesData(%s, no route) = %t, want %t", method, got, want)
		}
	}
}

// The base path is trimmed at a segment's boundary only.
func TestBelowBase(t *testing.T) {
	for _, tc := range []struct {
		base, path, rest string
		ok               bool
	}{
		{"/api", "/api/users", "/users", true},
		{"/api", "/api", "", true},
		{"/api", "/apix/users", "", false},
		{"", "/users", "/users", true},
		{"/api", "/users", "", false},
	} {
		if rest, ok := belowBase(tc.base, tc.path); rest != tc.rest || ok != tc.ok {
			t.Errorf("belowBase(%q, %q) = %q, %t; want %q, %t", tc.base, tc.path, rest, ok, tc.rest, tc.ok)
		}
	}
}
