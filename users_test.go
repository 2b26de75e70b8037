package management

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// usersPageWant is testdata/users_page.json, field by field.
func usersPageWant(t testing.TB) *Page[*User] {
	return &Page[*User]{
		Items: []*User{
			{
				ID: "u-1", Email: Ptr("ada@example.test"), FirstName: Ptr("Ada"), LastName: Ptr("Lovelace"),
				CreatedAt: stamp(t, "2024-01-02T03:04:05.678Z"), UpdatedAt: stamp(t, "2024-02-03T04:05:06.789Z"),
			},
			{
				ID:        "u-anon",
				CreatedAt: stamp(t, "2024-03-04T05:06:07.000Z"), UpdatedAt: stamp(t, "2024-03-04T05:06:07.001Z"),
			},
		},
		NextPage: "/v2/api/management/service_connect/users?page=eyJhZnRlciI6InUtYW5vbiJ9",
	}
}

func TestUsersListPageDecodesSample(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		testQuery(t, r, "")
		testBody(t, r, "")
		return rawResponder(http.StatusOK, "application/json", readSample(t, "users_page.json"))(r)
	})

	got, err := c.Users.ListPage(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(usersPageWant(t), got); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 1})
}

// The order parameters are sent only when asked for, in a fixed order.
func TestUsersListPageOrderQuery(t *testing.T) {
	tests := []struct {
		name string
		opts *ListOptions
		want string
	}{
		{"nil options", nil, ""},
		{"zero options", &ListOptions{}, ""},
		{"order by", &ListOptions{OrderBy: OrderByUpdatedAt}, "order_by=updatedAt"},
		{"direction", &ListOptions{Direction: Ascending}, "order_direction=asc"},
		{"both", &ListOptions{OrderBy: OrderByUpdatedAt, Direction: Descending}, "order_by=updatedAt&order_direction=desc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				testQuery(t, r, tt.want)
				testBody(t, r, "")
				return rawResponder(http.StatusOK, "application/json", `{"users": [], "next_page": null}`)(r)
			})
			page, err := c.Users.ListPage(t.Context(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&Page[*User]{}, page); diff != "" {
				t.Errorf("empty last page (-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 1})
		})
	}
}

func TestUsersGetDecodesSamples(t *testing.T) {
	tests := []struct {
		sample string
		want   func(t testing.TB) *UserDetails
	}{
		{"user_details.json", func(t testing.TB) *UserDetails {
			return &UserDetails{
				User: User{
					ID: "u-1", Email: Ptr("ada@example.test"), FirstName: Ptr("Ada"), LastName: Ptr("Lovelace"),
					CreatedAt: stamp(t, "2024-01-02T03:04:05.678Z"), UpdatedAt: stamp(t, "2024-02-03T04:05:06.789Z"),
				},
				TermsOfUseVersionApproved: Ptr("2.1"),
				EmailVerificationStatus:   EmailVerified,
				Consents: []Consent{
					{Key: "marketing", Value: ConsentAccept, UpdatedAt: stamp(t, "2024-01-05T10:00:00.000Z")},
					{Key: "analytics", Value: ConsentReject, UpdatedAt: stamp(t, "2024-01-06T11:30:00.500Z")},
				},
				CustomSettings: map[string]any{
					"big_counter": json.Number("9007199254740993"),
					"ratio":       json.Number("0.25"),
					"night_mode":  true,
					"nickname":    "ada",
					"nothing":     nil,
					"rooms":       []any{"kitchen", json.Number("2"), map[string]any{"floor": json.Number("1")}},
					"schedule": map[string]any{
						"weekdays": map[string]any{"wake": "07:00", "alarms": []any{json.Number("1"), json.Number("2")}},
						"enabled":  false,
					},
				},
				AssociatedThings: []AssociatedThing{
					{
						PhysicalID: "AC:DE:48:00:11:22", Name: "Kitchen sensor", Model: "TH-100", FirmwareVersion: "1.4.2",
						LastSeenAt:      stampPtr(t, "2024-05-06T07:08:09.010Z"),
						AssociationData: AssociationData{AssociatedAt: stamp(t, "2024-01-03T08:00:00.000Z")},
					},
					{
						PhysicalID: "never-seen", Name: "Spare", Model: "TH-100", FirmwareVersion: "1.0.0",
						AssociationData: AssociationData{AssociatedAt: stamp(t, "2024-01-04T09:00:00.000Z")},
					},
				},
			}
		}},
		{"user_details_anonymous.json", func(t testing.TB) *UserDetails {
			return &UserDetails{
				User: User{
					ID:        "u-anon",
					CreatedAt: stamp(t, "2024-03-04T05:06:07.000Z"), UpdatedAt: stamp(t, "2024-03-04T05:06:07.001Z"),
				},
				IsAnonymous:             true,
				EmailVerificationStatus: EmailUnset,
				Consents:                []Consent{},
				AssociatedThings:        []AssociatedThing{},
			}
		}},
		{"user_details_future.json", func(t testing.TB) *UserDetails {
			return &UserDetails{
				User: User{
					ID: "u-future", Email: Ptr("grace@example.test"), FirstName: Ptr("Grace"), LastName: Ptr("Hopper"),
					CreatedAt: stamp(t, "2024-06-01T00:00:00.000Z"), UpdatedAt: stamp(t, "2024-06-01T00:00:00.000Z"),
				},
				TermsOfUseVersionApproved: Ptr("3.0"),
				EmailVerificationStatus:   "Suspended", // unknown values are kept as sent
				Consents:                  []Consent{{Key: "research", Value: "AskLater", UpdatedAt: stamp(t, "2024-06-01T00:00:00.000Z")}},
				CustomSettings:            map[string]any{},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				testQuery(t, r, "")
				testBody(t, r, "")
				return rawResponder(http.StatusOK, "application/json", readSample(t, tt.sample))(r)
			})
			got, err := c.Users.Get(t.Context(), "u-1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want(t), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users/u-1": 1})
		})
	}
}

