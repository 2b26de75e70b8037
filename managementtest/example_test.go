package managementtest_test

import (
	"context"
	"errors"
	"fmt"
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
