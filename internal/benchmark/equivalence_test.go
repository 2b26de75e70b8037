package benchmark

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
)

// The comparisons are fair only if both sides do the same work: these tests
// check that the baseline decodes what the SDK decodes, and that the server
// refuses requests without the token.

func benchTimestamp(t time.Time) management.Timestamp { return management.Timestamp{Time: t} }

func benchUserFromBaseline(u *baseUser) management.User {
	return management.User{
		ID: u.ID, Email: u.Email, FirstName: u.FirstName, LastName: u.LastName,
		CreatedAt: benchTimestamp(u.CreatedAt), UpdatedAt: benchTimestamp(u.UpdatedAt),
	}
}

func benchDetailsFromBaseline(u *baseUserDetails) *management.UserDetails {
	d := &management.UserDetails{
		User:                      benchUserFromBaseline(&u.baseUser),
		IsAnonymous:               u.IsAnonymous,
		TermsOfUseVersionApproved: u.TermsOfUseVersionApproved,
		EmailVerificationStatus:   management.EmailVerificationStatus(u.EmailVerificationStatus),
		CustomSettings:            u.CustomSettings,
	}
	for _, c := range u.Consents {
		d.Consents = append(d.Consents, management.Consent{Key: c.Key, Value: management.ConsentValue(c.Value), UpdatedAt: benchTimestamp(c.UpdatedAt)})
	}
	for _, a := range u.AssociatedThings {
		at := management.AssociatedThing{
			PhysicalID: a.PhysicalID, Name: a.Name, Model: a.Model, FirmwareVersion: a.FirmwareVersion,
			AssociationData: management.AssociationData{AssociatedAt: benchTimestamp(a.AssociationData.AssociatedAt)},
		}
		if a.LastSeenAt != nil {
			ts := benchTimestamp(*a.LastSeenAt)
			at.LastSeenAt = &ts
		}
		d.AssociatedThings = append(d.AssociatedThings, at)
	}
	return d
}

func TestBaselineGetMatchesSDK(t *testing.T) {
	s := newBenchServer(t, 0, 600*time.Second)
	ctx := context.Background()
	got, err := newBenchSDK(t, s, nil).Users.Get(ctx, benchUserID)
	if err != nil {
		t.Fatal(err)
	}
	base, err := newBenchBaseline(t, s, nil).getUser(ctx, benchUserID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(benchDetailsFromBaseline(base), got); diff != "" {
		t.Errorf("baseline and SDK decode the User differently (-baseline +sdk):\n%s", diff)
	}
	if len(got.Consents) != 3 || len(got.AssociatedThings) != 2 || len(got.CustomSettings) != 8 {
		t.Errorf("the SingleUser lost content: %d consents, %d Things, %d settings", len(got.Consents), len(got.AssociatedThings), len(got.CustomSettings))
	}
}

func TestBaselineListMatchesSDK(t *testing.T) {
	const users = 1_050 // 11 pages, the last one short
	s := newBenchServer(t, users, 600*time.Second)
	ctx := context.Background()
	var sdk []management.User
	for u, err := range newBenchSDK(t, s, nil).Users.List(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		sdk = append(sdk, *u)
	}
	var base []management.User
	if err := newBenchBaseline(t, s, nil).listUsers(ctx, func(u *baseUser) { base = append(base, benchUserFromBaseline(u)) }); err != nil {
		t.Fatal(err)
	}
	if len(sdk) != users {
		t.Fatalf("SDK listed %d Users, want %d", len(sdk), users)
	}
	if diff := cmp.Diff(base, sdk); diff != "" {
		t.Errorf("baseline and SDK list different Users (-baseline +sdk):\n%s", diff)
	}
	if sdk[9].Email != nil || sdk[8].Email == nil {
		t.Errorf("every tenth generated User should be anonymous: %+v, %+v", sdk[8], sdk[9])
	}
}

func TestBenchServerRefusesWithoutToken(t *testing.T) {
	s := newBenchServer(t, 200, 600*time.Second)
	for _, path := range []string{"/users", "/users/" + benchUserID} {
		req, err := http.NewRequest(http.MethodGet, s.URL+benchPrefix+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: status %d, want 401", path, resp.StatusCode)
		}
	}
	// The SDK is refused the same way: its 401 replay gets the same token back.
	c, err := management.NewClient(management.Config{BaseURL: s.URL, TokenSource: benchStaticToken("wrong")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Users.Get(context.Background(), benchUserID); !errors.Is(err, management.ErrUnauthorized) {
		t.Errorf("SDK with a wrong token: %v, want ErrUnauthorized", err)
	}
}

type benchStaticToken string

func (s benchStaticToken) Token(context.Context) (*management.Token, error) {
	return &management.Token{AccessToken: string(s), TokenType: "Bearer"}, nil
}
