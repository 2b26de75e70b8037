package managementtest_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"

	"github.com/serviceconnect/management/managementtest"
)

// The fake answers a recording of itself as it did: no difference.
func TestFidelityOfTheFakeToItself(t *testing.T) {
	_, _, path := record(t)
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := managementtest.CheckFidelity(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if len(r.Differences) != 0 || len(r.NotCompared) != 0 || r.Compared != len(c.Interactions) {
		t.Errorf("the fake differs from itself:\n%s", r)
	}
}

// editCassette changes the cassette file at path, as a person would: each
// old text, which must be there once, becomes its new one.
func editCassette(t *testing.T, path string, oldNew ...string) *managementtest.Cassette {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i < len(oldNew); i += 2 {
		if n := strings.Count(text, oldNew[i]); n != 1 {
			t.Fatalf("the cassette holds %q %d times, want once", oldNew[i], n)
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A cassette edited by hand to differ (a status, a reason, a missing
// field): each difference is reported once, where it is.
func TestFidelityReportsEachDifferenceOnce(t *testing.T) {
	_, _, path := record(t)
	c := editCassette(t, path,
		`"error_message": "User u-404 was not found"`, `"error_message": "User u-404 is gone"`, // not compared: a value
		"\"status\": 404,\n        \"header\": {\n          \"Content-Type\": \"application/json\"\n        },\n        \"body\": {\n          \"reason\": \"COMMON.ENTITY_NOT_FOUND\",\n          \"error_message\": \"User",
		"\"status\": 410,\n        \"header\": {\n          \"Content-Type\": \"application/json\"\n        },\n        \"body\": {\n          \"reason\": \"COMMON.ENTITY_NOT_FOUND\",\n          \"error_message\": \"User",
		`"reason": "COMMON.ENTITY_NOT_FOUND",
          "error_message": "Thing t-404`, `"reason": "COMMON.NOT_FOUND",
          "error_message": "Thing t-404`,
		`"email_verification_status": "Unset",
          "consents": [],
          "custom_settings": null,
          "associated_things": [
            {`, `"consents": [],
          "custom_settings": null,
          "associated_things": [
            {`)
	r, err := managementtest.CheckFidelity(c)
	if err != nil {
		t.Fatal(err)
	}
	at := func(method, path string) int {
		for i, in := range c.Interactions {
			if in.Request.Method == method && in.Request.Path == managementtest.DefaultPathPrefix+path {
				return i + 1
			}
		}
		t.Fatalf("no %s %s in the cassette", method, path)
		return 0
	}
	want := []managementtest.Difference{
		{Interactions: []int{at("GET", "/users/u-1")}, Request: "GET /users/{user_id}", Aspect: "field email_verification_status", Service: "absent", Fake: "present"},
		{Interactions: []int{at("GET", "/users/u-404")}, Request: "GET /users/{user_id}", Aspect: "status", Service: "410", Fake: "404"},
		{Interactions: []int{at("GET", "/things/t-404")}, Request: "GET /things/{thing_physical_id}", Aspect: "reason", Service: "COMMON.NOT_FOUND", Fake: "COMMON.ENTITY_NOT_FOUND"},
	}
	if diff := cmp.Diff(want, r.Differences); diff != "" {
		t.Errorf("differences (-want +got):\n%s\n%s", diff, r)
	}
	if r.Compared != len(c.Interactions) || len(r.NotCompared) != 0 {
		t.Errorf("compared %d of %d, not compared %q", r.Compared, len(c.Interactions), r.NotCompared)
	}
	table := r.String()
	for _, row := range []string{
		"| # | request | what | service | fake |",
		fmt.Sprintf("| %d | GET /users/{user_id} | status | 410 | 404 |", at("GET", "/users/u-404")),
		fmt.Sprintf("| %d | GET /things/{thing_physical_id} | reason | COMMON.NOT_FOUND | COMMON.ENTITY_NOT_FOUND |", at("GET", "/things/t-404")),
	} {
		if !strings.Contains(table, row) {
			t.Errorf("the table lacks the row %q:\n%s", row, table)
		}
	}
	if strings.Contains(table, "u-404") || strings.Contains(table, "ada@example.com") {
		t.Errorf("the table shows an id or a value:\n%s", table)
	}
}

// recordWith records what calls does against srv, and returns the cassette.
func recordWith(t *testing.T, srv *managementtest.Server, calls func(*management.Client)) *managementtest.Cassette {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{AllowWrites: true})
	calls(client)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkFidelity(t *testing.T, c *managementtest.Cassette, opts ...managementtest.Option) *managementtest.FidelityReport {
	t.Helper()
	r, err := managementtest.CheckFidelity(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A 503 the service gave is staged on the fake as FailNext gives it: the
// shape and reason compare, and so does Retry-After, which the service
// sent and FailNext without a wait does not.
func TestFidelityStagesTransientAnswers(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	seedSandbox(srv)
	srv.FailNext(managementtest.RouteGetThing, 1, http.StatusServiceUnavailable, time.Second)
	srv.FailNext(managementtest.RouteGetUser, 1, http.StatusBadGateway, 0)
	c := recordWith(t, srv, func(client *management.Client) {
		if _, err := client.Things.Get(t.Context(), "t-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Users.Get(t.Context(), "u-1"); err != nil {
			t.Fatal(err)
		}
	})
	if len(c.Interactions) != 5 {
		t.Fatalf("%d interactions, want 5: the token, a 503 and its retry, a 502 and its retry", len(c.Interactions))
	}
	r := checkFidelity(t, c)
	want := []managementtest.Difference{{Interactions: []int{2}, Request: "GET /things/{thing_physical_id}", Aspect: "Retry-After", Service: "present", Fake: "absent (FailNext)"}}
	if diff := cmp.Diff(want, r.Differences); diff != "" || r.Compared != 5 {
		t.Errorf("differences (-want +got):\n%s\n%s", diff, r)
	}
}

// A 401 for a token that expired meets a fake whose tokens expired too;
// the SDK's new token and replay then compare as they came.
func TestFidelityExpiresTokensWhereTheServiceDid(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	seedSandbox(srv)
	c := recordWith(t, srv, func(client *management.Client) {
		for range 2 {
			if _, err := client.Users.Get(t.Context(), "u-1"); err != nil {
				t.Fatal(err)
			}
			srv.ExpireTokens()
		}
	})
	var statuses []int
	for _, in := range c.Interactions {
		statuses = append(statuses, in.Response.Status)
	}
	if !slices.Equal(statuses, []int{200, 200, 401, 200, 200}) {
		t.Fatalf("the statuses recorded are %v", statuses)
	}
	if r := checkFidelity(t, c); len(r.Differences) != 0 || r.Compared != 5 {
		t.Errorf("differences where the service's token expired:\n%s", r)
	}
}

// The fake holds only what the cassette shows: a listing the cassette did
// not follow to its end ends early in the fake, which is not compared; a
// next_page edited away is a difference, and the page it linked to is no
// longer compared.
func TestFidelityNextPage(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithPageSize(2))
	defer srv.Close()
	seedSandbox(srv)
	c := recordWith(t, srv, func(client *management.Client) {
		if _, err := client.Users.ListPage(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	})
	r := checkFidelity(t, c)
	if len(r.Differences) != 0 || len(r.NotCompared) != 1 || !strings.Contains(r.NotCompared[0], "#2 GET /users: next_page, as the cassette did not follow") {
		t.Errorf("a first page only:\n%s", r)
	}

	_, _, path := record(t)
	c = editCassette(t, path, `"next_page": "`+managementtest.DefaultPathPrefix+`/users?page=`, `"next_page": null, "was": "`)
	r = checkFidelity(t, c)
	want := []managementtest.Difference{
		{Interactions: []int{2}, Request: "GET /users", Aspect: "field was", Service: "present", Fake: "absent"},
		{Interactions: []int{2}, Request: "GET /users", Aspect: "next_page", Service: "null", Fake: "a link"},
	}
	if diff := cmp.Diff(want, r.Differences); diff != "" || len(r.NotCompared) != 1 || !strings.Contains(r.NotCompared[0], "#3 GET /users: a further page whose link no recorded answer gave") {
		t.Errorf("differences (-want +got):\n%s\n%s", diff, r)
	}
}

// The fake gets an End User token for each one the service found valid:
// a verdict edited to valid is a difference; the fields are then not
// compared, as they follow from it.
func TestFidelityVerdicts(t *testing.T) {
	_, _, path := record(t)
	c := editCassette(t, path, `"is_token_valid": false`, `"is_token_valid": true`)
	r := checkFidelity(t, c)
	if len(r.Differences) != 1 || r.Differences[0].Aspect != "verdict" || r.Differences[0].Service != "is_token_valid true" || r.Differences[0].Fake != "is_token_valid false" {
		t.Errorf("a verdict edited:\n%s", r)
	}
}

// VerifyFidelity fails a test with the table, and logs a clean report.
func TestVerifyFidelity(t *testing.T) {
	_, _, path := record(t)
	h := &helperT{TB: t}
	h.run(func(tb testing.TB) { managementtest.VerifyFidelity(tb, path) })
	if len(h.errors) != 0 {
		t.Errorf("VerifyFidelity of a faithful recording failed: %q", h.errors)
	}
	editCassette(t, path, `"status": 201`, `"status": 202`) // a Thing the associate found, so the fake has it: 200
	h = &helperT{TB: t}
	h.run(func(tb testing.TB) { managementtest.VerifyFidelity(tb, path) })
	if len(h.errors) != 1 || !strings.Contains(h.errors[0], "| status | 202 | 200 |") {
		t.Errorf("VerifyFidelity of an edited recording failed with %q", h.errors)
	}
	h = &helperT{TB: t}
	h.run(func(tb testing.TB) { managementtest.VerifyFidelity(tb, path+".missing") })
	if !h.fatal || len(h.errors) != 1 || !strings.Contains(h.errors[0], "no cassette at "+path+".missing: record it") ||
		!strings.Contains(h.errors[0], "MANAGEMENTTEST_RECORD=once") {
		t.Errorf("VerifyFidelity of a missing cassette failed with %q; want how to record one", h.errors)
	}
}

// The items of a list are compared one by one, paired by id: a field one
// User lacks is a difference even where the other Users of the page have
// it.
func TestFidelityPairsListItems(t *testing.T) {
	_, _, path := record(t)
	c := editCassette(t, path, `"email": "bob@example.com",
              `, ``)
	r := checkFidelity(t, c)
	want := []managementtest.Difference{{Interactions: []int{2}, Request: "GET /users", Aspect: "field users[].email", Service: "absent", Fake: "present"}}
	if diff := cmp.Diff(want, r.Differences); diff != "" {
		t.Errorf("differences (-want +got):\n%s\n%s", diff, r)
	}
}

// Items created (or updated) in the same millisecond are listed by the
// fake in the order the service created them, as the pages show it: with
// a page size of 1, each page of the fake holds the service's item, and a
// field renamed on pages 2, 3 and 4 is reported on each of them.
func TestFidelityTiedItemsPageByPage(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(1))
	at := management.NewTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for _, id := range []string{"t-1", "t-2", "t-3", "t-4"} {
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id, Model: "m", FirmwareVersion: "1", CreatedAt: at, UpdatedAt: at}})
	}
	for _, id := range []string{"u-1", "u-2", "u-3", "u-4"} {
		srv.AddUser(management.UserDetails{User: management.User{ID: id, FirstName: management.Ptr("Name " + id), CreatedAt: at}})
	}
	var listed []string
	c := recordWith(t, srv, func(client *management.Client) {
		for u, err := range client.Users.List(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, u.ID)
		}
		for th, err := range client.Things.List(t.Context(), &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, th.PhysicalID)
		}
	})
	if want := []string{"u-4", "u-3", "u-2", "u-1", "t-1", "t-2", "t-3", "t-4"}; !slices.Equal(listed, want) || len(c.Interactions) != 9 {
		t.Fatalf("recorded %d interactions listing %q; want the token and 8 pages listing %q", len(c.Interactions), listed, want)
	}
	if r := checkFidelity(t, c); len(r.Differences) != 0 || len(r.NotCompared) != 0 || r.Compared != 9 {
		t.Errorf("the fake differs from its own recording:\n%s", r)
	}

	for i := 2; i <= 4; i++ { // pages 2, 3 and 4 of each list: interactions 3-5 and 7-9
		c.Interactions[i].Response.Body = strings.Replace(c.Interactions[i].Response.Body, `"first_name":`, `"given_name":`, 1)
		c.Interactions[i+4].Response.Body = strings.Replace(c.Interactions[i+4].Response.Body, `"firmware_version":`, `"firmware":`, 1)
	}
	r := checkFidelity(t, c)
	want := []managementtest.Difference{
		{Interactions: []int{3, 4, 5}, Request: "GET /users", Aspect: "field users[].given_name", Service: "present", Fake: "absent"},
		{Interactions: []int{3, 4, 5}, Request: "GET /users", Aspect: "field users[].first_name", Service: "absent", Fake: "present"},
		{Interactions: []int{7, 8, 9}, Request: "GET /things", Aspect: "field things[].firmware", Service: "present", Fake: "absent"},
		{Interactions: []int{7, 8, 9}, Request: "GET /things", Aspect: "field things[].firmware_version", Service: "absent", Fake: "present"},
	}
	if diff := cmp.Diff(want, r.Differences); diff != "" || len(r.NotCompared) != 0 {
		t.Errorf("differences (-want +got):\n%s\n%s", diff, r)
	}
}
