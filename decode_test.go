package management

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// Helpers shared by the resource tests (users, things, associations,
// pagination, decoding). Their names start with "res".

// resSample returns the content of testdata/name.
func resSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading sample: %v", err)
	}
	return b
}

// resRaw answers status with body as it stands, labelled as JSON.
func resRaw(status int, body []byte) httpmock.Responder {
	return func(*http.Request) (*http.Response, error) {
		resp := httpmock.NewBytesResponse(status, body)
		resp.Header.Set("Content-Type", "application/json")
		return resp, nil
	}
}

// resServe sends every request but the token one to a recorder answering
// with next, and returns the recorder.
func resServe(mt *httpmock.MockTransport, next httpmock.Responder) *recorder {
	rec := &recorder{}
	mt.RegisterNoResponder(rec.respond(next))
	return rec
}

// resTS parses a wire timestamp.
func resTS(t testing.TB, s string) Timestamp {
	t.Helper()
	tm, err := time.Parse(wireTimeLayout, s)
	if err != nil {
		t.Fatalf("bad test timestamp %q: %v", s, err)
	}
	return Timestamp{tm}
}

// resTSPtr is resTS as a pointer.
func resTSPtr(t testing.TB, s string) *Timestamp {
	t.Helper()
	ts := resTS(t, s)
	return &ts
}

// resJSON decodes JSON as the client does (numbers as json.Number), for
// comparing bodies without losing integer precision.
func resJSON(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q is not JSON: %v", s, err)
	}
	return v
}

// resWant is a request a test expects: the escaped path below the base
// URL, the raw query, and the JSON body ("" for none).
type resWant struct {
	Method string
	Path   string
	Query  string
	Body   string
}

// resCheckRequests compares the recorded requests with want: method, escaped
// path, raw query, the headers every call carries, and the JSON body.
func resCheckRequests(t testing.TB, got []recorded, want []resWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		w := want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Query != w.Query {
			t.Errorf("request %d: %s %s ? %s, want %s %s ? %s", i, g.Method, g.Path, g.Query, w.Method, w.Path, w.Query)
		}
		headers := map[string]string{
			"Authorization": g.Header.Get("Authorization"),
			"Content-Type":  g.Header.Get("Content-Type"),
			"Accept":        g.Header.Get("Accept"),
		}
		wantHeaders := map[string]string{
			"Authorization": "Bearer " + mockToken,
			"Content-Type":  "application/json",
			"Accept":        "application/json",
		}
		if diff := cmp.Diff(wantHeaders, headers); diff != "" {
			t.Errorf("request %d headers (-want +got):\n%s", i, diff)
		}
		if w.Body == "" {
			if g.Body != "" {
				t.Errorf("request %d has body %q, want none", i, g.Body)
			}
			continue
		}
		if diff := cmp.Diff(resJSON(t, w.Body), resJSON(t, g.Body)); diff != "" {
			t.Errorf("request %d body (-want +got):\n%s", i, diff)
		}
	}
}

// resNoRequest fails the test when mt was asked anything at all (the token
// endpoint included): the call should have been refused before sending.
func resNoRequest(t testing.TB, mt *httpmock.MockTransport) {
	t.Helper()
	if n := mt.GetTotalCallCount(); n != 0 {
		t.Errorf("%d requests were sent, want none: %v", n, mt.GetCallCountInfo())
	}
}

