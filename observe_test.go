package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// obsEvent is one hook call, as obsRecorder writes it down.
type obsEvent struct {
	Hook   string
	Op     Operation
	Result OperationResult // Err replaced by ErrText
	Retry  RetryInfo
	Auth   AuthOutcome
	Delta  int
	// Parent is the obsParent value of the hook's context: the route of
	// the operation it runs in, "" outside any.
	Parent  string
	ErrText string
}

// obsParent keys the route of the innermost operation in a context.
type obsParent struct{}

// obsRecorder is an Observer that records every hook call, and marks the
// context of each operation with its route.
type obsRecorder struct {
	mu     sync.Mutex
	events []obsEvent
}

func (r *obsRecorder) add(ctx context.Context, e obsEvent) {
	e.Parent, _ = ctx.Value(obsParent{}).(string)
	if e.Result.Err != nil {
		e.ErrText, e.Result.Err = e.Result.Err.Error(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *obsRecorder) observer() *Observer {
	return &Observer{
		OperationStart: func(ctx context.Context, op Operation) context.Context {
			r.add(ctx, obsEvent{Hook: "start", Op: op})
			return context.WithValue(ctx, obsParent{}, op.Route)
		},
		OperationDone: func(ctx context.Context, op Operation, res OperationResult) {
			r.add(ctx, obsEvent{Hook: "done", Op: op, Result: res})
		},
		Retry: func(ctx context.Context, op Operation, ri RetryInfo) {
			r.add(ctx, obsEvent{Hook: "retry", Op: op, Retry: ri})
		},
		AuthCheck: func(ctx context.Context, o AuthOutcome) {
			r.add(ctx, obsEvent{Hook: "check", Auth: o})
		},
		AuthCallsInFlight: func(ctx context.Context, delta int) {
			r.add(ctx, obsEvent{Hook: "calls", Delta: delta})
		},
	}
}

func (r *obsRecorder) recorded() []obsEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]obsEvent(nil), r.events...)
}

// A read retried once: the operation is named by its route template with
// the id apart, the token fetch is an operation inside it, the retry is
// reported with its status and wait, the end with the final status,
// attempts and total wait, and the HTTP request carries the operation's
// context.
func TestObserverOperationRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &obsRecorder{}
		c, mt := setup(t, Config{Observer: rec.observer(), RetryWaitMin: time.Second, RetryWaitMax: time.Second})
		calls := 0
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u%201", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testHeader(t, r, "Authorization", "Bearer "+mockToken)
			if got := r.Context().Value(obsParent{}); got != "/users/{user_id}" {
				t.Errorf("the HTTP request's context carries operation %v, want /users/{user_id}", got)
			}
			if calls++; calls == 1 {
				return httpmock.NewStringResponse(http.StatusServiceUnavailable, ""), nil
			}
			return jsonResponder(http.StatusOK, map[string]any{"id": "u 1"})(r)
		})
		if _, err := c.Users.Get(t.Context(), "u 1"); err != nil {
			t.Fatal(err)
		}
		get := Operation{Method: "GET", Route: "/users/{user_id}", PathValues: map[string]string{"user_id": "u 1"}}
		tok := Operation{Method: "POST", Route: "/auth/token"}
		want := []obsEvent{
			{Hook: "start", Op: get},
			{Hook: "start", Op: tok, Parent: "/users/{user_id}"},
			{Hook: "done", Op: tok, Parent: "/auth/token", Result: OperationResult{Status: 200, Attempts: 1}},
			{Hook: "retry", Op: get, Parent: "/users/{user_id}", Retry: RetryInfo{Attempt: 1, Status: 503, Wait: time.Second}},
			{Hook: "done", Op: get, Parent: "/users/{user_id}", Result: OperationResult{Status: 200, Attempts: 2, RetryWait: time.Second}},
		}
		if diff := cmp.Diff(want, rec.recorded()); diff != "" {
			t.Errorf("hook calls (-want +got):\n%s", diff)
		}
	})
}

