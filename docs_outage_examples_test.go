package management_test

// The test of docs/outages.md's "Trying it", exactly as the guide shows it
// (TestReadmeSnippetsAreExamples checks that).

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// TestRoutesDuringAnOutage takes the service's authenticate endpoint down
// and up again, on the fake clock: meanwhile an End User the service
// confirmed is let through, marked Stale, and a token it never confirmed
// is refused; once it is back, both pass fresh.
func TestRoutesDuringAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		defer srv.Close()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
		auth := &management.Authenticator{Client: srv.Client(), StaleIfError: 10 * time.Minute}
		check := func(token string) (*management.EndUser, error) {
			r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/me", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			return auth.Check(r)
		}
		ada := srv.IssueEndUserToken("u-ada")
		if _, err := check(ada); err != nil {
			t.Fatal(err)
		}

		// Down: every authenticate call answers 503 until ClearFaults.
		srv.FailNext(managementtest.RouteAuthenticate, 1000, http.StatusServiceUnavailable, 0)
		time.Sleep(time.Minute) // Ada's cached verdict expires (CacheTTL: 30s)
		if user, err := check(ada); err != nil || !user.Stale {
			t.Errorf("Ada during the outage: %+v, %v; want her let through, Stale", user, err)
		}
		newcomer := srv.IssueEndUserToken("u-ada") // never confirmed
		var err error
		for range 3 { // 3 calls in a row without an answer open the breaker
			if _, err = check(newcomer); !errors.Is(err, management.ErrAuthenticationUnavailable) {
				t.Fatalf("a token never confirmed, during the outage: %v; want it refused", err)
			}
		}
		var held *management.AuthenticationUnavailableError
		if !errors.As(err, &held) {
			t.Errorf("the last refusal: %v; want the breaker holding the calls", err)
		}

		// Up again. Once its cool-down is over (30s at most), the breaker
		// sends one call as a probe, which no check waits for: the check
		// that starts it is answered as during the outage, and so are the
		// checks of other tokens until the probe's answer closes the
		// breaker. synctest.Wait lets the probe finish.
		srv.ClearFaults()
		time.Sleep(30 * time.Second)
		_, _ = check(ada) // starts the probe
		synctest.Wait()
		for _, token := range []string{newcomer, ada} {
			if user, err := check(token); err != nil || user.Stale {
				t.Errorf("after the outage: %+v, %v; want a fresh pass", user, err)
			}
		}
	})
}