// resIsDecodeError fails unless err is a *DecodeError.
func resIsDecodeError(t testing.TB, err error) *DecodeError {
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
		name string
		path string
		run  func(context.Context, *Client) error
	}
	userCalls := []call{{"Users.Get", "/users/u-1", func(ctx context.Context, c *Client) error {
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}}}
	thingCalls := []call{
		{"Things.Get", "/things/p-1", func(ctx context.Context, c *Client) error {
			_, err := c.Things.Get(ctx, "p-1")
			return err
		}},
		{"Things.Update", "/things/p-1", func(ctx context.Context, c *Client) error {
			_, err := c.Things.Update(ctx, "p-1", ThingUpdate{Name: Ptr("n")})
			return err
		}},
		{"Users.AssociateThing", "/users/u-1/associated_things", func(ctx context.Context, c *Client) error {
			_, _, err := c.Users.AssociateThing(ctx, "u-1", NewAssociation{"p-1", "m", "1"})
			return err
		}},
	}
	usersPageCalls := []call{
		{"Users.ListPage", "/users", func(ctx context.Context, c *Client) error {
			_, err := c.Users.ListPage(ctx, nil)
			return err
		}},
		{"Users.List", "/users", func(ctx context.Context, c *Client) error {
			for _, err := range c.Users.List(ctx, nil) {
				return err
			}
			return nil
		}},
	}
	thingsPageCalls := []call{
		{"Things.ListPage", "/things", func(ctx context.Context, c *Client) error {
			_, err := c.Things.ListPage(ctx, nil)
			return err
		}},
		{"Things.List", "/things", func(ctx context.Context, c *Client) error {
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
					c, mt := newMockClient(t, Config{})
					resServe(mt, resRaw(http.StatusOK, resSample(t, sample)))
					de := resIsDecodeError(t, cl.run(t.Context(), c))
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
	notFound := []byte(`{"reason": "COMMON.ENTITY_NOT_FOUND", "error_message": "gone"}`)
	tests := []struct {
		name   string
		status int
		body   []byte
		run    func(context.Context, *Client) (any, error)
		want   string
	}{
		{"Users.Get null", 200, []byte(`null`), func(ctx context.Context, c *Client) (any, error) { return c.Users.Get(ctx, "u-1") },
			"management: GET /users/u-1: 200 response: no User id"},
		{"Users.Get error shape", 200, notFound, func(ctx context.Context, c *Client) (any, error) { return c.Users.Get(ctx, "u-1") },
			"management: GET /users/u-1: 200 response: no User id"},
		{"Things.Get no physical id", 200, []byte(`{"id": "p-1", "name": "n"}`), func(ctx context.Context, c *Client) (any, error) {
			return c.Things.Get(ctx, "p-1")
		}, "management: GET /things/p-1: 200 response: no Thing physical_id"},
		{"Things.Update error shape", 200, notFound, func(ctx context.Context, c *Client) (any, error) {
			return c.Things.Update(ctx, "p-1", ThingUpdate{Name: Ptr("n")})
		}, "management: PATCH /things/p-1: 200 response: no Thing physical_id"},
		{"AssociateThing 201 null", 201, []byte(`null`), func(ctx context.Context, c *Client) (any, error) {
			th, created, err := c.Users.AssociateThing(ctx, "u-1", NewAssociation{"p-1", "m", "1"})
			if created {
				t.Error("created with an error")
			}
			return th, err
		}, "management: POST /users/u-1/associated_things: 201 response: no Thing physical_id"},
		{"Users.ListPage null users", 200, []byte(`{"users": null, "next_page": null}`), func(ctx context.Context, c *Client) (any, error) {
			return c.Users.ListPage(ctx, nil)
		}, `management: GET /users: 200 response: no "users" array`},
		{"Things.ListPage error shape", 200, notFound, func(ctx context.Context, c *Client) (any, error) {
			return c.Things.ListPage(ctx, nil)
		}, `management: GET /things: 200 response: no "things" array`},
		{"Things.ListPage item without physical id", 200, []byte(`{"things": [{"physical_id": "p-1"}, {"physical_id": ""}]}`),
			func(ctx context.Context, c *Client) (any, error) { return c.Things.ListPage(ctx, nil) },
			"management: GET /things: 200 response: things[1] has no physical_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			resServe(mt, resRaw(tt.status, tt.body))
			got, err := tt.run(t.Context(), c)
			de := resIsDecodeError(t, err)
			// tt.want without what DecodeError adds of the answer (its
			// Content-Type and first bytes, tested on their own).
			head, cause, _ := strings.Cut(tt.want, " response: ")
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
		resPages(mt, map[string]httpmock.Responder{
			resUsersPath:             resUsers(resUsersPath+"?page=2", "u-1"),
			resUsersPath + "?page=2": resRaw(http.StatusOK, []byte(`{"users": [{"id": "u-2"}, {"email": null}], "next_page": null}`)),
		})
		ids, errs := resCollect(c.Users.List(t.Context(), nil), resUserID)
		if !cmp.Equal([]string{"u-1"}, ids) || len(errs) != 1 {
			t.Fatalf("ids %v, errors %v; want u-1 then one error", ids, errs)
		}
		resIsDecodeError(t, errs[0])
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
	resServe(mt, resRaw(http.StatusOK, []byte(`{"users": [], "things": [], "next_page": null}`)))
	if up, err := c.Users.ListPage(t.Context(), nil); err != nil || len(up.Items) != 0 || up.NextPage != "" {
		t.Errorf("Users.ListPage = %v, %v; want an empty last page", up, err)
	}
	if tp, err := c.Things.ListPage(t.Context(), nil); err != nil || len(tp.Items) != 0 || tp.NextPage != "" {
		t.Errorf("Things.ListPage = %v, %v; want an empty last page", tp, err)
	}
	for _, body := range []string{"", "null", "{}"} {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodDelete, mockPrefix+"/users/u-1/associated_things/p-1", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "DELETE")
			testHeader(t, r, "Authorization", "Bearer "+mockToken)
			testBody(t, r, "")
			return resRaw(http.StatusOK, []byte(body))(r)
		})
		if err := c.Users.DisassociateThing(t.Context(), "u-1", "p-1"); err != nil {
			t.Errorf("DisassociateThing with body %q: %v", body, err)
		}
		if n := mt.GetTotalCallCount(); n != 2 {
			t.Errorf("%d requests, want the token's and the DELETE", n)
		}
	}
}

// The token response sample is accepted, and its token is what the next
// call carries.
func TestDecodeTokenResponseSample(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/auth/token", resRaw(http.StatusOK, resSample(t, "token_response.json")))
	rec := resServe(mt, resRaw(http.StatusOK, resSample(t, "user_details_anonymous.json")))
	if _, err := c.Users.Get(t.Context(), "u-anon"); err != nil {
		t.Fatal(err)
	}
	got := rec.all()
	if len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer sample-token-from-testdata" {
		t.Fatalf("requests %+v, want one carrying the sample's token", got)
	}
}

