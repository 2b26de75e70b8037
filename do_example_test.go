package management_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func ExampleClient_Do() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	// Read an answer into a type of your own: the fields the typed methods
	// do not have yet, say.
	var user struct {
		ID                      string `json:"id"`
		EmailVerificationStatus string `json:"email_verification_status"`
	}
	if err := client.Do(ctx, http.MethodGet, "/users/"+url.PathEscape("u-ada"), nil, &user); err != nil {
		log.Fatal(err)
	}
	fmt.Println(user.ID, user.EmailVerificationStatus)

	// Send a body as JSON; keep the answer as it came.
	var answer json.RawMessage
	if err := client.Do(ctx, http.MethodPatch, "/things/plug-7", map[string]any{"name": "Desk lamp"}, &answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(string(answer), `"name":"Desk lamp"`))

	// The errors are the typed methods' errors.
	err := client.Do(ctx, http.MethodGet, "/users/u-nobody", nil, nil)
	fmt.Println(errors.Is(err, management.ErrNotFound))
	var apiErr *management.APIError
	if err := client.Do(ctx, http.MethodGet, "/events?cursor=c-1", nil, nil); errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Path) // the fake has no events endpoint
	}

	// A path that could leave the API is refused, and nothing is sent.
	err = client.Do(ctx, http.MethodGet, "/users/%2e%2e/auth/token", nil, nil)
	fmt.Println(errors.Is(err, management.ErrInvalidArgument))
	// Output:
	// u-ada Verified
	// true
	// true
	// 404 /events
	// true
}

// Event is one event of a User, as the events endpoint sends it.
type Event struct {
	ID   string               `json:"id"`
	Kind string               `json:"kind"`
	At   management.Timestamp `json:"at"`
}

// userEvents returns a User's events, page after page, from an endpoint
// the SDK has no method for yet. It stops on a link it has followed
// before, as List does.
func userEvents(ctx context.Context, client *management.Client, userID string) ([]Event, error) {
	var events []Event
	seen := map[string]bool{}
	for path := "/users/" + url.PathEscape(userID) + "/events"; path != ""; {
		if seen[path] {
			return nil, fmt.Errorf("the events of %s link back to a page already read", userID)
		}
		seen[path] = true
		var page struct {
			Events   []Event `json:"events"`
			NextPage *string `json:"next_page"`
		}
		if err := client.Do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		events = append(events, page.Events...)
		path = ""
		if page.NextPage != nil {
			path = *page.NextPage
		}
	}
	return events, nil
}

// TestUserEvents runs the snippet of docs/client.md against the fake,
// with an events endpoint added in front of it: two pages, then a service
// that links back to the first.
func TestUserEvents(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	prefix := managementtest.DefaultPathPrefix
	var loop atomic.Bool // page 2 links to itself
	mux := http.NewServeMux()
	mux.Handle("/", srv.Handler())
	mux.HandleFunc("GET "+prefix+"/users/{user_id}/events", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" || r.PathValue("user_id") != "u a" {
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("page") == "":
			_, _ = io.WriteString(w, `{"events":[{"id":"e-1","kind":"login","at":"2026-11-01T09:00:00.000Z"}],"next_page":"`+prefix+`/users/u%20a/events?page=2"}`)
		case loop.Load():
			_, _ = io.WriteString(w, `{"events":[],"next_page":"`+prefix+`/users/u%20a/events?page=2"}`)
		default:
			_, _ = io.WriteString(w, `{"events":[{"id":"e-2","kind":"logout","at":"2026-11-01T10:00:00.000Z"}],"next_page":null}`)
		}
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	cfg := srv.Config()
	cfg.BaseURL, cfg.HTTPClient = ts.URL, ts.Client()
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, err := userEvents(t.Context(), client, "u a")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range events {
		ids = append(ids, e.ID+" "+e.Kind+" "+e.At.Format(time.Kitchen))
	}
	if diff := cmp.Diff([]string{"e-1 login 9:00AM", "e-2 logout 10:00AM"}, ids); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	loop.Store(true)
	if _, err := userEvents(t.Context(), client, "u a"); err == nil || !strings.Contains(err.Error(), "link back") {
		t.Errorf("a service whose links loop: %v; want the loop named", err)
	}
}

