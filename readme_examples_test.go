package management_test

// The README's snippets of declarations, exactly as it shows them
// (TestReadmeSnippetsAreExamples checks that), and the tests that run them
// against the fake.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// userIDs returns the id of every User, page after page.
func userIDs(ctx context.Context, client *management.Client) ([]string, error) {
	var ids []string
	for user, err := range client.Users.List(ctx, nil) {
		if err != nil {
			return nil, err
		}
		ids = append(ids, user.ID)
	}
	return ids, nil
}

// thingsUpdatedSince returns the Things updated after since, the most
// recently updated first. It reads no page past the first older Thing.
func thingsUpdatedSince(ctx context.Context, client *management.Client, since time.Time) ([]*management.Thing, error) {
	opts := &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Descending}
	var things []*management.Thing
	for thing, err := range client.Things.List(ctx, opts) {
		if err != nil {
			return nil, err
		}
		if !thing.UpdatedAt.After(since) {
			break
		}
		things = append(things, thing)
	}
	return things, nil
}

// usersPage serves one page of your own API's listing of Users: cursor is
// empty for the first page, then the next cursor the previous page gave.
func usersPage(ctx context.Context, client *management.Client, cursor string) (users []*management.User, next string, err error) {
	page, err := client.Users.ListPage(ctx, &management.ListOptions{NextPage: cursor})
	if err != nil {
		return nil, "", err
	}
	return page.Items, page.NextPage, nil
}

// moveUpstairs renames a thermostat, reports its battery low, sets its
// target and removes its eco setting; its other fields stay as they are.
func moveUpstairs(ctx context.Context, client *management.Client, physicalID string) (*management.ThingDetails, error) {
	return client.Things.Update(ctx, physicalID, management.ThingUpdate{
		Name:     management.Ptr("Hall thermostat (upstairs)"),
		Statuses: []management.ThingStatus{{Name: "battery", StatusValue: "low", Date: management.NewTimestamp(time.Now())}},
		CustomSettings: map[string]any{
			"target_celsius": 19,               // replaced
			"eco":            management.Unset, // removed
		},
	})
}

// userEmail returns a User's email address, or "" when the User has none
// or does not exist.
func userEmail(ctx context.Context, client *management.Client, id string) (string, error) {
	user, err := client.Users.Get(ctx, id)
	var apiErr *management.APIError
	switch {
	case errors.Is(err, management.ErrNotFound):
		return "", nil
	case errors.As(err, &apiErr):
		log.Printf("management answered %d %s (request id %q)", apiErr.StatusCode, apiErr.Reason, apiErr.RequestID)
		return "", err
	case err != nil:
		return "", err // no answer (*management.TransportError), or not the documented JSON (*management.DecodeError)
	case user.Email == nil:
		return "", nil
	}
	return *user.Email, nil
}

func TestWithTheFake(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada", Email: management.Ptr("ada@example.com")}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "thermo-42", Name: "Hall thermostat"}})
	token := srv.IssueEndUserToken("u-ada") // what Ada's app sends as "Bearer <token>"
	client := srv.Client()

	auth, err := client.Authenticate(t.Context(), "Bearer "+token)
	if err != nil || !auth.Valid || auth.UserID != "u-ada" {
		t.Fatalf("Authenticate = %+v, %v; want Ada's valid token", auth, err)
	}

	// A fault: the next read of a Thing meets a proxy's HTML error page.
	// The client retries a 502, so the call still succeeds.
	srv.FailNextWith(managementtest.RouteGetThing, 1, managementtest.Response{
		Status: http.StatusBadGateway,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   "<html><body><h1>502 Bad Gateway</h1></body></html>",
	})
	thing, err := client.Things.Get(t.Context(), "thermo-42")
	if err != nil || thing.Name != "Hall thermostat" {
		t.Fatalf("Things.Get = %+v, %v; want the Thing after a retry", thing, err)
	}
	if n := srv.Requests(managementtest.RouteGetThing); n != 2 {
		t.Errorf("the fake served %d reads of the Thing, want 2 (the 502 and the retry)", n)
	}
}

// protect serves hello only to requests that carry a valid End User token.
func protect(client *management.Client) http.Handler {
	auth := &management.Authenticator{Client: client}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := management.EndUserFromContext(r.Context())
		fmt.Fprintf(w, "hello %s", user.ID)
	})
	return auth.Handler(hello)
}

func TestReadmeUserIDs(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	ids, err := userIDs(t.Context(), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"u-anon", "u-ada"}, ids); diff != "" {
		t.Errorf("userIDs (-want +got):\n%s", diff)
	}
}

func TestReadmeThingsUpdatedSince(t *testing.T) {
	srv := newExampleServer() // thermo-42 updated on November 1st, plug-7 on the 2nd, one a page
	defer srv.Close()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{
		PhysicalID: "old-1", CreatedAt: management.NewTimestamp(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)),
	}})
	since := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	things, err := thingsUpdatedSince(t.Context(), srv.Client(), since)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, th := range things {
		ids = append(ids, th.PhysicalID)
	}
	if diff := cmp.Diff([]string{"plug-7"}, ids); diff != "" {
		t.Errorf("thingsUpdatedSince (-want +got):\n%s", diff)
	}
	if n := srv.Requests(managementtest.RouteListThings); n != 2 {
		t.Errorf("%d pages read, want 2: the loop stops at the first older Thing", n)
	}
}

func TestReadmeUsersPage(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	var got []string
	cursor := ""
	for range 3 {
		users, next, err := usersPage(t.Context(), client, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			got = append(got, u.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if diff := cmp.Diff([]string{"u-anon", "u-ada"}, got); diff != "" {
		t.Errorf("usersPage, page after page (-want +got):\n%s", diff)
	}
}

func TestReadmeMoveUpstairs(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	thing, err := moveUpstairs(t.Context(), srv.Client(), "thermo-42")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(thing.Name, " ", thing.Statuses[0].StatusValue, " ", thing.CustomSettings)
	if want := "Hall thermostat (upstairs) low map[target_celsius:19]"; got != want {
		t.Errorf("moveUpstairs gave %q, want %q", got, want)
	}
}

func TestReadmeUserEmail(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	for id, want := range map[string]string{"u-ada": "ada@example.com", "u-anon": "", "u-nobody": ""} {
		got, err := userEmail(t.Context(), client, id)
		if err != nil || got != want {
			t.Errorf("userEmail(%q) = %q, %v; want %q, nil", id, got, err, want)
		}
	}
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusBadRequest,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req-7"}},
		Body:   `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"bad id"}`,
	})
	var apiErr *management.APIError
	if _, err := userEmail(t.Context(), client, "u-ada"); !errors.As(err, &apiErr) || apiErr.RequestID != "req-7" {
		t.Errorf("userEmail on a 400 gave %v; want the *APIError with its request id", err)
	}
}

func TestReadmeProtect(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	app := httptest.NewServer(protect(srv.Client()))
	defer app.Close()
	for header, want := range map[string]string{
		"Bearer " + srv.IssueEndUserToken("u-ada"): "200 hello u-ada",
		"": "401",
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, app.URL, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := app.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := fmt.Sprint(resp.StatusCode)
		if resp.StatusCode == http.StatusOK {
			got += " " + string(body)
		}
		if got != want {
			t.Errorf("protect with Authorization %q answered %q, want %q", header, got, want)
		}
	}
}