// Both error shapes of the spec are decoded into their typed errors.
func TestDecodeErrorSamples(t *testing.T) {
	t.Run("management", func(t *testing.T) {
		c, mt := newMockClient(t, Config{})
		resServe(mt, resRaw(http.StatusNotFound, resSample(t, "error_management.json")))
		_, err := c.Users.Get(t.Context(), "u-404")
		var ae *APIError
		if !errors.As(err, &ae) || !errors.Is(err, ErrNotFound) {
			t.Fatalf("error %v, want an *APIError matching ErrNotFound", err)
		}
		want := &APIError{StatusCode: 404, Reason: ReasonEntityNotFound, Message: "User u-404 was not found", Method: "GET", Path: "/users/u-404"}
		if diff := cmp.Diff(want, ae); diff != "" {
			t.Errorf("APIError (-want +got):\n%s", diff)
		}
	})
	t.Run("token", func(t *testing.T) {
		c, mt := newMockClient(t, Config{})
		mt.RegisterResponder(http.MethodPost, mockPrefix+"/auth/token", resRaw(http.StatusUnauthorized, resSample(t, "error_token.json")))
		rec := resServe(mt, resRaw(http.StatusOK, []byte(`{}`)))
		_, err := c.Things.Get(t.Context(), "p-1")
		var te *TokenError
		if !errors.As(err, &te) || !errors.Is(err, ErrInvalidClient) {
			t.Fatalf("error %v, want a *TokenError matching ErrInvalidClient", err)
		}
		want := &TokenError{StatusCode: 401, Code: "invalid_client", Description: "Bad client credentials"}
		if diff := cmp.Diff(want, te); diff != "" {
			t.Errorf("TokenError (-want +got):\n%s", diff)
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%d API requests without a token, want none", n)
		}
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
			c, mt := newMockClient(t, Config{})
			resServe(mt, resRaw(http.StatusOK, resSample(t, tt.sample)))
			got, err := c.Authenticate(t.Context(), "Bearer eu-1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// resFuzzBody is the context key under which a fuzz input travels to the
// mock transport's responder, so that one client serves every input
// without shared mutable state.
type resFuzzBody struct{}

// resFuzzClient returns a client whose every API call is answered 200 with
// the bytes stored in the request's context under resFuzzBody.
func resFuzzClient(f *testing.F) *Client {
	f.Helper()
	c, mt := newMockClient(f, Config{MaxRetries: -1})
	mt.RegisterNoResponder(func(req *http.Request) (*http.Response, error) {
		body, _ := req.Context().Value(resFuzzBody{}).([]byte)
		return httpmock.NewBytesResponse(http.StatusOK, body), nil
	})
	return c
}

// resFuzzSeeds adds the testdata samples to f's seed corpus.
func resFuzzSeeds(f *testing.F, names ...string) {
	for _, name := range names {
		f.Add(resSample(f, name))
	}
	f.Add([]byte(`null`))
	f.Add([]byte(`{"custom_settings": {"a": [[[[{"b": 1e400}]]]]}}`))
}

// resFuzzCheck fails unless err is nil or a *DecodeError: whatever the
// body, the decoder reports it and never panics.
func resFuzzCheck(t *testing.T, body []byte, err error) {
	t.Helper()
	var de *DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("body %q: error %v (%T) is not a *DecodeError", body, err, err)
	}
}

// resPlainDecode decodes body into a fresh V as the client does (numbers
// as json.Number, one value only), without any check of what it holds.
func resPlainDecode[V any](body []byte) (V, error) {
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

// resFuzzAgree checks the client's answer against a plain decode of body
// into a fresh V: the client succeeds, with the same value, exactly when
// the plain decode succeeds with a value that identifies what was asked
// for; otherwise it fails with a *DecodeError. A 2xx body that is null, an
// error shape or lacks the identifying field is never an empty success.
func resFuzzAgree[V any](t *testing.T, body []byte, got *V, err error, identified func(*V) bool) {
	t.Helper()
	resFuzzCheck(t, body, err)
	want, werr := resPlainDecode[V](body)
	if wantOK := werr == nil && identified(&want); (err == nil) != wantOK {
		t.Fatalf("body %q: client error %v; plain decoder error %v, identified %t", body, err, werr, werr == nil && identified(&want))
	}
	if err == nil {
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Fatalf("body %q: client and plain decoder differ (-plain +client):\n%s", body, diff)
		}
	}
}

// resFuzzListAgree checks a ListPage answer against a plain decode of body
// into the wire page W: the page is accepted (and then holds the plain
// decode's items) exactly when the decode succeeds with an items array
// (present and not null) whose every item has an id. A page linking to
// itself is accepted by the decoder, then refused as a link.
func resFuzzListAgree[W, T any](t *testing.T, body []byte, got *Page[*T], err error, items func(*W) []T, id func(*T) string) {
	t.Helper()
	decoded := err == nil || errors.Is(err, ErrInvalidPageLink)
	if !decoded {
		resFuzzCheck(t, body, err)
	}
	want, werr := resPlainDecode[W](body)
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
	resFuzzSeeds(f, "user_details.json", "user_details_anonymous.json", "user_details_future.json", "invalid_truncated.json",
		"invalid_error_shape.json", "invalid_user_no_id.json")
	c := resFuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), resFuzzBody{}, body)
		u, err := c.Users.Get(ctx, "u-1")
		resFuzzAgree(t, body, u, err, func(u *UserDetails) bool { return u.ID != "" })
	})
}

