package management_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// ExampleAuthenticator_staleIfError lets a token the service confirmed
// through while the service cannot answer, marked Stale, and refuses one
// it never confirmed. (CacheTTL -1 caches no verdict, so that the outage
// shows at once; the grace counts from the service's confirmation.)
func ExampleAuthenticator_staleIfError() {
	srv := managementtest.NewInMemoryServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-grace"}})
	auth := &management.Authenticator{Client: srv.Client(), CacheTTL: -1, StaleIfError: time.Minute}
	check := func(token string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		user, err := auth.Check(r)
		switch {
		case err != nil:
			fmt.Println("refused:", errors.Is(err, management.ErrAuthenticationUnavailable))
		case user.Stale:
			fmt.Println(user.ID, "let through stale")
		default:
			fmt.Println(user.ID, "confirmed")
		}
	}
	ada := srv.IssueEndUserToken("u-ada")
	check(ada)
	srv.FailNext(managementtest.RouteAuthenticate, 100, http.StatusServiceUnavailable, 0) // the service is down
	check(ada)
	check(srv.IssueEndUserToken("u-grace"))
	// Output:
	// u-ada confirmed
	// u-ada let through stale
	// refused: true
}
