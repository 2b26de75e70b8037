package management

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// asDecodeError fails unless err is a *DecodeError.
func asDecodeError(t testing.TB, err error) *DecodeError {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	return de
}

// Every malformed, truncated or wrong-typed sample fails with a
// *DecodeError naming the call, on every endpoint that could receive it.
func TestDecodeInvalidSamples(t *testing.T) {
	samples := []string{
		"invalid_syntax.json",
		"invalid_truncated.json",
		"invalid_empty.json",
		"invalid_trailing.json",
		"invalid_type_id.json",
		"invalid_type_is_anonymous.json",
		"invalid_type_consents.json",
		"invalid_type_custom_settings.json",
		"invalid_type_timestamp.json",
		"invalid_timestamp_format.json",
		"invalid_type_top_level.json",
		"invalid_null.json",
		"invalid_error_shape.json",
		"invalid_user_no_id.json",
	}
	thingSamples := []string{
		"invalid_syntax.json",
		"invalid_truncated.json",
		"invalid_empty.json",
		"invalid_type_custom_settings.json",
		"invalid_type_timestamp.json",
		"invalid_type_statuses.json",
		"invalid_type_last_seen.json",
		"invalid_type_top_level.json",
		"invalid_null.json",
		"invalid_error_shape.json",
		"invalid_thing_no_physical_id.json",
	}
	pageSamples := []string{
		"invalid_syntax.json",
		"invalid_empty.json",
		"invalid_type_next_page.json",
		"invalid_type_top_level.json",
		"invalid_null.json",
		"invalid_error_shape.json",
		"invalid_page_no_items.json",
		"invalid_page_null_items.json",
	}
	usersPageSamples := append([]string{"invalid_type_users_page.json", "invalid_users_page_no_id.json", "things_page.json"}, pageSamples...)
	thingsPageSamples := append([]string{"invalid_type_things_page.json", "invalid_things_page_no_physical_id.json", "users_page.json"}, pageSamples...)
	type call struct {
		name         string
		method, path string // the request, below the prefix
		body         string // the request's body, "" for none
		run          func(context.Context, *Client) error
	}
	userCalls := []call{{"Users.Get", "GET", "/users/u-1", "", func(ctx context.Context, c *Client) error {
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}}}
	thingCalls := []call{
		{"Things.Get", "GET", "/things/p-1", "", func(ctx context.Context, c *Client) error {
			_, err := c.Things.Get(ctx, "p-1")
			return err
		}},
		{"Things.Update", "PATCH", "/things/p-1", `{"name":"n"}`, func(ctx context.Context, c *Client) error {
			_, err := c.Things.Update(ctx, "p-1", ThingUpdate{Name: Ptr("n")})
			return err
		}},
		{"Users.AssociateThing", "POST", "/users/u-1/associated_things", `{"physical_id":"p-1","model":"m","firmware_version":"1"}`,
			func(ctx context.Context, c *Client) error {
				_, _, err := c.Users.AssociateThing(ctx, "u-1", NewAssociation{"p-1", "m", "1"})
				return err
			}},
	}
	usersPageCalls := []call{
		{"Users.ListPage", "GET", "/users", "", func(ctx context.Context, c *Client) error {
			_, err := c.Users.ListPage(ctx, nil)
			return err
		}},
		{"Users.List", "GET", "/users", "", func(ctx context.Context, c *Client) error {
			for _, err := range c.Users.List(ctx, nil) {
				return err
			}
			return nil
		}},
	}
	thingsPageCalls := []call{
		{"Things.ListPage", "GET", "/things", "", func(ctx context.Context, c *Client) error {
			_, err := c.Things.ListPage(ctx, nil)
			return err
		}},
		{"Things.List", "GET", "/things", "", func(ctx context.Context, c *Client) error {
			for _, err := range c.Things.List(ctx, nil) {
				return err
			}
			return nil
		}},
	}
	groups := []struct {
		samples []string
		calls   []call
	}{
		{samples, userCalls},
		{thingSamples, thingCalls},
		{usersPageSamples, usersPageCalls},
		{thingsPageSamples, thingsPageCalls},
	}
	for _, g := range groups {
		for _, sample := range g.samples {
			for _, cl := range g.calls {
				t.Run(cl.name+"/"+sample, func(t *testing.T) {
					c, mt := setup(t)
					mt.RegisterResponder(cl.method, mockPrefix+cl.path, func(r *http.Request) (*http.Response, error) {
						testMethod(t, r, cl.method)
						testAPIHeaders(t, r)
						testBody(t, r, cl.body)
						return rawResponder(http.StatusOK, "application/json", readSample(t, sample))(r)
					})
					de := asDecodeError(t, cl.run(t.Context(), c))
					if de.Path != cl.path || de.StatusCode != http.StatusOK {
						t.Errorf("DecodeError names %s %d, want %s 200", de.Path, de.StatusCode, cl.path)
					}
				})
			}
		}
	}
}

