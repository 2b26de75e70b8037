package managementtest_test

import (
	"net/http"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// A known path with another method is 405 with the methods it takes in
// Allow; HEAD is not one of them, though ServeMux routes HEAD to GET.
func TestMethodNotAllowedAllow(t *testing.T) {
	c := mtStart(t)
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/things/t-1", "GET, PATCH"},
		{"HEAD", "/things/t-1", "GET, PATCH"},
		{"HEAD", "/users", "GET"},
		{"GET", "/users/u-1/associated_things", "POST"},
		{"POST", "/users/u-1/associated_things/t-1", "DELETE"},
		{"GET", "/auth/token", "POST"},
	} {
		r := c.send(tc.method, mtPrefix+tc.path, c.apiHeader(), "")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tc.method, tc.path, r.status, r.header.Get("Allow"), tc.allow)
		}
		if tc.method == "HEAD" {
			continue // no body to check
		}
		r.wantError(t, http.StatusMethodNotAllowed, "MANAGEMENTTEST.METHOD_NOT_ALLOWED",
			"method "+tc.method+" is not allowed at "+mtPrefix+tc.path)
	}
	if got := c.srv.Requests(managementtest.RouteGetThing) + c.srv.Requests(managementtest.RouteListUsers); got != 0 {
		t.Errorf("refused requests reached a route %d times", got)
	}
}

// Paths that ServeMux would clean and redirect are answered as they are:
// an empty segment is no endpoint, a dot segment is an identifier.
func TestUncleanPathsNotRedirected(t *testing.T) {
	for name, c := range map[string]*mtConn{"network": mtStart(t), "in memory": mtMemory(t)} {
		t.Run(name, func(t *testing.T) {
			c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			c.srv.AddUser(management.UserDetails{User: management.User{ID: "."}})
			c.srv.AddUser(management.UserDetails{User: management.User{ID: ".."}})
			c.srv.AddUser(management.UserDetails{User: management.User{ID: "a/b"}})
			for path, id := range map[string]string{"/users/.": ".", "/users/..": "..", "/users/%2E": ".", "/users/a%2Fb": "a/b"} {
				r := c.api("GET", path, "")
				if r.status != http.StatusOK || mtField(t, r.json(t), "id") != id {
					t.Errorf("GET %s: %d %s; want 200 with User %q", path, r.status, r.body, id)
				}
			}
			c.api("GET", "/users/%2E%2E/associated_things/.", "").wantError(t, http.StatusMethodNotAllowed,
				"MANAGEMENTTEST.METHOD_NOT_ALLOWED", "method GET is not allowed at "+mtPrefix+"/users/%2E%2E/associated_things/.")
			for _, path := range []string{"", "/", "/users/", "/users/a%2Fb/", "//users", "/users/./", "/things/./t-1"} {
				r := c.api("GET", path, "")
				r.wantError(t, http.StatusNotFound, "MANAGEMENTTEST.NO_SUCH_ENDPOINT", "no endpoint at "+mtPrefix+path)
				if loc := r.header.Get("Location"); loc != "" {
					t.Errorf("GET %q: Location %q, want none", path, loc)
				}
			}
			if got := c.srv.Requests(managementtest.RouteGetUser); got != 4 {
				t.Errorf("Requests(RouteGetUser) = %d, want 4", got)
			}
		})
	}
}

// Identifiers are path-escaped: every route finds them unescaped.
func TestEscapedIdentifiers(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u/1 ?"}})
	c.srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t/1%"}})
	if r := c.api("POST", "/users/u%2F1%20%3F/associated_things", `{"physical_id":"t/1%","model":"m","firmware_version":"1"}`); r.status != http.StatusOK {
		t.Fatalf("associate: %d %s", r.status, r.body)
	}
	if th, _ := c.srv.Thing("t/1%"); len(th.AssociatedUsers) != 1 || th.AssociatedUsers[0].ID != "u/1 ?" {
		t.Fatalf("after associate: %+v", th.AssociatedUsers)
	}
	r := c.api("DELETE", "/users/u%2F1%20%3F/associated_things/t%2F1%25", "")
	if r.status != http.StatusOK {
		t.Fatalf("disassociate: %d %s", r.status, r.body)
	}
	if th, _ := c.srv.Thing("t/1%"); len(th.AssociatedUsers) != 0 {
		t.Errorf("after disassociate: %+v", th.AssociatedUsers)
	}
}
