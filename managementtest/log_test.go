package managementtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// Log holds every request received, decoded, in order, with credentials
// redacted.
func TestLog(t *testing.T) {
	mtBoth(t, func(t *testing.T, c *mtConn) {
		c.srv.AddUser(management.UserDetails{User: management.User{ID: "u/1"}})
		euToken := c.srv.IssueEndUserToken("u/1")
		c.token = c.newToken()
		c.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 500})
		c.api("GET", "/users/u%2F1", "")
		c.api("GET", "/users?order_by=updatedAt&page=p1", "")
		c.api("PATCH", "/things/t-1", `{"name":"n","custom_settings":{"big":12345678901234567}}`)
		c.api("POST", "/authenticate", `{"access_token":"Bearer `+euToken+`"}`)
		c.api("POST", "/authenticate", `{"access_token":"`+euToken+`","client_secret":"`+c.srv.ClientSecret+`"}`)
		c.api("DELETE", "/nothing", "not json")
		c.api("DELETE", "/users", "")

		log := c.srv.Log()
		want := []managementtest.Request{
			{Method: "POST", Path: mtPrefix + "/auth/token", Route: managementtest.RouteToken,
				Body: map[string]any{"grant_type": "client_credentials"}},
			{Method: "GET", Path: mtPrefix + "/users/u%2F1", Route: managementtest.RouteGetUser,
				PathValues: map[string]string{"user_id": "u/1"}},
			{Method: "GET", Path: mtPrefix + "/users", Route: managementtest.RouteListUsers,
				Query: url.Values{"order_by": {"updatedAt"}, "page": {"p1"}}},
			{Method: "PATCH", Path: mtPrefix + "/things/t-1", Route: managementtest.RouteUpdateThing,
				PathValues: map[string]string{"thing_physical_id": "t-1"},
				Body:       map[string]any{"name": "n", "custom_settings": map[string]any{"big": json.Number("12345678901234567")}}},
			{Method: "POST", Path: mtPrefix + "/authenticate", Route: managementtest.RouteAuthenticate,
				Body: map[string]any{"access_token": "Bearer REDACTED"}},
			{Method: "POST", Path: mtPrefix + "/authenticate", Route: managementtest.RouteAuthenticate,
				Body: map[string]any{"access_token": "REDACTED", "client_secret": "REDACTED"}},
			{Method: "DELETE", Path: mtPrefix + "/nothing"},
			{Method: "DELETE", Path: mtPrefix + "/users"},
		}
		if diff := cmp.Diff(want, log, cmpopts.IgnoreFields(managementtest.Request{}, "Header")); diff != "" {
			t.Errorf("Log (-want +got):\n%s", diff)
		}
		if len(log) != len(want) {
			return
		}
		if got := log[0].Header.Get("Authorization"); got != "Basic REDACTED" {
			t.Errorf("token request Authorization = %q", got)
		}
		for _, r := range log[1:] {
			if got := r.Header.Get("Authorization"); got != "Bearer REDACTED" {
				t.Errorf("%s %s: Authorization = %q", r.Method, r.Path, got)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("%s %s: Content-Type = %q, want the header kept", r.Method, r.Path, got)
			}
		}
		printed := fmt.Sprintf("%v %+v %#v", log, log, log)
		for name, secret := range map[string]string{"management token": c.token, "End User token": euToken, "client secret": c.srv.ClientSecret} {
			if strings.Contains(printed, secret) {
				t.Errorf("the printed log holds the %s", name)
			}
		}
	})
}