// The null/empty distinctions of the wire survive: null arrays and custom
// settings are nil, empty ones are empty.
func TestUsersGetNullsAreNil(t *testing.T) {
	c, mt := setup(t)
	for id, sample := range map[string]string{"u-future": "user_details_future.json", "u-anon": "user_details_anonymous.json"} {
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/"+id, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			testBody(t, r, "")
			return rawResponder(http.StatusOK, "application/json", readSample(t, sample))(r)
		})
	}
	got, err := c.Users.Get(t.Context(), "u-future")
	if err != nil {
		t.Fatal(err)
	}
	if got.AssociatedThings != nil || got.CustomSettings == nil {
		t.Errorf("AssociatedThings %#v (want nil for null), CustomSettings %#v (want empty, not nil)", got.AssociatedThings, got.CustomSettings)
	}
	got, err = c.Users.Get(t.Context(), "u-anon")
	if err != nil {
		t.Fatal(err)
	}
	if got.CustomSettings != nil || got.Consents == nil || got.Email != nil || got.TermsOfUseVersionApproved != nil {
		t.Errorf("anonymous user decoded as %+v: want nil CustomSettings, Email and terms, empty Consents", got)
	}
}

// Identifiers travel as one escaped path segment.
func TestUsersGetEscapesID(t *testing.T) {
	tests := []struct{ id, path string }{
		{"u/1 ?#%", "/v2/api/management/service_connect/users/u%2F1%20%3F%23%25"},
		{"a+b@c:d", "/v2/api/management/service_connect/users/a+b@c:d"},
		{"...", "/v2/api/management/service_connect/users/..."},
		{"é", "/v2/api/management/service_connect/users/%C3%A9"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c, mt := setup(t)
			// Registered at the escaped path: a request escaped otherwise
			// reaches no handler and fails the test.
			mt.RegisterResponder(http.MethodGet, mockBaseURL+tt.path, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				testQuery(t, r, "")
				testBody(t, r, "")
				return rawResponder(http.StatusOK, "application/json", readSample(t, "user_details_anonymous.json"))(r)
			})
			if _, err := c.Users.Get(t.Context(), tt.id); err != nil {
				t.Fatal(err)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockBaseURL + tt.path: 1})
		})
	}
}

func TestUsersGetRefusesBadIDs(t *testing.T) {
	for _, id := range []string{"", ".", ".."} {
		t.Run(id, func(t *testing.T) {
			c, mt := setup(t)
			got, err := c.Users.Get(t.Context(), id)
			if !errors.Is(err, ErrInvalidArgument) || got != nil {
				t.Errorf("Get(%q) = %v, %v; want nil, ErrInvalidArgument", id, got, err)
			}
			testCalls(t, mt, nil)
		})
	}
}

func TestUsersGetNotFound(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-404", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		testBody(t, r, "")
		return rawResponder(http.StatusNotFound, "application/json", readSample(t, "error_management.json"))(r)
	})
	got, err := c.Users.Get(t.Context(), "u-404")
	if !errors.Is(err, ErrNotFound) || got != nil {
		t.Errorf("Get = %v, %v; want nil, ErrNotFound", got, err)
	}
}