// A 2xx answer that does not identify what was asked for is a
// *DecodeError saying why, never an empty success: null, an error body sent
// with 200 or 201 (not an *APIError either), a User without an id, a Thing
// without a physical id, a page without its array or with an item lacking
// its id, on any page of a listing.
func TestDecodeEmptySuccessIsDecodeError(t *testing.T) {
	const notFound = `{"reason": "COMMON.ENTITY_NOT_FOUND", "error_message": "gone"}`
	tests := []struct {
		name   string
		status int
		body   string
		sent   string // the request's body, "" for none
		run    func(context.Context, *Client) (any, error)
		want   string // names the request the handler expects
	}{
		{"Users.Get null", 200, `null`, "", func(ctx context.Context, c *Client) (any, error) { return c.Users.Get(ctx, "u-1") },
			"management: GET /users/u-1: 200 response: no User id"},
		{"Users.Get error shape", 200, notFound, "", func(ctx context.Context, c *Client) (any, error) { return c.Users.Get(ctx, "u-1") },
			"management: GET /users/u-1: 200 response: no User id"},
		{"Things.Get no physical id", 200, `{"id": "p-1", "name": "n"}`, "", func(ctx context.Context, c *Client) (any, error) {
			return c.Things.Get(ctx, "p-1")
		}, "management: GET /things/p-1: 200 response: no Thing physical_id"},
		{"Things.Update error shape", 200, notFound, `{"name":"n"}`, func(ctx context.Context, c *Client) (any, error) {
			return c.Things.Update(ctx, "p-1", ThingUpdate{Name: Ptr("n")})
		}, "management: PATCH /things/p-1: 200 response: no Thing physical_id"},
		{"AssociateThing 201 null", 201, `null`, `{"physical_id":"p-1","model":"m","firmware_version":"1"}`, func(ctx context.Context, c *Client) (any, error) {
			th, created, err := c.Users.AssociateThing(ctx, "u-1", NewAssociation{"p-1", "m", "1"})
			if created {
				t.Error("created with an error")
			}
			return th, err
		}, "management: POST /users/u-1/associated_things: 201 response: no Thing physical_id"},
		{"Users.ListPage null users", 200, `{"users": null, "next_page": null}`, "", func(ctx context.Context, c *Client) (any, error) {
			return c.Users.ListPage(ctx, nil)
		}, `management: GET /users: 200 response: no "users" array`},
		{"Things.ListPage error shape", 200, notFound, "", func(ctx context.Context, c *Client) (any, error) {
			return c.Things.ListPage(ctx, nil)
		}, `management: GET /things: 200 response: no "things" array`},
		{"Things.ListPage item without physical id", 200, `{"things": [{"physical_id": "p-1"}, {"physical_id": ""}]}`, "",
			func(ctx context.Context, c *Client) (any, error) { return c.Things.ListPage(ctx, nil) },
			"management: GET /things: 200 response: things[1] has no physical_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// tt.want without what DecodeError adds of the answer (its
			// Content-Type and first bytes, tested on their own).
			head, cause, _ := strings.Cut(tt.want, " response: ")
			// The handler expects the request that the error names.
			var method, path string
			if _, err := fmt.Sscanf(head, "management: %s %s", &method, &path); err != nil {
				t.Fatalf("want %q names no request: %v", tt.want, err)
			}
			path = strings.TrimSuffix(path, ":")
			c, mt := setup(t)
			mt.RegisterResponder(method, mockPrefix+path, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, method)
				testAPIHeaders(t, r)
				testBody(t, r, tt.sent)
				return rawResponder(tt.status, "application/json", tt.body)(r)
			})
			got, err := tt.run(t.Context(), c)
			de := asDecodeError(t, err)
			if got := err.Error(); de.StatusCode != tt.status || !strings.HasPrefix(got, head+" response") || de.Err.Error() != cause {
				t.Errorf("error %q (status %d), want %q (status %d)", got, de.StatusCode, tt.want, tt.status)
			}
			var ae *APIError
			if errors.As(err, &ae) || errors.Is(err, ErrNotFound) {
				t.Errorf("error %v is taken for an error answer", err)
			}
			if got != nil && !reflect.ValueOf(got).IsNil() {
				t.Errorf("result %v with an error", got)
			}
		})
	}
	t.Run("Users.List page 2 item without id", func(t *testing.T) {
		c, mt := setup(t)
		registerPages(t, mt, map[string]httpmock.Responder{
			usersPath:             pageOfUsers(usersPath+"?page=2", "u-1"),
			usersPath + "?page=2": rawResponder(http.StatusOK, "application/json", `{"users": [{"id": "u-2"}, {"email": null}], "next_page": null}`),
		})
		ids, errs := collect(c.Users.List(t.Context(), nil), idOfUser)
		if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 {
			t.Fatalf("ids %v, errors %v; want u-1 then one error", ids, errs)
		}
		asDecodeError(t, errs[0])
		got := errs[0].Error()
		if !strings.HasPrefix(got, "management: listing /users, page 2: GET /users: 200 response") || !strings.Contains(got, ": users[1] has no id") {
			t.Errorf("error %q, want it to name page 2 of /users and users[1] without id", got)
		}
	})
}