// Log returns a copy: changing it changes nothing in the server.
func TestLogIsACopy(t *testing.T) {
	c := mtMemory(t)
	c.api("PATCH", "/things/t-1", `{"custom_settings":{"a":"b"}}`)
	first := c.srv.Log()
	last := &first[len(first)-1]
	last.Header.Set("X-Changed", "1")
	last.PathValues["thing_physical_id"] = "changed"
	last.Body.(map[string]any)["custom_settings"].(map[string]any)["a"] = "changed"
	first[0].Query = url.Values{"x": {"y"}}
	if diff := cmp.Diff(c.srv.Log(), append([]managementtest.Request(nil), c.srv.Log()...)); diff != "" {
		t.Fatal(diff) // Log is stable
	}
	again := c.srv.Log()[len(first)-1]
	if again.Header.Get("X-Changed") != "" || again.PathValues["thing_physical_id"] != "t-1" ||
		again.Body.(map[string]any)["custom_settings"].(map[string]any)["a"] != "b" {
		t.Errorf("the server's log changed with the copy: %+v", again)
	}
}

// Reset empties the server; a Client keeps working on it.
func TestReset(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(1))
	client := srv.Client()
	ctx := t.Context()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	euToken := srv.IssueEndUserToken("u-1")
	page, err := client.Users.ListPage(ctx, nil)
	if err != nil || page.NextPage == "" {
		t.Fatalf("ListPage: %+v, %v", page, err)
	}
	srv.FailNext(managementtest.RouteGetUser, 5, 500, 0)
	srv.DelayNext(managementtest.RouteListUsers, 5, 1)

	srv.Reset()

	if _, ok := srv.User("u-1"); ok {
		t.Error("User u-1 survived Reset")
	}
	if _, ok := srv.Thing("t-1"); ok {
		t.Error("Thing t-1 survived Reset")
	}
	if len(srv.Log()) != 0 || srv.Requests(managementtest.RouteListUsers) != 0 || srv.Requests(managementtest.RouteToken) != 0 {
		t.Errorf("after Reset: log %v, requests %d", srv.Log(), srv.Requests(managementtest.RouteListUsers))
	}
	if mtPanics(func() { srv.RevokeEndUserToken(euToken) }) == "" {
		t.Error("the End User token survived Reset")
	}
	// The Client's token is refused once, then renewed; faults are gone.
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	if u, err := client.Users.Get(ctx, "u-1"); err != nil || u.ID != "u-1" {
		t.Fatalf("Get after Reset: %v, %v", u, err)
	}
	if got := srv.Requests(managementtest.RouteToken); got != 1 {
		t.Errorf("token requests after Reset = %d, want 1", got)
	}
	if got := srv.Requests(managementtest.RouteGetUser); got != 2 {
		t.Errorf("GetUser requests = %d, want 2 (refused once, replayed)", got)
	}
	// Page links issued before are invalid.
	if _, err := client.Users.ListPage(ctx, &management.ListOptions{NextPage: page.NextPage}); !errors.Is(err, management.ErrValidation) {
		t.Errorf("old page link after Reset: %v, want ErrValidation", err)
	}
	// Options stay.
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}})
	if page, err := client.Users.ListPage(ctx, nil); err != nil || len(page.Items) != 1 {
		t.Errorf("page size after Reset: %+v, %v", page, err)
	}
}

// Requests, faults, Log and Reset may run at once.
func TestLogAndResetConcurrent(t *testing.T) {
	c := mtStart(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				_, _ = c.trySend("GET", mtPrefix+"/users", map[string]string{"Content-Type": "application/json"}, "")
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			c.srv.FailNextWith(managementtest.RouteListUsers, 1, managementtest.Response{Status: 500})
			_ = c.srv.Log()
			c.srv.Reset()
		}
	})
	wg.Wait()
}

// %v and %#v of a Server hold no credential.
func TestServerPrintsNoSecret(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithCredentials("id", "s3cret-value"))
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	eu := srv.IssueEndUserToken("u-1")
	c := &mtConn{t: t, srv: srv, hc: &http.Client{Transport: srv.Transport()}}
	c.token = c.newToken()
	c.api("GET", "/users/u-1", "")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, srv)
		if strings.Contains(out, "s3cret-value") || strings.Contains(out, c.token) || strings.Contains(out, eu) {
			t.Errorf("%s of a Server = %q holds a credential", verb, out)
		}
	}
}