// dotIDs are identifiers a server could resolve as a dot segment: ".",
// "..", with a ";" path parameter a servlet container drops, percent-
// encoded (once or twice), or as a part between slashes or backslashes
// (a proxy may decode %2F before it resolves dot segments).
var dotIDs = []string{
	".", "..", "..;x", ".;x", "..;", ".;", "..;jsessionid=1",
	"%2e%2e", "%2E.;x", "..%3bx", ".%3B", "%252e%252e", "%25252e",
	"../admin", "a/../b", "a/.", `..\admin`, "a%2F..%2Fb", "x/..;y/z",
}

// Identifiers a server could resolve as a dot segment are refused by every
// call that puts one in a path, before anything is sent (the token request
// included), and the error names the argument.
func TestIDsResolvingAsDotSegmentsAreRefused(t *testing.T) {
	full := NewAssociation{PhysicalID: "p-1", Model: "m", FirmwareVersion: "1.0"}
	calls := []struct {
		name, arg string
		run       func(c *Client, id string) (any, error)
	}{
		{"Users.Get", "userID", func(c *Client, id string) (any, error) { return c.Users.Get(t.Context(), id) }},
		{"Things.Get", "physicalID", func(c *Client, id string) (any, error) { return c.Things.Get(t.Context(), id) }},
		{"Things.Update", "physicalID", func(c *Client, id string) (any, error) {
			return c.Things.Update(t.Context(), id, ThingUpdate{Name: Ptr("n")})
		}},
		{"Users.AssociateThing user", "userID", func(c *Client, id string) (any, error) {
			th, _, err := c.Users.AssociateThing(t.Context(), id, full)
			return th, err
		}},
		// The physical id travels in the body, but it is the Thing's path
		// segment in every later call, which would refuse it.
		{"Users.AssociateThing physical id", "NewAssociation.PhysicalID", func(c *Client, id string) (any, error) {
			a := full
			a.PhysicalID = id
			th, _, err := c.Users.AssociateThing(t.Context(), "u-1", a)
			return th, err
		}},
		{"Users.DisassociateThing user", "userID", func(c *Client, id string) (any, error) {
			return nil, c.Users.DisassociateThing(t.Context(), id, "p-1")
		}},
		{"Users.DisassociateThing physical id", "physicalID", func(c *Client, id string) (any, error) {
			return nil, c.Users.DisassociateThing(t.Context(), "u-1", id)
		}},
	}
	for _, cl := range calls {
		for _, id := range dotIDs {
			t.Run(cl.name+"/"+id, func(t *testing.T) {
				c, mt := setup(t)
				got, err := cl.run(c, id)
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("error %v, want ErrInvalidArgument", err)
				}
				if got != nil && !reflect.ValueOf(got).IsNil() {
					t.Errorf("result %v with an error", got)
				}
				want := fmt.Sprintf("management: invalid argument: %s %q could be resolved as a dot segment", cl.arg, id)
				if err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				testCalls(t, mt, nil)
			})
		}
	}
}

// Identifiers that only look like dot segments are sent, escaped as one
// path segment.
func TestIDLookalikesAreSent(t *testing.T) {
	tests := []struct{ id, path string }{
		{"...", "/v2/api/management/service_connect/users/..."},
		{"...;x", "/v2/api/management/service_connect/users/...%3Bx"},
		{";..", "/v2/api/management/service_connect/users/%3B.."},
		{"a;../b", "/v2/api/management/service_connect/users/a%3B..%2Fb"},
		{".a;.", "/v2/api/management/service_connect/users/.a%3B."},
		{"%2e%2e%2e", "/v2/api/management/service_connect/users/%252e%252e%252e"},
		{"..%zz", "/v2/api/management/service_connect/users/..%25zz"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodGet, "=~^"+regexp.QuoteMeta(mockPrefix+"/users/"), func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testHeader(t, r, "Authorization", "Bearer "+mockToken)
				if got := r.URL.EscapedPath(); got != tt.path {
					t.Errorf("path %q, want %q", got, tt.path)
				}
				return rawResponder(http.StatusOK, "application/json", readSample(t, "user_details_anonymous.json"))(r)
			})
			u, err := c.Users.Get(t.Context(), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if u.ID != "u-anon" {
				t.Errorf("User %q, want the sample's u-anon", u.ID)
			}
			if n := mt.GetTotalCallCount(); n != 2 {
				t.Errorf("%d requests, want the token's and the User's", n)
			}
		})
	}
}
