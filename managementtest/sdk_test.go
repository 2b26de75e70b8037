package managementtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// End-to-end tests: the SDK against the fake, for every operation and
// error of the spec. They double as the fake's conformance tests.

func mtSDK(t testing.TB, opts ...managementtest.Option) (*managementtest.Server, *management.Client) {
	t.Helper()
	srv := managementtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	return srv, srv.Client()
}

func mtUserIDs(t testing.TB, seq func(func(*management.User, error) bool)) []string {
	t.Helper()
	var ids []string
	for u, err := range seq {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		ids = append(ids, u.ID)
	}
	return ids
}

func TestSDKUsersList(t *testing.T) {
	srv, client := mtSDK(t, managementtest.WithPageSize(3))
	mtSeedOrdered(srv)
	for i := 5; i <= 8; i++ {
		srv.AddUser(management.UserDetails{User: management.User{ID: fmt.Sprintf("u-%d", i), CreatedAt: mtTS(time.Duration(i) * time.Hour), UpdatedAt: mtTS(time.Duration(i) * time.Minute)}})
	}
	ctx := context.Background()
	tests := []struct {
		opts *management.ListOptions
		want []string
	}{
		{nil, []string{"u-8", "u-7", "u-6", "u-5", "u-4", "u-3", "u-2", "u-1"}},
		{&management.ListOptions{Direction: management.Ascending}, []string{"u-1", "u-2", "u-3", "u-4", "u-5", "u-6", "u-7", "u-8"}},
		{&management.ListOptions{OrderBy: management.OrderByUpdatedAt}, []string{"u-2", "u-4", "u-1", "u-3", "u-8", "u-7", "u-6", "u-5"}},
		{&management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}, []string{"u-5", "u-6", "u-7", "u-8", "u-3", "u-1", "u-4", "u-2"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, mtUserIDs(t, client.Users.List(ctx, tt.opts))); diff != "" {
			t.Errorf("List(%+v) (-want +got):\n%s", tt.opts, diff)
		}
	}
	if got := srv.Requests(managementtest.RouteListUsers); got != 4*3 {
		t.Errorf("list requests = %d, want 12 (3 pages each)", got)
	}

	// The items are the server's, field for field.
	for u, err := range client.Users.List(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want, _ := srv.User(u.ID)
		if diff := cmp.Diff(want.User, *u); diff != "" {
			t.Errorf("user %s (-server +listed):\n%s", u.ID, diff)
		}
	}
}

func TestSDKListPageAndResume(t *testing.T) {
	srv, client := mtSDK(t, managementtest.WithPageSize(2))
	mtSeedOrdered(srv)
	ctx := context.Background()

	p1, err := client.Things.ListPage(ctx, &management.ListOptions{Direction: management.Ascending})
	if err != nil {
		t.Fatal(err)
	}
	if got := thingIDs(p1.Items); !slices.Equal(got, []string{"t-1", "t-2"}) || p1.NextPage == "" {
		t.Fatalf("first page %v, next %q", got, p1.NextPage)
	}
	p2, err := client.Things.ListPage(ctx, &management.ListOptions{NextPage: p1.NextPage})
	if err != nil {
		t.Fatal(err)
	}
	if got := thingIDs(p2.Items); !slices.Equal(got, []string{"t-3", "t-4"}) || p2.NextPage != "" {
		t.Errorf("second page %v, next %q (want the last page)", got, p2.NextPage)
	}
	// List resumes from a link, too.
	var resumed []string
	for th, err := range client.Things.List(ctx, &management.ListOptions{NextPage: p1.NextPage}) {
		if err != nil {
			t.Fatal(err)
		}
		resumed = append(resumed, th.PhysicalID)
	}
	if !slices.Equal(resumed, []string{"t-3", "t-4"}) {
		t.Errorf("resumed List = %v", resumed)
	}

	// A link the service no longer knows: 400 COMMON.REQUEST_VALIDATION.
	srv.ForgetPages()
	_, err = client.Things.ListPage(ctx, &management.ListOptions{NextPage: p1.NextPage})
	var apiErr *management.APIError
	if !errors.Is(err, management.ErrValidation) || !errors.As(err, &apiErr) ||
		apiErr.Message != "The page parameter is not valid: drop page and start again from the first page" {
		t.Errorf("stale link: %v", err)
	}
	// The users' list does the same.
	up, err := client.Users.ListPage(ctx, nil)
	if err != nil || len(up.Items) != 2 || up.NextPage == "" {
		t.Fatalf("Users.ListPage = %+v, %v", up, err)
	}
	srv.ForgetPages()
	if _, err := client.Users.ListPage(ctx, &management.ListOptions{NextPage: up.NextPage}); !errors.Is(err, management.ErrValidation) {
		t.Errorf("stale users link: %v", err)
	}
}

