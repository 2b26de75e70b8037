package managementtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func TestFailNext(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c.token = c.newToken()
	c.srv.FailNext(managementtest.RouteGetUser, 2, 503, 2500*time.Millisecond)
	c.srv.FailNext(managementtest.RouteGetUser, 1, 429, 0)
	for i := range 2 {
		r := c.api("GET", "/users/u-1", "")
		r.wantError(t, 503, "MANAGEMENTTEST.INJECTED_FAULT", "managementtest: injected failure")
		if got := r.header.Get("Retry-After"); got != "3" {
			t.Errorf("request %d: Retry-After = %q, want 3 (rounded up)", i, got)
		}
	}
	r := c.api("GET", "/users/u-1", "")
	r.wantError(t, 429, "MANAGEMENTTEST.INJECTED_FAULT", "managementtest: injected failure")
	if got := r.header.Get("Retry-After"); got != "" {
		t.Errorf("Retry-After = %q, want none", got)
	}
	if r := c.api("GET", "/users/u-1", ""); r.status != 200 {
		t.Errorf("after the faults: %d", r.status)
	}
	// Other routes were never affected.
	if r := c.api("GET", "/users", ""); r.status != 200 {
		t.Errorf("other route: %d", r.status)
	}
	if got := c.srv.Requests(managementtest.RouteGetUser); got != 4 {
		t.Errorf("Requests(RouteGetUser) = %d, want 4", got)
	}

	// Faults come before the token check, and take the spec's reasons.
	c.srv.FailNext(managementtest.RouteListUsers, 1, 401, 0)
	c.send("GET", mtPrefix+"/users", nil, "").wantError(t, 401, "AUTH.UNAUTHORIZED", "")
	c.srv.FailNext(managementtest.RouteListUsers, 1, 404, 0)
	c.api("GET", "/users", "").wantError(t, 404, "COMMON.ENTITY_NOT_FOUND", "managementtest: injected failure")
	c.srv.FailNext(managementtest.RouteListUsers, 1, 400, 0)
	c.api("GET", "/users", "").wantError(t, 400, "COMMON.REQUEST_VALIDATION", "managementtest: injected failure")

	// The token endpoint fails in its own shape.
	for status, code := range map[int]string{401: "invalid_client", 400: "unsupported_grant_type", 503: "temporarily_unavailable"} {
		c.srv.FailNext(managementtest.RouteToken, 1, status, 0)
		r := c.send("POST", mtPrefix+"/auth/token", map[string]string{"Authorization": mtBasic(c.srv.ClientID, c.srv.ClientSecret)}, `{"grant_type":"client_credentials"}`)
		r.want(t, status, `{"error":"`+code+`","error_description":"managementtest: injected failure"}`)
	}

	c.srv.FailNext(managementtest.RouteListUsers, 5, 500, 0)
	c.srv.ClearFaults()
	if r := c.api("GET", "/users", ""); r.status != 200 {
		t.Errorf("after ClearFaults: %d", r.status)
	}
}

// The SDK retries injected 503s, honouring Retry-After.
func TestFailNextClientRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer()
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		cfg := srv.Config()
		cfg.RetryWaitMax = time.Minute
		client, err := management.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv.FailNext(managementtest.RouteAuthenticate, 2, 503, 10*time.Second)
		start := time.Now()
		if _, err := client.Authenticate(context.Background(), "Bearer "+srv.IssueEndUserToken("u-1")); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if waited := time.Since(start); waited != 20*time.Second {
			t.Errorf("waited %v, want 20s (two Retry-After of 10s)", waited)
		}
		if got := srv.Requests(managementtest.RouteAuthenticate); got != 3 {
			t.Errorf("requests = %d, want 3", got)
		}
	})
}

func TestDelayNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mtMemory(t)
		c.token = c.newToken()
		c.srv.DelayNext(managementtest.RouteListUsers, 1, 3*time.Second)
		c.srv.FailNext(managementtest.RouteListUsers, 1, 502, 0)
		start := time.Now()
		c.api("GET", "/users", "").wantError(t, 502, "MANAGEMENTTEST.INJECTED_FAULT", "managementtest: injected failure")
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("delayed request took %v, want 3s", took)
		}
		start = time.Now()
		if r := c.api("GET", "/users", ""); r.status != 200 || time.Since(start) != 0 {
			t.Errorf("next request: %d after %v", r.status, time.Since(start))
		}

		// A request that gives up during the delay gets its context's error.
		c.srv.DelayNext(managementtest.RouteListUsers, 1, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", c.srv.URL+mtPrefix+"/users", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		_, err := c.hc.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

// Over a real connection, a delayed request whose client gives up is abandoned.
func TestDelayNextOverNetwork(t *testing.T) {
	c := mtStart(t)
	c.token = c.newToken()
	c.srv.DelayNext(managementtest.RouteListUsers, 1, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.srv.URL+mtPrefix+"/users", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if _, err := c.hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	// Close (from Cleanup) does not wait an hour: the handler saw the client leave.
}

// Close does not wait out a pending delay: it drops the delayed request.
func TestCloseEndsPendingDelay(t *testing.T) {
	// Not mtStart: a Close that hangs must not hang the test's cleanup too.
	// No keep-alives: the delayed request goes on a connection of its own.
	// On a reused one (the token's), net/http's Transport resends a GET
	// that the server dropped, and the resent request, not delayed, was
	// answered while Close ran (1 run in 20 under -race on a busy host).
	srv := managementtest.NewServer()
	c := &mtConn{t: t, srv: srv, hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	c.token = c.newToken()
	srv.DelayNext(managementtest.RouteListUsers, 1, time.Hour)
	errc := make(chan error, 1)
	go func() { // no deadline: only Close can end the request
		_, err := c.trySend("GET", mtPrefix+"/users", c.apiHeader(), "")
		errc <- err
	}()
	timeout := time.After(5 * time.Second)
	for srv.Requests(managementtest.RouteListUsers) == 0 {
		select {
		case <-timeout:
			t.Fatal("the request never reached the server")
		case <-time.After(time.Millisecond):
		}
	}
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-timeout:
		t.Fatal("Close did not return within 5s of a delayed request")
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("the delayed request was answered; want it dropped")
		}
		if n := srv.Requests(managementtest.RouteListUsers); n != 1 {
			t.Errorf("the server saw %d requests of the list; want 1, the delayed one", n)
		}
	case <-timeout:
		t.Fatal("the delayed request did not end within 5s")
	}
}
