package management_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// newExampleServer starts the fake seeded with two Users and two Things.
func newExampleServer() *managementtest.Server {
	srv := managementtest.NewServer(managementtest.WithPageSize(1))
	day := func(d int) management.Timestamp {
		return management.NewTimestamp(time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC))
	}
	srv.AddThing(management.ThingDetails{
		Thing:          management.Thing{PhysicalID: "thermo-42", Name: "Hall thermostat", Model: "TH-2", FirmwareVersion: "1.4.0", CreatedAt: day(1)},
		Statuses:       []management.ThingStatus{{Name: "battery", StatusValue: "ok", Date: day(1)}},
		CustomSettings: map[string]any{"target_celsius": 20.5, "eco": true},
	})
	srv.AddThing(management.ThingDetails{
		Thing: management.Thing{PhysicalID: "plug-7", Name: "Desk plug", Model: "PL-1", FirmwareVersion: "0.9.2", CreatedAt: day(2)},
	})
	srv.AddUser(management.UserDetails{
		User:                    management.User{ID: "u-ada", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada"), LastName: management.Ptr("Lovelace"), CreatedAt: day(3)},
		EmailVerificationStatus: management.EmailVerified,
		AssociatedThings:        []management.AssociatedThing{{PhysicalID: "thermo-42", AssociationData: management.AssociationData{AssociatedAt: day(3)}}},
	})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-anon", CreatedAt: day(4)}, IsAnonymous: true})
	return srv
}

// Example shows a Client against managementtest's fake, as a test of your
// own code would use it.
func Example() {
	srv := newExampleServer()
	defer srv.Close()

	client, err := management.NewClient(management.Config{
		BaseURL:      srv.URL,
		ClientID:     srv.ClientID,
		ClientSecret: srv.ClientSecret,
	})
	if err != nil {
		log.Fatal(err)
	}
	user, err := client.Users.Get(context.Background(), "u-ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(user.ID, *user.Email, user.EmailVerificationStatus)
	// Output: u-ada ada@example.com Verified
}

func ExampleUsersService_List() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()

	// List follows next_page links until the last page (here one User a page).
	for user, err := range client.Users.List(context.Background(), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(user.ID, user.Email == nil)
	}
	// Output:
	// u-anon true
	// u-ada false
}

func ExampleUsersService_ListPage() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	page, err := client.Users.ListPage(ctx, &management.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Items[0].ID, page.NextPage != "")

	// Later, perhaps in another request of your own API: resume from the link.
	page, err = client.Users.ListPage(ctx, &management.ListOptions{NextPage: page.NextPage})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Items[0].ID, page.NextPage != "")
	// Output:
	// u-anon true
	// u-ada false
}

func ExampleUsersService_Get() {
	srv := newExampleServer()
	defer srv.Close()

	user, err := srv.Client().Users.Get(context.Background(), "u-ada")
	if err != nil {
		log.Fatal(err)
	}
	for _, thing := range user.AssociatedThings {
		fmt.Println(thing.PhysicalID, thing.Name, thing.AssociationData.AssociatedAt)
	}
	// Output: thermo-42 Hall thermostat 2026-11-03T09:00:00.000Z
}

func ExampleThingsService_List() {
	srv := newExampleServer()
	defer srv.Close()

	opts := &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}
	for thing, err := range srv.Client().Things.List(context.Background(), opts) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(thing.PhysicalID, thing.UpdatedAt)
	}
	// Output:
	// thermo-42 2026-11-01T09:00:00.000Z
	// plug-7 2026-11-02T09:00:00.000Z
}