func thingIDs(items []*management.Thing) []string {
	var ids []string
	for _, th := range items {
		ids = append(ids, th.PhysicalID)
	}
	return ids
}

// The SDK's List over a list that changes between pages skips and repeats nothing.
func TestSDKListWhileChanging(t *testing.T) {
	srv, client := mtSDK(t, managementtest.WithPageSize(3))
	var want []string
	for i := range 10 {
		id := fmt.Sprintf("t-%02d", i)
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id, CreatedAt: mtTS(time.Duration(i) * time.Minute)}})
		want = append(want, id)
	}
	ctx := context.Background()
	var got []string
	n := 0
	for th, err := range client.Things.List(ctx, &management.ListOptions{OrderBy: management.OrderByUpdatedAt}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, th.PhysicalID)
		n++
		// Move the last Thing of the listing to the front of the updatedAt
		// order, and add one, while the listing is under way.
		if _, err := client.Things.Update(ctx, want[0], management.ThingUpdate{Name: management.Ptr(fmt.Sprint(n))}); err != nil {
			t.Fatal(err)
		}
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: fmt.Sprintf("new-%02d", n)}})
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}

func TestSDKGet(t *testing.T) {
	c := mtStart(t)
	mtSeedFull(c)
	client := c.srv.Client()
	ctx := context.Background()

	u, err := client.Users.Get(ctx, "u-1")
	if err != nil {
		t.Fatal(err)
	}
	want := management.UserDetails{
		User: management.User{ID: "u-1", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada"), LastName: management.Ptr("Lovelace"),
			CreatedAt: mtTS(0), UpdatedAt: mtTS(time.Minute)},
		TermsOfUseVersionApproved: management.Ptr("v3"),
		EmailVerificationStatus:   management.EmailVerified,
		Consents:                  []management.Consent{{Key: "marketing", Value: management.ConsentAccept, UpdatedAt: mtTS(time.Second)}},
		CustomSettings:            map[string]any{"lang": "en"},
		AssociatedThings: []management.AssociatedThing{{PhysicalID: "t/1 x", Name: "Kitchen sensor", Model: "KS-2", FirmwareVersion: "1.4.2",
			LastSeenAt: management.Ptr(mtTS(3 * time.Hour)), AssociationData: management.AssociationData{AssociatedAt: mtTS(4 * time.Hour)}}},
	}
	if diff := cmp.Diff(want, *u); diff != "" {
		t.Errorf("Users.Get (-want +got):\n%s", diff)
	}

	th, err := client.Things.Get(ctx, "t/1 x")
	if err != nil {
		t.Fatal(err)
	}
	wantThing := management.ThingDetails{
		Thing: management.Thing{PhysicalID: "t/1 x", Name: "Kitchen sensor", Model: "KS-2", FirmwareVersion: "1.4.2",
			LastSeen: management.Ptr(mtTS(3 * time.Hour)), CreatedAt: mtTS(time.Hour), UpdatedAt: mtTS(2 * time.Hour)},
		Statuses:        []management.ThingStatus{{Name: "battery", StatusValue: "87", Date: mtTS(3 * time.Hour)}},
		CustomSettings:  map[string]any{"room": "kitchen", "threshold": json.Number("12345678901234567"), "tags": []any{"a", json.Number("1.5")}},
		AssociatedUsers: []management.AssociatedUser{{ID: "u-1", AssociationData: management.AssociationData{AssociatedAt: mtTS(4 * time.Hour)}}},
	}
	if diff := cmp.Diff(wantThing, *th); diff != "" {
		t.Errorf("Things.Get (-want +got):\n%s", diff)
	}
	// The server's inspection gives the same.
	if got, _ := c.srv.Thing("t/1 x"); !cmp.Equal(wantThing, got) {
		t.Errorf("Server.Thing differs: %s", cmp.Diff(wantThing, got))
	}

	for _, tt := range []struct {
		call func() error
		msg  string
	}{
		{func() error { _, err := client.Users.Get(ctx, "nobody"); return err }, "User nobody was not found"},
		{func() error { _, err := client.Things.Get(ctx, "a/b"); return err }, "Thing a/b was not found"},
		{func() error {
			_, err := client.Things.Update(ctx, "gone", management.ThingUpdate{Name: management.Ptr("x")})
			return err
		}, "Thing gone was not found"},
	} {
		err := tt.call()
		var apiErr *management.APIError
		if !errors.Is(err, management.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Message != tt.msg || apiErr.StatusCode != 404 {
			t.Errorf("err = %v, want 404 %q", err, tt.msg)
		}
	}
}

func TestSDKUpdateThing(t *testing.T) {
	srv, client := mtSDK(t)
	mtSeedPatchable(srv)
	ctx := context.Background()
	got, err := client.Things.Update(ctx, "t-1", management.ThingUpdate{
		Name:            management.Ptr("new"),
		FirmwareVersion: management.Ptr("2.0"),
		LastSeen:        management.Ptr(mtTS(48 * time.Hour)),
		Statuses:        []management.ThingStatus{{Name: "battery", StatusValue: "10", Date: mtTS(47 * time.Hour)}, {Name: "wifi", StatusValue: "ok", Date: mtTS(47 * time.Hour)}},
		CustomSettings:  map[string]any{"replace": "r", "remove": management.Unset, "add": []int{1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !got.UpdatedAt.After(mtTS(time.Hour).Time) {
		t.Errorf("updated_at did not move: %v", got.UpdatedAt)
	}
	want := management.ThingDetails{
		Thing: management.Thing{PhysicalID: "t-1", Name: "new", Model: "M", FirmwareVersion: "2.0",
			LastSeen: management.Ptr(mtTS(48 * time.Hour)), CreatedAt: mtTS(0), UpdatedAt: got.UpdatedAt},
		Statuses: []management.ThingStatus{
			{Name: "battery", StatusValue: "10", Date: mtTS(47 * time.Hour)},
			{Name: "mode", StatusValue: "eco", Date: mtTS(time.Minute)},
			{Name: "wifi", StatusValue: "ok", Date: mtTS(47 * time.Hour)},
		},
		CustomSettings:  map[string]any{"keep": "k", "replace": "r", "add": []any{json.Number("1")}},
		AssociatedUsers: []management.AssociatedUser{},
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("Update (-want +got):\n%s", diff)
	}
	if stored, _ := srv.Thing("t-1"); !cmp.Equal(want, stored) {
		t.Errorf("stored Thing differs: %s", cmp.Diff(want, stored))
	}
}

// The SDK sends Unset as the configured marker, and the fake removes with it.
func TestSDKUpdateCustomUnsetMarker(t *testing.T) {
	srv, client := mtSDK(t, managementtest.WithUnsetMarker("~unset~"))
	mtSeedPatchable(srv)
	got, err := client.Things.Update(context.Background(), "t-1", management.ThingUpdate{CustomSettings: map[string]any{"keep": management.Unset}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"replace": json.Number("1"), "remove": true}, got.CustomSettings); diff != "" {
		t.Errorf("custom settings (-want +got):\n%s", diff)
	}
}

func TestSDKConcurrentUpdatesAndReads(t *testing.T) {
	srv, client := mtSDK(t)
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	ctx := context.Background()
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			u := management.ThingUpdate{
				CustomSettings: map[string]any{fmt.Sprintf("k%02d", i): i},
				Statuses:       []management.ThingStatus{{Name: fmt.Sprintf("s%02d", i), StatusValue: "on", Date: mtTS(0)}},
			}
			if _, err := client.Things.Update(ctx, "t-1", u); err != nil {
				t.Errorf("Update %d: %v", i, err)
			}
		})
		wg.Go(func() {
			if _, err := client.Things.Get(ctx, "t-1"); err != nil {
				t.Errorf("Get: %v", err)
			}
		})
	}
	wg.Wait()
	th, err := client.Things.Get(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(th.CustomSettings) != n || len(th.Statuses) != n {
		t.Fatalf("%d custom settings and %d statuses, want %d of each", len(th.CustomSettings), len(th.Statuses), n)
	}
	for i := range n {
		if v := th.CustomSettings[fmt.Sprintf("k%02d", i)]; v != any(json.Number(fmt.Sprint(i))) {
			t.Errorf("k%02d = %v", i, v)
		}
	}
	if got := srv.Requests(managementtest.RouteToken); got != 1 {
		t.Errorf("token requests = %d, want 1 (shared token)", got)
	}
}

func TestSDKAssociations(t *testing.T) {
	srv, client := mtSDK(t)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := context.Background()
	a := management.NewAssociation{PhysicalID: "t-9", Model: "KS-2", FirmwareVersion: "1.0"}

	th, created, err := client.Users.AssociateThing(ctx, "u-1", a)
	if err != nil || !created {
		t.Fatalf("first AssociateThing = %v, %v; want created", created, err)
	}
	if len(th.AssociatedUsers) != 1 || th.AssociatedUsers[0].ID != "u-1" || th.Model != "KS-2" {
		t.Errorf("associated Thing = %+v", th)
	}
	th2, created, err := client.Users.AssociateThing(ctx, "u-1", a)
	if err != nil || created {
		t.Fatalf("second AssociateThing = %v, %v; want existing", created, err)
	}
	if !th2.AssociatedUsers[0].AssociationData.AssociatedAt.Equal(th.AssociatedUsers[0].AssociationData.AssociatedAt) {
		t.Errorf("association moved: %v then %v", th.AssociatedUsers, th2.AssociatedUsers)
	}
	u, err := client.Users.Get(ctx, "u-1")
	if err != nil || len(u.AssociatedThings) != 1 || u.AssociatedThings[0].PhysicalID != "t-9" {
		t.Fatalf("user after associate: %+v, %v", u, err)
	}

	if _, _, err := client.Users.AssociateThing(ctx, "nobody", a); !errors.Is(err, management.ErrNotFound) {
		t.Errorf("associate with unknown user: %v", err)
	}

	if err := client.Users.DisassociateThing(ctx, "u-1", "t-9"); err != nil {
		t.Fatalf("DisassociateThing: %v", err)
	}
	u, _ = client.Users.Get(ctx, "u-1")
	th, _ = client.Things.Get(ctx, "t-9")
	if len(u.AssociatedThings) != 0 || len(th.AssociatedUsers) != 0 {
		t.Errorf("after disassociate: %+v / %+v", u.AssociatedThings, th.AssociatedUsers)
	}
	for _, ids := range [][2]string{{"u-1", "t-9"}, {"nobody", "t-9"}, {"u-1", "nothing"}} {
		if err := client.Users.DisassociateThing(ctx, ids[0], ids[1]); !errors.Is(err, management.ErrNotFound) {
			t.Errorf("DisassociateThing(%s, %s) = %v, want ErrNotFound", ids[0], ids[1], err)
		}
	}
}

func TestSDKAuthenticate(t *testing.T) {
	c := mtStart(t, managementtest.WithCredentials("client-1", "secret-1"))
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	client := c.srv.Client()
	ctx := context.Background()

	got, err := client.Authenticate(ctx, "Bearer "+c.srv.IssueEndUserToken("u-1"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&management.EndUserAuthentication{Valid: true, UserID: "u-1", Role: management.RoleAppUser}, got); diff != "" {
		t.Errorf("valid token (-want +got):\n%s", diff)
	}

	got, err = client.Authenticate(ctx, "Bearer not-a-token")
	if err != nil {
		t.Fatal(err)
	}
	want := &management.EndUserAuthentication{ClientResponse: &management.ClientResponse{HTTPCode: 401,
		HTTPBody: management.ClientErrorBody{ErrorCode: 401, Reason: "auth.unauthorized", ErrorMessage: "The access token is invalid or has expired"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invalid token (-want +got):\n%s", diff)
	}

	got, err = client.Authenticate(ctx, "Bearer "+c.newToken())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&management.EndUserAuthentication{Valid: true, UserID: "client-1", Role: management.RoleServiceAccount}, got); diff != "" {
		t.Errorf("management token (-want +got):\n%s", diff)
	}
}

// The End User middleware against the fake: let through, relayed refusal,
// forbidden role, and failing closed when the service fails.
func TestSDKAuthenticatorMiddleware(t *testing.T) {
	c := mtStart(t)
	c.srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	auth := &management.Authenticator{Client: c.srv.Client(), CacheTTL: -1}
	app := httptest.NewServer(auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := management.EndUserFromContext(r.Context())
		fmt.Fprintf(w, "hello %s", u.ID)
	})))
	defer app.Close()
	call := func(header string) (int, string) {
		req, _ := http.NewRequest("GET", app.URL, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := app.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	if status, body := call("Bearer " + c.srv.IssueEndUserToken("u-1")); status != 200 || body != "hello u-1" {
		t.Errorf("valid: %d %q", status, body)
	}
	if status, body := call("Bearer nope"); status != 401 || !strings.Contains(body, "auth.unauthorized") {
		t.Errorf("invalid: %d %q", status, body)
	}
	if status, _ := call("Bearer " + c.newToken()); status != 403 {
		t.Errorf("management token: %d, want 403", status)
	}
	c.srv.FailNext(managementtest.RouteAuthenticate, 100, 503, 0)
	if status, _ := call("Bearer " + c.srv.IssueEndUserToken("u-1")); status != 503 {
		t.Errorf("service failing: %d, want 503", status)
	}
}

func TestSDKTokenErrors(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := context.Background()

	cfg := srv.Config()
	cfg.ClientSecret = "wrong"
	bad, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Users.Get(ctx, "u-1")
	var te *management.TokenError
	if !errors.Is(err, management.ErrInvalidClient) || !errors.As(err, &te) || te.StatusCode != 401 {
		t.Errorf("wrong secret: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "wrong") {
		t.Errorf("error %q shows the secret", err)
	}

	srv.FailNext(managementtest.RouteToken, 1, 400, 0)
	good, _ := management.NewClient(srv.Config())
	if _, err := good.Users.Get(ctx, "u-1"); !errors.Is(err, management.ErrUnsupportedGrantType) {
		t.Errorf("injected 400 on the token endpoint: %v", err)
	}
	if _, err := good.Users.Get(ctx, "u-1"); err != nil {
		t.Errorf("after the fault: %v", err)
	}
}

func TestSDKUnauthorizedAndRateLimited(t *testing.T) {
	srv, client := mtSDK(t)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	ctx := context.Background()

	// One refused token is replayed with a new one ...
	srv.FailNext(managementtest.RouteGetUser, 1, 401, 0)
	if _, err := client.Users.Get(ctx, "u-1"); err != nil {
		t.Errorf("one 401: %v", err)
	}
	// ... twice is ErrUnauthorized.
	srv.FailNext(managementtest.RouteGetUser, 2, 401, 0)
	if _, err := client.Users.Get(ctx, "u-1"); !errors.Is(err, management.ErrUnauthorized) {
		t.Errorf("two 401s: %v", err)
	}
	// 429 on every attempt is ErrRateLimited; fewer are retried away.
	srv.FailNext(managementtest.RouteGetUser, 2, 429, 0)
	if _, err := client.Users.Get(ctx, "u-1"); err != nil {
		t.Errorf("two 429s: %v", err)
	}
	srv.FailNext(managementtest.RouteGetUser, 5, 429, 0)
	if _, err := client.Users.Get(ctx, "u-1"); !errors.Is(err, management.ErrRateLimited) {
		t.Errorf("five 429s: %v", err)
	}
}

// Client and fake in one synctest bubble: token expiry, latency and
// deadlines on the fake clock.
func TestSDKInMemorySynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := managementtest.NewInMemoryServer(managementtest.WithTokenLifetime(time.Minute))
		srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
		client := srv.Client()
		ctx := context.Background()

		if _, err := client.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		if _, err := client.Users.Get(ctx, "u-1"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests(managementtest.RouteToken); got != 2 {
			t.Errorf("token requests = %d, want 2 (the first expired)", got)
		}

		srv.DelayNext(managementtest.RouteGetUser, 1, 10*time.Second)
		start := time.Now()
		if _, err := client.Users.Get(ctx, "u-1"); err != nil || time.Since(start) != 10*time.Second {
			t.Errorf("delayed Get: %v after %v", err, time.Since(start))
		}

		srv.DelayNext(managementtest.RouteGetUser, 1, time.Hour)
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := client.Users.Get(short, "u-1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get past its deadline: %v", err)
		}
	})
}
