package managementtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// A test starts the fake, seeds it, and hands its Client to the code
// under test.
func Example() {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{
		User:                    management.User{ID: "u-1", Email: management.Ptr("ada@example.com")},
		EmailVerificationStatus: management.EmailVerified,
	})

	client := srv.Client()
	u, err := client.Users.Get(context.Background(), "u-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(u.ID, *u.Email, u.EmailVerificationStatus)

	_, err = client.Users.Get(context.Background(), "u-2")
	fmt.Println(errors.Is(err, management.ErrNotFound), err)
	// Output:
	// u-1 ada@example.com Verified
	// true management: GET /users/u-2: 404 COMMON.ENTITY_NOT_FOUND: User u-2 was not found
}

// Reading back what the code under test changed.
func ExampleServer_Thing() {
	srv := managementtest.NewInMemoryServer()
	srv.AddThing(management.ThingDetails{
		Thing:          management.Thing{PhysicalID: "t-1", Name: "Sensor"},
		CustomSettings: map[string]any{"room": "hall", "color": "red"},
	})

	_, err := srv.Client().Things.Update(context.Background(), "t-1", management.ThingUpdate{
		Name:           management.Ptr("Kitchen sensor"),
		CustomSettings: map[string]any{"room": "kitchen", "color": management.Unset},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	th, _ := srv.Thing("t-1")
	fmt.Println(th.Name, th.CustomSettings)
	fmt.Println(srv.Requests(managementtest.RouteUpdateThing), "update")
	// Output:
	// Kitchen sensor map[room:kitchen]
	// 1 update
}

// End User tokens for tests of a backend that validates them.
func ExampleServer_IssueEndUserToken() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	token := srv.IssueEndUserToken("u-1")

	ctx := context.Background()
	valid, _ := srv.Client().Authenticate(ctx, "Bearer "+token)
	fmt.Println(valid.Valid, valid.UserID, valid.Role)

	srv.RevokeEndUserToken(token)
	invalid, _ := srv.Client().Authenticate(ctx, "Bearer "+token)
	fmt.Println(invalid.Valid, invalid.ClientResponse.HTTPCode, invalid.ClientResponse.HTTPBody.Reason)
	// Output:
	// true u-1 APPUSER
	// false 401 auth.unauthorized
}

// Fault injection: the client retries a failing service, honouring
// Retry-After (the fake's Config caps retry waits at 50 ms; raise
// RetryWaitMax to see the full wait).
func ExampleServer_FailNext() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.FailNext(managementtest.RouteGetUser, 2, 503, time.Second)

	u, err := srv.Client().Users.Get(context.Background(), "u-1")
	fmt.Println(u.ID, err, srv.Requests(managementtest.RouteGetUser), "requests")
	// Output:
	// u-1 <nil> 3 requests
}

// Pages hold WithPageSize items; the client follows the links.
func ExampleWithPageSize() {
	srv := managementtest.NewInMemoryServer(managementtest.WithPageSize(2))
	for _, id := range []string{"a", "b", "c"} {
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id}})
	}
	opts := &management.ListOptions{Direction: management.Ascending}
	for th, err := range srv.Client().Things.List(context.Background(), opts) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(th.PhysicalID, " ")
	}
	fmt.Println("in", srv.Requests(managementtest.RouteListThings), "pages")
	// Output:
	// a b c in 2 pages
}

// Any answer, for tests of code that must survive a misbehaving service or
// proxy: here an HTML page on a 403.
func ExampleServer_FailNextWith() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusForbidden,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   "<html><h1>Forbidden</h1></html>",
	})

	ctx := context.Background()
	_, err := srv.Client().Users.Get(ctx, "u-1")
	var apiErr *management.APIError
	if errors.As(err, &apiErr) {
		fmt.Printf("%d %q %s\n", apiErr.StatusCode, apiErr.Reason, apiErr.Body)
	}
	u, err := srv.Client().Users.Get(ctx, "u-1") // the fault was for one request
	fmt.Println(u.ID, err)
	// Output:
	// 403 "" <html><h1>Forbidden</h1></html>
	// u-1 <nil>
}

