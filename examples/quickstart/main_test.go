package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestRunOffline runs the tour as `go run ./examples/quickstart` does on a
// machine without credentials: against the seeded fake, every operation.
func TestRunOffline(t *testing.T) {
	t.Setenv(management.EnvBaseURL, "")
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{"Ada Lovelace <ada@example.com>", "Associated a new Thing quickstart-", "Updated quickstart-",
		"The API cannot delete a Thing", "End User token: valid, User u-ada", "Made-up token: invalid"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tour's output lacks %q:\n%s", want, out.String())
		}
	}
}

const (
	realUsers  = 7
	realThings = 7
)

// realService starts the fake seeded with more Users and Things than the
// tour reads, each with personal data, in pages of 2, and points the
// environment at it as at a real service, with none of the tour's own
// variables set.
func realService(t *testing.T) *managementtest.Server {
	t.Helper()
	srv := managementtest.NewServer(managementtest.WithPageSize(2))
	t.Cleanup(srv.Close)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range realUsers {
		srv.AddUser(management.UserDetails{User: management.User{
			ID:        fmt.Sprintf("u-%d", i),
			Email:     management.Ptr(fmt.Sprintf("person%d@example.com", i)),
			FirstName: management.Ptr(fmt.Sprintf("First%d", i)),
			LastName:  management.Ptr(fmt.Sprintf("Last%d", i)),
			CreatedAt: management.NewTimestamp(base.Add(time.Duration(i) * time.Hour)),
		}})
	}
	for i := range realThings {
		srv.AddThing(management.ThingDetails{Thing: management.Thing{
			PhysicalID: fmt.Sprintf("t-%d", i), Name: fmt.Sprintf("Bedroom of person %d", i),
			Model: "M", FirmwareVersion: "1", CreatedAt: management.NewTimestamp(base),
		}})
	}
	for k, v := range map[string]string{
		management.EnvBaseURL: srv.URL, management.EnvClientID: srv.ClientID, management.EnvClientSecret: srv.ClientSecret,
		envWrites: "", envUserID: "", envPersonal: "", envEndUser: "",
	} {
		t.Setenv(k, v)
	}
	return srv
}

// things returns every Thing of srv the test seeded.
func things(srv *managementtest.Server) map[string]management.ThingDetails {
	m := make(map[string]management.ThingDetails)
	for i := range realThings {
		id := fmt.Sprintf("t-%d", i)
		m[id], _ = srv.Thing(id)
	}
	return m
}

var writeRoutes = []managementtest.Route{managementtest.RouteAssociate, managementtest.RouteUpdateThing, managementtest.RouteDisassociate}

func noWrites(t *testing.T, srv *managementtest.Server) {
	t.Helper()
	for _, r := range writeRoutes {
		if n := srv.Requests(r); n != 0 {
			t.Errorf("%d request(s) %s, want none", n, r)
		}
	}
}

// TestRealServiceReads: against a real service, the tour reads the first 5
// of each list (three pages of 2, not all four), prints ids but no name or
// email address, and writes nothing.
func TestRealServiceReads(t *testing.T) {
	srv := realService(t)
	before := things(srv)
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	text := out.String()
	for _, personal := range []string{"@", "First", "Last", "Bedroom"} {
		if strings.Contains(text, personal) {
			t.Errorf("the output holds personal data (%q):\n%s", personal, text)
		}
	}
	users := regexp.MustCompile(`(?m)^  u-\d+$`).FindAllString(text, -1)
	listed := regexp.MustCompile(`(?m)^  t-\d+ `).FindAllString(text, -1)
	if len(users) != 5 || len(listed) != 5 {
		t.Errorf("listed %d Users and %d Things, want 5 of each:\n%s", len(users), len(listed), text)
	}
	for _, r := range []managementtest.Route{managementtest.RouteListUsers, managementtest.RouteListThings} {
		if n := srv.Requests(r); n != 3 {
			t.Errorf("%d request(s) %s, want 3 (5 items in pages of 2)", n, r)
		}
	}
	noWrites(t, srv)
	if diff := cmp.Diff(before, things(srv)); diff != "" {
		t.Errorf("Things changed (-before +after):\n%s", diff)
	}
	if !strings.Contains(text, "Skipping writes (set "+envWrites+"=1 and "+envUserID) {
		t.Errorf("the output does not say how to enable writes:\n%s", text)
	}
}