// What the spec documents as a success stays one: an empty array is the
// last page, and disassociation's empty 200 (or any body) is no error.
func TestDecodeDocumentedSuccesses(t *testing.T) {
	c, mt := setup(t)
	for _, path := range []string{"/users", "/things"} {
		mt.RegisterResponder(http.MethodGet, mockPrefix+path, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			testQuery(t, r, "")
			testBody(t, r, "")
			return rawResponder(http.StatusOK, "application/json", `{"users": [], "things": [], "next_page": null}`)(r)
		})
	}
	if up, err := c.Users.ListPage(t.Context(), nil); err != nil || len(up.Items) != 0 || up.NextPage != "" {
		t.Errorf("Users.ListPage = %v, %v; want an empty last page", up, err)
	}
	if tp, err := c.Things.ListPage(t.Context(), nil); err != nil || len(tp.Items) != 0 || tp.NextPage != "" {
		t.Errorf("Things.ListPage = %v, %v; want an empty last page", tp, err)
	}
	for _, body := range []string{"", "{}", " { } "} { // null is refused: see TestDisassociateRefusesOtherBodies
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/p-1", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "DELETE")
			testHeader(t, r, "Authorization", "Bearer "+mockToken)
			testBody(t, r, "")
			return rawResponder(http.StatusOK, "application/json", body)(r)
		})
		if err := c.Users.DisassociateThing(t.Context(), "u-1", "p-1"); err != nil {
			t.Errorf("DisassociateThing with body %q: %v", body, err)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "DELETE " + mockPrefix + "/users/u-1/associated_things/p-1": 1})
	}
}

// The token response sample is accepted, and its token is what the next
// call carries.
func TestDecodeTokenResponseSample(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "POST")
		testHeader(t, r, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(mockID+":"+mockSecret)))
		testBody(t, r, grantBody)
		return rawResponder(http.StatusOK, "application/json", readSample(t, "token_response.json"))(r)
	})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-anon", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer sample-token-from-testdata")
		testBody(t, r, "")
		return rawResponder(http.StatusOK, "application/json", readSample(t, "user_details_anonymous.json"))(r)
	})
	if _, err := c.Users.Get(t.Context(), "u-anon"); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users/u-anon": 1})
}

