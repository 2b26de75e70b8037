package management

import (
	"context"
	"net/http"
	"testing"
)

// startedBy keys the name of the caller that started an operation.
type startedBy struct{}

// Two operations on a cold Client share one token fetch: the second, which
// joins the first's flight, is reported with both contexts; the first, the
// starter, is not.
func TestObserverFlightJoined(t *testing.T) {
	type join struct{ waiter, starter any }
	joins := make(chan join, 4)
	obs := &Observer{
		OperationStart: func(ctx context.Context, op Operation) context.Context { return ctx },
		FlightJoined: func(ctx, started context.Context) {
			joins <- join{ctx.Value(startedBy{}), started.Value(startedBy{})}
		},
	}
	c, mt := setup(t, Config{Observer: obs})
	sent, release := make(chan struct{}, 1), make(chan struct{})
	mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
		sent <- struct{}{}
		<-release // until the second operation waits for this fetch
		return jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600})(r)
	})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", jsonResponder(http.StatusOK, map[string]any{"id": "u-1"}))

	done := make(chan error, 2)
	get := func(name string) {
		_, err := c.Users.Get(context.WithValue(t.Context(), startedBy{}, name), "u-1")
		done <- err
	}
	go get("first")
	<-sent // the first call's flight is under way
	go get("second")
	got := <-joins
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got != (join{"second", "first"}) {
		t.Errorf("FlightJoined(waiter of %v, started by %v), want (second, first)", got.waiter, got.starter)
	}
	if len(joins) != 0 {
		t.Errorf("%d more FlightJoined calls, want none (the starter is not reported)", len(joins))
	}
}