// Client.Do end to end against the fake: the typed methods' answers,
// next_page links, writes, errors, and the typed methods keeping their
// own retry rules beside Do's.
func TestDoEndToEnd(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := t.Context()

	typed, err := client.Users.Get(ctx, "u-ada")
	if err != nil {
		t.Fatal(err)
	}
	var viaDo management.UserDetails
	if err := client.Do(ctx, http.MethodGet, "/users/u-ada", nil, &viaDo); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(typed, &viaDo); diff != "" {
		t.Errorf("Do and Users.Get differ (-typed +Do):\n%s", diff)
	}

	// A listing, page by page, through the service's next_page links.
	var ids []string
	for path := "/things?order_by=updatedAt&order_direction=asc"; path != ""; {
		var page struct {
			Things   []management.Thing `json:"things"`
			NextPage *string            `json:"next_page"`
		}
		if err := client.Do(ctx, http.MethodGet, path, nil, &page); err != nil {
			t.Fatal(err)
		}
		for _, th := range page.Things {
			ids = append(ids, th.PhysicalID)
		}
		path = ""
		if page.NextPage != nil {
			path = *page.NextPage
		}
	}
	if diff := cmp.Diff([]string{"thermo-42", "plug-7"}, ids); diff != "" {
		t.Errorf("things (-want +got):\n%s", diff)
	}

	// Writes: PATCH, POST, DELETE (204: out unchanged).
	if err := client.Do(ctx, http.MethodPatch, "/things/plug-7", json.RawMessage(`{"name":"Desk lamp"}`), nil); err != nil {
		t.Fatal(err)
	}
	if th, _ := srv.Thing("plug-7"); th.Name != "Desk lamp" {
		t.Errorf("after the PATCH, plug-7 is named %q", th.Name)
	}
	assoc := map[string]string{"physical_id": "lamp-1", "name": "Lamp", "model": "LA-1", "firmware_version": "1.0"}
	if err := client.Do(ctx, http.MethodPost, "/users/u-anon/associated_things", assoc, nil); err != nil {
		t.Fatal(err)
	}
	kept := map[string]any{"kept": true}
	if err := client.Do(ctx, http.MethodDelete, "/users/u-anon/associated_things/lamp-1", nil, &kept); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"kept": true}, kept); diff != "" {
		t.Errorf("out after a 204 (-want +got):\n%s", diff)
	}

	// A POST after a 503: Do returns it; AssociateThing retries (the
	// spec's association semantics make it safe to repeat).
	srv.FailNext(managementtest.RouteAssociate, 1, http.StatusServiceUnavailable, 0)
	before := srv.Requests(managementtest.RouteAssociate)
	err = client.Do(ctx, http.MethodPost, "/users/u-anon/associated_things", assoc, nil)
	var apiErr *management.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Path != "/users/u-anon/associated_things" {
		t.Errorf("Do POST after a 503: %v; want the 503", err)
	}
	if n := srv.Requests(managementtest.RouteAssociate) - before; n != 1 {
		t.Errorf("Do POST after a 503 sent %d requests, want 1", n)
	}
	srv.FailNext(managementtest.RouteAssociate, 1, http.StatusServiceUnavailable, 0)
	before = srv.Requests(managementtest.RouteAssociate)
	if _, _, err := client.Users.AssociateThing(ctx, "u-anon", management.NewAssociation{PhysicalID: "lamp-1", Model: "LA-1", FirmwareVersion: "1.0"}); err != nil {
		t.Errorf("AssociateThing after a 503: %v; want it retried", err)
	}
	if n := srv.Requests(managementtest.RouteAssociate) - before; n != 2 {
		t.Errorf("AssociateThing after a 503 sent %d requests, want 2", n)
	}

	// A 429 with Retry-After is waited for and resent, a POST too.
	srv.FailNext(managementtest.RouteAssociate, 1, http.StatusTooManyRequests, time.Millisecond)
	if err := client.Do(ctx, http.MethodPost, "/users/u-anon/associated_things", assoc, nil); err != nil {
		t.Errorf("Do POST after a 429: %v; want it resent", err)
	}

	// An expired token: the call is replayed once with a new one.
	tokens := srv.Requests(managementtest.RouteToken)
	srv.ExpireTokens()
	if err := client.Do(ctx, http.MethodPost, "/users/u-anon/associated_things", assoc, nil); err != nil {
		t.Errorf("Do POST with an expired token: %v; want it replayed", err)
	}
	if n := srv.Requests(managementtest.RouteToken) - tokens; n != 1 {
		t.Errorf("%d token requests after the expiry, want 1", n)
	}

	// An endpoint the fake does not have; a refusal sends nothing.
	err = client.Do(ctx, http.MethodGet, "/events?cursor=c-1", nil, nil)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Path != "/events" || strings.Contains(err.Error(), "c-1") {
		t.Errorf("GET /events: %v; want a 404 *APIError of path /events", err)
	}
	sent := len(srv.Log())
	if err := client.Do(ctx, http.MethodGet, srv.URL+managementtest.DefaultPathPrefix+"/users", nil, nil); !errors.Is(err, management.ErrInvalidArgument) {
		t.Errorf("the base URL's own absolute URL: %v; want ErrInvalidArgument", err)
	}
	if n := len(srv.Log()) - sent; n != 0 {
		t.Errorf("a refused Do sent %d requests", n)
	}
}

// Calls of Do at once on a new Client share one token request.
func TestDoConcurrentEndToEnd(t *testing.T) {
	srv := newExampleServer()
	defer srv.Close()
	client, err := management.NewClient(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			id := []string{"u-ada", "u-anon"}[i%2]
			var u struct {
				ID string `json:"id"`
			}
			if err := client.Do(t.Context(), http.MethodGet, "/users/"+id, nil, &u); err != nil || u.ID != id {
				errs <- fmt.Errorf("call %d: %v, %q", i, err, u.ID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.Requests(managementtest.RouteToken); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}