// Both error shapes of the spec are decoded into their typed errors.
func TestDecodeErrorSamples(t *testing.T) {
	t.Run("management", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-404", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			testBody(t, r, "")
			return rawResponder(http.StatusNotFound, "application/json", readSample(t, "error_management.json"))(r)
		})
		_, err := c.Users.Get(t.Context(), "u-404")
		var ae *APIError
		if !errors.As(err, &ae) || !errors.Is(err, ErrNotFound) {
			t.Fatalf("error %v, want an *APIError matching ErrNotFound", err)
		}
		want := &APIError{StatusCode: 404, Reason: ReasonEntityNotFound, Message: "User u-404 was not found", Method: "GET", Path: "/users/u-404"}
		if diff := cmp.Diff(want, ae, ignoreAnswerMeta); diff != "" {
			t.Errorf("APIError (-want +got):\n%s", diff)
		}
	})
	t.Run("token", func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "POST")
			testBody(t, r, grantBody)
			return rawResponder(http.StatusUnauthorized, "application/json", readSample(t, "error_token.json"))(r)
		})
		// No handler for the Thing: a request without a token fails the test.
		_, err := c.Things.Get(t.Context(), "p-1")
		var te *TokenError
		if !errors.As(err, &te) || !errors.Is(err, ErrInvalidClient) {
			t.Fatalf("error %v, want a *TokenError matching ErrInvalidClient", err)
		}
		want := &TokenError{StatusCode: 401, Code: "invalid_client", Description: "Bad client credentials"}
		if diff := cmp.Diff(want, te, ignoreAnswerMeta); diff != "" {
			t.Errorf("TokenError (-want +got):\n%s", diff)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1})
	})
}

// The authenticate samples, valid and invalid, decode through Authenticate.
func TestDecodeAuthenticateSamples(t *testing.T) {
	tests := []struct {
		sample string
		want   *EndUserAuthentication
	}{
		{"authenticate_valid.json", &EndUserAuthentication{Valid: true, UserID: "u-1", Role: RoleAppUser}},
		{"authenticate_invalid.json", &EndUserAuthentication{ClientResponse: &ClientResponse{
			HTTPCode: 401,
			HTTPBody: ClientErrorBody{ErrorCode: 401, Reason: "auth.unauthorized", ErrorMessage: "The access token is invalid or has expired"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testAPIHeaders(t, r)
				testJSONBody(t, r, `{"access_token": "Bearer eu-12345678"}`)
				return rawResponder(http.StatusOK, "application/json", readSample(t, tt.sample))(r)
			})
			got, err := c.Authenticate(t.Context(), "Bearer eu-12345678")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// fuzzBody is the context key under which a fuzz input travels to the
// mock transport's handlers, so that one client serves every input
// without shared mutable state.
type fuzzBody struct{}

// fuzzClient returns a client whose reads of u-1, p-1 and the lists are
// answered 200 with the bytes stored in the request's context under
// fuzzBody.
func fuzzClient(f *testing.F) *Client {
	f.Helper()
	c, mt := setup(f, Config{MaxRetries: -1})
	for _, path := range []string{"/users/u-1", "/things/p-1", "/users", "/things"} {
		mt.RegisterResponder(http.MethodGet, mockPrefix+path, func(req *http.Request) (*http.Response, error) {
			body, _ := req.Context().Value(fuzzBody{}).([]byte)
			return httpmock.NewBytesResponse(http.StatusOK, body), nil
		})
	}
	return c
}

// fuzzSeeds adds the testdata samples to f's seed corpus.
func fuzzSeeds(f *testing.F, names ...string) {
	for _, name := range names {
		f.Add([]byte(readSample(f, name)))
	}
	f.Add([]byte(`null`))
	f.Add([]byte(`{"custom_settings": {"a": [[[[{"b": 1e400}]]]]}}`))
}

// fuzzCheck fails unless err is nil or a *DecodeError: whatever the
// body, the decoder reports it and never panics.
func fuzzCheck(t *testing.T, body []byte, err error) {
	t.Helper()
	var de *DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("body %q: error %v (%T) is not a *DecodeError", body, err, err)
	}
}

// plainDecode decodes body into a fresh V as the client does (numbers
// as json.Number, one value only), without any check of what it holds.
func plainDecode[V any](body []byte) (V, error) {
	var v V
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data")
		}
	}
	return v, err
}

// fuzzAgree checks the client's answer against a plain decode of body
// into a fresh V: the client succeeds, with the same value, exactly when
// the plain decode succeeds with a value that identifies what was asked
// for; otherwise it fails with a *DecodeError. A 2xx body that is null, an
// error shape or lacks the identifying field is never an empty success.
func fuzzAgree[V any](t *testing.T, body []byte, got *V, err error, identified func(*V) bool) {
	t.Helper()
	fuzzCheck(t, body, err)
	want, werr := plainDecode[V](body)
	if wantOK := werr == nil && identified(&want); (err == nil) != wantOK {
		t.Fatalf("body %q: client error %v; plain decoder error %v, identified %t", body, err, werr, werr == nil && identified(&want))
	}
	if err == nil {
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Fatalf("body %q: client and plain decoder differ (-plain +client):\n%s", body, diff)
		}
	}
}