// Every operation is named by its route template, pages after the first
// included, with the raw ids in PathValues.
func TestObserverRoutes(t *testing.T) {
	rec := &obsRecorder{}
	c, mt := setup(t, Config{Observer: rec.observer()})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		if r.URL.RawQuery == "" {
			return pageOfUsers(defaultPathPrefix+"/users?cursor=2", "u-1")(r)
		}
		return pageOfUsers("", "u-2")(r)
	})
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/t-1", jsonResponder(http.StatusOK, map[string]any{"physical_id": "t-1"}))
	mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/t-1", httpmock.NewStringResponder(http.StatusNoContent, ""))
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/users/u-1/associated_things", jsonResponder(http.StatusCreated, map[string]any{"physical_id": "t-1"}))
	ctx := t.Context()
	for _, err := range c.Users.List(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Things.Update(ctx, "t-1", ThingUpdate{Name: Ptr("n")})
	must(t, err)
	_, _, err = c.Users.AssociateThing(ctx, "u-1", NewAssociation{PhysicalID: "t-1", Model: "m", FirmwareVersion: "1"})
	must(t, err)
	must(t, c.Users.DisassociateThing(ctx, "u-1", "t-1"))

	var got []string
	for _, e := range rec.recorded() {
		if e.Hook == "done" {
			got = append(got, fmt.Sprintf("%s %v %d", e.Op.Name(), e.Op.PathValues, e.Result.Status))
		}
	}
	want := []string{
		"POST /auth/token map[] 200",
		"GET /users map[] 200",
		"GET /users map[] 200",
		"PATCH /things/{thing_physical_id} map[thing_physical_id:t-1] 200",
		"POST /users/{user_id}/associated_things map[user_id:u-1] 201",
		"DELETE /users/{user_id}/associated_things/{physical_id} map[physical_id:t-1 user_id:u-1] 204",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A refused operation ends with its status and error; one that got no
// answer with status 0.
func TestObserverFailures(t *testing.T) {
	rec := &obsRecorder{}
	c, mt := setup(t, Config{Observer: rec.observer(), MaxRetries: -1})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-404", jsonResponder(http.StatusNotFound, map[string]any{"reason": "user.not_found"}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things/t-down", httpmock.NewErrorResponder(errors.New("connection refused")))
	_, err404 := c.Users.Get(t.Context(), "u-404")
	_, errDown := c.Things.Get(t.Context(), "t-down")
	var got []obsEvent
	for _, e := range rec.recorded() {
		if e.Hook == "done" && e.Op.Route != "/auth/token" {
			got = append(got, e)
		}
	}
	want := []obsEvent{
		{Hook: "done", Op: Operation{Method: "GET", Route: "/users/{user_id}", PathValues: map[string]string{"user_id": "u-404"}},
			Parent: "/users/{user_id}", Result: OperationResult{Status: 404, Attempts: 1}, ErrText: err404.Error()},
		{Hook: "done", Op: Operation{Method: "GET", Route: "/things/{thing_physical_id}", PathValues: map[string]string{"thing_physical_id": "t-down"}},
			Parent: "/things/{thing_physical_id}", Result: OperationResult{Attempts: 1}, ErrText: errDown.Error()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ends (-want +got):\n%s", diff)
	}
}

// The Authenticator reports each check's outcome, and each call's start
// and end.
func TestObserverAuthenticator(t *testing.T) {
	rec := &obsRecorder{}
	c, _ := authnSetup(t, Config{Observer: rec.observer()}, authnAnswers())
	a := &Authenticator{Client: c}
	for _, header := range []string{"Bearer eu-alice", "Bearer eu-alice", ""} {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		_, _ = a.Check(r)
	}
	var got []string
	for _, e := range rec.recorded() {
		switch e.Hook {
		case "check":
			got = append(got, "check "+e.Auth.String())
		case "calls":
			got = append(got, fmt.Sprintf("calls %+d", e.Delta))
		case "done":
			got = append(got, "done "+e.Op.Name())
		}
	}
	want := []string{
		"calls +1", "done POST /auth/token", "done POST /authenticate", "calls -1",
		"check miss", "check hit", "check refused",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

// An Observer with only some hooks set, or none, is fine.
func TestObserverPartial(t *testing.T) {
	var retries int
	c, mt := setup(t, Config{Observer: &Observer{Retry: func(context.Context, Operation, RetryInfo) { retries++ }}})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1",
		httpmock.ResponderFromMultipleResponses([]*http.Response{
			httpmock.NewStringResponse(http.StatusBadGateway, ""),
			httpmock.NewStringResponse(http.StatusOK, `{"id":"u-1"}`),
		}))
	if _, err := c.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
	if retries != 1 {
		t.Errorf("Retry called %d times, want 1", retries)
	}
	c, mt = setup(t, Config{Observer: &Observer{}})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", jsonResponder(http.StatusOK, map[string]any{"id": "u-1"}))
	if _, err := c.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
}

func TestAuthOutcomeString(t *testing.T) {
	got := []string{AuthHit.String(), AuthMiss.String(), AuthRefused.String(), AuthOutcome(0).String()}
	if diff := cmp.Diff([]string{"hit", "miss", "refused", "unknown"}, got); diff != "" {
		t.Error(diff)
	}
}