func FuzzDecodeThingDetails(f *testing.F) {
	resFuzzSeeds(f, "thing_details.json", "thing_details_bare.json", "associate_response.json", "invalid_type_statuses.json",
		"invalid_error_shape.json", "invalid_thing_no_physical_id.json")
	c := resFuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), resFuzzBody{}, body)
		th, err := c.Things.Get(ctx, "p-1")
		resFuzzAgree(t, body, th, err, func(th *ThingDetails) bool { return th.PhysicalID != "" })
	})
}

func FuzzDecodeListPage(f *testing.F) {
	resFuzzSeeds(f, "users_page.json", "things_page.json", "invalid_type_users_page.json",
		"invalid_error_shape.json", "invalid_page_no_items.json", "invalid_page_null_items.json",
		"invalid_users_page_no_id.json", "invalid_things_page_no_physical_id.json")
	f.Add([]byte(`{"users": [], "next_page": "/v2/api/management/service_connect/users"}`))
	c := resFuzzClient(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.WithValue(t.Context(), resFuzzBody{}, body)
		up, uerr := c.Users.ListPage(ctx, nil)
		resFuzzListAgree(t, body, up, uerr, func(p *usersPage) []User { return p.Users }, resUserID)
		tp, terr := c.Things.ListPage(ctx, nil)
		resFuzzListAgree(t, body, tp, terr, func(p *thingsPage) []Thing { return p.Things }, resThingID)
	})
}