// TestRealServicePersonalWhenAsked: names and addresses only with
// MANAGEMENT_QUICKSTART_PERSONAL=1.
func TestRealServicePersonalWhenAsked(t *testing.T) {
	realService(t)
	t.Setenv(envPersonal, "1")
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{"First6 Last6 <person6@example.com>", `"Bedroom of person 0"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRealServiceWritesNeedBoth: writes need MANAGEMENT_QUICKSTART_WRITES=1
// and a test account; WRITES=1 alone is refused before any request.
func TestRealServiceWritesNeedBoth(t *testing.T) {
	t.Run("writes without an account", func(t *testing.T) {
		srv := realService(t)
		t.Setenv(envWrites, "1")
		err := run(context.Background(), new(strings.Builder))
		if err == nil || !strings.Contains(err.Error(), envUserID) {
			t.Fatalf("run: %v, want an error naming %s", err, envUserID)
		}
		if n := len(srv.Log()); n != 0 {
			t.Errorf("the service received %d request(s), want none", n)
		}
	})
	t.Run("an account without writes", func(t *testing.T) {
		srv := realService(t)
		t.Setenv(envUserID, "u-3")
		if err := run(context.Background(), new(strings.Builder)); err != nil {
			t.Fatalf("run: %v", err)
		}
		noWrites(t, srv)
	})
	t.Run("an unknown account", func(t *testing.T) {
		srv := realService(t)
		t.Setenv(envWrites, "1")
		t.Setenv(envUserID, "u-nobody")
		err := run(context.Background(), new(strings.Builder))
		if err == nil || !strings.Contains(err.Error(), envUserID) {
			t.Fatalf("run: %v, want an error naming %s", err, envUserID)
		}
		noWrites(t, srv)
	})
}

// TestRealServiceWritesANewThing: with writes enabled, the tour associates,
// updates and disassociates a Thing with a fresh random id, touches no
// other Thing, leaves the test account as it was, and says the Thing stays.
func TestRealServiceWritesANewThing(t *testing.T) {
	srv := realService(t)
	t.Setenv(envWrites, "1")
	t.Setenv(envUserID, "u-3")
	before := things(srv)
	account, _ := srv.User("u-3")
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	var ids []string
	for _, e := range srv.Log() {
		if e.Method == "GET" || e.Route == managementtest.RouteToken {
			continue
		}
		if e.PathValues["user_id"] != "u-3" && e.Route != managementtest.RouteUpdateThing {
			t.Errorf("%s %s writes to another User than the test account", e.Method, e.Path)
		}
		id := e.PathValues["thing_physical_id"] + e.PathValues["physical_id"]
		if e.Route == managementtest.RouteAssociate {
			id, _ = e.Body.(map[string]any)["physical_id"].(string)
		}
		ids = append(ids, id)
	}
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] || !regexp.MustCompile(`^quickstart-[0-9a-f]{16}$`).MatchString(ids[0]) {
		t.Fatalf("writes to %q, want associate, update and disassociate of one quickstart-<random> Thing", ids)
	}
	if diff := cmp.Diff(before, things(srv)); diff != "" {
		t.Errorf("other Things changed (-before +after):\n%s", diff)
	}
	after, _ := srv.User("u-3")
	if diff := cmp.Diff(account.AssociatedThings, after.AssociatedThings); diff != "" {
		t.Errorf("the test account's associations changed (-before +after):\n%s", diff)
	}
	created, ok := srv.Thing(ids[0])
	if !ok || created.Name != "Quickstart demo" || len(created.AssociatedUsers) != 0 {
		t.Errorf("Thing %s = %+v, %t; want it renamed and associated with no one", ids[0], created, ok)
	}
	if !strings.Contains(out.String(), "The API cannot delete a Thing: "+ids[0]+" stays on the service") {
		t.Errorf("the output does not say that the Thing stays:\n%s", out.String())
	}
}

// TestRealServiceStopsOnAnExistingThing: when associate answers 200 (the
// Thing already existed), the tour stops: no update, no disassociation.
func TestRealServiceStopsOnAnExistingThing(t *testing.T) {
	srv := realService(t)
	t.Setenv(envWrites, "1")
	t.Setenv(envUserID, "u-3")
	const taken = "quickstart-taken"
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: taken, Name: "someone's", Model: "M", FirmwareVersion: "1"}})
	defer func(f func() string) { newThingID = f }(newThingID)
	newThingID = func() string { return taken }

	err := run(context.Background(), new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "already existed") {
		t.Fatalf("run: %v, want an error saying the Thing already existed", err)
	}
	if n := srv.Requests(managementtest.RouteUpdateThing) + srv.Requests(managementtest.RouteDisassociate); n != 0 {
		t.Errorf("%d update or disassociate request(s) after a 200, want none", n)
	}
	if th, _ := srv.Thing(taken); th.Name != "someone's" {
		t.Errorf("the existing Thing's name is %q, want it unchanged", th.Name)
	}
}