// A redirect is a 3xx with a Location. The SDK follows none: the answer
// is an *APIError matching ErrMisconfigured, and the token never travels
// to the Location.
func ExampleServer_FailNextWith_redirect() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}})
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusTemporaryRedirect,
		Header: http.Header{"Location": {srv.URL + managementtest.DefaultPathPrefix + "/users/u-2?sig=abc"}},
	})

	_, err := srv.Client().Users.Get(context.Background(), "u-1")
	fmt.Println(errors.Is(err, management.ErrMisconfigured))
	for _, r := range srv.Log() {
		if r.Route == managementtest.RouteGetUser {
			fmt.Println(r.Method, r.PathValues["user_id"])
		}
	}
	// Output:
	// true
	// GET u-1
}

// Answers cut off: a connection closed before any answer, which the
// client retries, and a body cut midway, which it cannot read.
func ExampleResponse() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := context.Background()

	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Cut: true})
	u, err := srv.Client().Users.Get(ctx, "u-1")
	fmt.Println(u.ID, err, srv.Requests(managementtest.RouteGetUser), "requests")

	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status:   http.StatusOK,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     `{"id":"u-1","email":null}`,
		Cut:      true,
		CutAfter: 8, // {"id":"u
	})
	_, err = srv.Client().Users.Get(ctx, "u-1")
	fmt.Println(errors.Is(err, io.ErrUnexpectedEOF))
	// Output:
	// u-1 <nil> 2 requests
	// true
}

// A fault for one id only: Thing th-1 is gone, th-2 answers.
func ExampleServer_FailNextFor() {
	srv := managementtest.NewInMemoryServer()
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "th-1"}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "th-2"}})
	srv.FailNextFor(managementtest.RouteGetThing, "th-1", 1, managementtest.Response{
		Status: http.StatusNotFound,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"Thing th-1 was not found"}`,
	})

	for _, id := range []string{"th-2", "th-1"} {
		_, err := srv.Client().Things.Get(context.Background(), id)
		fmt.Println(id, errors.Is(err, management.ErrNotFound))
	}
	// Output:
	// th-2 false
	// th-1 true
}

// The requests the code under test sent, decoded, without credentials.
func ExampleServer_Log() {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := context.Background()
	_, _ = srv.Client().Users.Get(ctx, "u-1")
	_, _ = srv.Client().Authenticate(ctx, "Bearer "+srv.IssueEndUserToken("u-1"))

	for _, r := range srv.Log() {
		fmt.Println(r.Route, r.PathValues, r.Header.Get("Authorization"), r.Body)
	}
	// Output:
	// POST /auth/token map[] Basic REDACTED map[grant_type:client_credentials]
	// GET /users/{user_id} map[user_id:u-1] Bearer REDACTED <nil>
	// POST /authenticate map[] Bearer REDACTED map[access_token:Bearer REDACTED]
}

// One server for several tests, emptied between them.
func ExampleServer_Reset() {
	srv := managementtest.NewInMemoryServer()
	ctx := context.Background()

	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	_, err := srv.Client().Users.Get(ctx, "u-1")
	fmt.Println(err)

	srv.Reset()
	_, err = srv.Client().Users.Get(ctx, "u-1")
	fmt.Println(errors.Is(err, management.ErrNotFound))
	// Output:
	// <nil>
	// true
}

// WithRateLimit makes the fake answer 429 with Retry-After beyond a rate,
// as a rate-limited service does; RateLimited counts those answers.
func ExampleWithRateLimit() {
	srv := managementtest.NewInMemoryServer(managementtest.WithRateLimit(1, 2))
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	cfg := srv.Config()
	cfg.MaxRetries = -1 // show the 429 rather than wait for it
	client, err := management.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Users.Get(context.Background(), "u-1") // the token request and this read: the burst
	fmt.Println(err)
	_, err = client.Users.Get(context.Background(), "u-1")
	fmt.Println(errors.Is(err, management.ErrRateLimited), srv.RateLimited())
	// Output:
	// <nil>
	// true 1
}