// fuzzListAgree checks a ListPage answer against a plain decode of body
// into the wire page W: the page is accepted (and then holds the plain
// decode's items) exactly when the decode succeeds with an items array
// (present and not null) whose every item has an id. A page linking to
// itself is accepted by the decoder, then refused as a link.
func fuzzListAgree[W, T any](t *testing.T, body []byte, got *Page[*T], err error, items func(*W) []T, id func(*T) string) {
	t.Helper()
	decoded := err == nil || errors.Is(err, ErrInvalidPageLink)
	if !decoded {
		fuzzCheck(t, body, err)
	}
	want, werr := plainDecode[W](body)
	var wantItems []T
	identified := false
	if werr == nil {
		wantItems = items(&want)
		identified = wantItems != nil && !slices.ContainsFunc(wantItems, func(item T) bool { return id(&item) == "" })
	}
	if decoded != identified {
		t.Fatalf("body %q: client error %v; plain decoder error %v, identified %t", body, err, werr, identified)
	}
	if err != nil {
		return
	}
	gotItems := make([]T, 0, len(got.Items))
	for _, item := range got.Items {
		if item == nil {
			t.Fatalf("body %q: a nil item in a page", body)
		}
		gotItems = append(gotItems, *item)
	}
	if diff := cmp.Diff(wantItems, gotItems); diff != "" {
		t.Fatalf("body %q: client and plain decoder differ (-plain +client):\n%s", body, diff)
	}
}

func FuzzDecodeUserDetails(f *testing.F) {
	fuzzSeeds(f, "user_details.json", "user_details_anonymous.json", "user_details_future.json", "invalid_truncated.json",
		"invalid_error_shape.json", "invalid_user_no_id.json")
	c := fuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), fuzzBody{}, body)
		u, err := c.Users.Get(ctx, "u-1")
		fuzzAgree(t, body, u, err, func(u *UserDetails) bool { return u.ID != "" })
	})
}

func FuzzDecodeThingDetails(f *testing.F) {
	fuzzSeeds(f, "thing_details.json", "thing_details_bare.json", "associate_response.json", "invalid_type_statuses.json",
		"invalid_error_shape.json", "invalid_thing_no_physical_id.json")
	c := fuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), fuzzBody{}, body)
		th, err := c.Things.Get(ctx, "p-1")
		fuzzAgree(t, body, th, err, func(th *ThingDetails) bool { return th.PhysicalID != "" })
	})
}

func FuzzDecodeListPage(f *testing.F) {
	fuzzSeeds(f, "users_page.json", "things_page.json", "invalid_type_users_page.json",
		"invalid_error_shape.json", "invalid_page_no_items.json", "invalid_page_null_items.json",
		"invalid_users_page_no_id.json", "invalid_things_page_no_physical_id.json")
	f.Add([]byte(`{"users": [], "next_page": "/v2/api/management/service_connect/users"}`))
	c := fuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), fuzzBody{}, body)
		up, uerr := c.Users.ListPage(ctx, nil)
		fuzzListAgree(t, body, up, uerr, func(p *usersPage) []User { return p.Users }, idOfUser)
		tp, terr := c.Things.ListPage(ctx, nil)
		fuzzListAgree(t, body, tp, terr, func(p *thingsPage) []Thing { return p.Things }, idOfThing)
	})
}