func ExampleThingsService_Get() {
	srv := newExampleServer()
	defer srv.Close()

	thing, err := srv.Client().Things.Get(context.Background(), "thermo-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(thing.Name, thing.Statuses[0].Name, thing.Statuses[0].StatusValue, thing.CustomSettings["target_celsius"])
	// Output: Hall thermostat battery ok 20.5
}

func ExampleThingsService_Update() {
	srv := newExampleServer()
	defer srv.Close()

	thing, err := srv.Client().Things.Update(context.Background(), "thermo-42", management.ThingUpdate{
		Name:     management.Ptr("Hall thermostat (upstairs)"),
		Statuses: []management.ThingStatus{{Name: "battery", StatusValue: "low", Date: management.NewTimestamp(time.Now())}},
		CustomSettings: map[string]any{
			"target_celsius": 19,               // replaced
			"eco":            management.Unset, // removed
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(thing.Name, thing.Statuses[0].StatusValue, thing.CustomSettings)
	// Output: Hall thermostat (upstairs) low map[target_celsius:19]
}

func ExampleUsersService_AssociateThing() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	lamp := management.NewAssociation{PhysicalID: "lamp-1", Model: "LM-3", FirmwareVersion: "2.0.1"}
	thing, created, err := client.Users.AssociateThing(ctx, "u-ada", lamp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(thing.PhysicalID, created, thing.AssociatedUsers[0].ID)

	// Associating again is safe: the service answers 200 instead of 201.
	_, created, err = client.Users.AssociateThing(ctx, "u-ada", lamp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created)
	// Output:
	// lamp-1 true u-ada
	// false
}

func ExampleUsersService_DisassociateThing() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	if err := client.Users.DisassociateThing(ctx, "u-ada", "thermo-42"); err != nil {
		log.Fatal(err)
	}
	user, err := client.Users.Get(ctx, "u-ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(user.AssociatedThings))
	// Output: 0
}

func ExampleClient_Authenticate() {
	srv := newExampleServer()
	defer srv.Close()
	client := srv.Client()
	ctx := context.Background()

	// What an End User sends in its Authorization header.
	header := "Bearer " + srv.IssueEndUserToken("u-ada")
	auth, err := client.Authenticate(ctx, header)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(auth.Valid, auth.UserID, auth.Role)

	auth, err = client.Authenticate(ctx, "Bearer made-up")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(auth.Valid, auth.ClientResponse.HTTPCode, auth.ClientResponse.HTTPBody.Reason)
	// Output:
	// true u-ada APPUSER
	// false 401 auth.unauthorized
}

func ExampleAuthenticator() {
	srv := newExampleServer()
	defer srv.Close()

	auth := &management.Authenticator{Client: srv.Client()}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := management.EndUserFromContext(r.Context())
		fmt.Fprintf(w, "hello %s", user.ID)
	})
	app := httptest.NewServer(auth.Handler(hello))
	defer app.Close()

	for _, header := range []string{"Bearer " + srv.IssueEndUserToken("u-ada"), ""} {
		req, _ := http.NewRequest(http.MethodGet, app.URL, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body) == "hello u-ada")
	}
	// Output:
	// 200 true
	// 401 false
}

func ExampleAPIError() {
	srv := newExampleServer()
	defer srv.Close()

	_, err := srv.Client().Users.Get(context.Background(), "u-nobody")
	fmt.Println(errors.Is(err, management.ErrNotFound))
	var apiErr *management.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Reason, apiErr.Message)
	}
	fmt.Println(err)
	// Output:
	// true
	// 404 COMMON.ENTITY_NOT_FOUND User u-nobody was not found
	// management: GET /users/u-nobody: 404 COMMON.ENTITY_NOT_FOUND: User u-nobody was not found
}

func ExampleThingsService_Update_invalidArgument() {
	srv := newExampleServer()
	defer srv.Close()

	// Nothing is sent: the service removes top-level keys only.
	_, err := srv.Client().Things.Update(context.Background(), "thermo-42", management.ThingUpdate{
		CustomSettings: map[string]any{"schedule": map[string]any{"monday": management.Unset}},
	})
	fmt.Println(errors.Is(err, management.ErrInvalidArgument), srv.Requests(managementtest.RouteUpdateThing))
	// Output: true 0
}

// ExampleConfigFromEnv wires a Client from the environment, as a
// deployment does: MANAGEMENT_BASE_URL, MANAGEMENT_CLIENT_ID and
// MANAGEMENT_CLIENT_SECRET, and optional knobs such as
// MANAGEMENT_MAX_RETRIES. Here the fake's address and credentials stand in.
func ExampleConfigFromEnv() {
	srv := newExampleServer()
	defer srv.Close()
	for name, value := range map[string]string{
		management.EnvBaseURL:      srv.URL,
		management.EnvClientID:     srv.ClientID,
		management.EnvClientSecret: srv.ClientSecret,
		management.EnvMaxRetries:   "2",
	} {
		os.Setenv(name, value)
		defer os.Unsetenv(name)
	}

	ctx := context.Background()

	cfg, err := management.ConfigFromEnv()
	if err != nil {
		log.Fatal(err) // names every missing or malformed variable
	}
	client, err := management.NewClient(cfg) // one Client for the process, shared by every goroutine
	if err != nil {
		log.Fatal(err)
	}
	user, err := client.Users.Get(ctx, "u-ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(user.ID, user.EmailVerificationStatus)

	os.Unsetenv(management.EnvClientSecret)
	_, err = management.ConfigFromEnv()
	fmt.Println(err)
	// Output:
	// u-ada Verified
	// management: invalid argument: MANAGEMENT_CLIENT_SECRET is not set
}
