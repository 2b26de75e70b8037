package management

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jarcoal/httpmock"
)

// The fixture of the package's unit tests, in the manner of go-github's
// github_test.go. setup gives a Client and the httpmock transport it sends
// through; a test registers a handler for each request it expects, and the
// handler asserts what it receives (testMethod, testHeader, testAPIHeaders,
// testQuery, testBody, testJSONBody) before it answers (jsonResponder,
// rawResponder). registerPages does the same for the pages of a listing,
// and testCalls checks which requests were made, and how often.

const (
	mockBaseURL = "https://api.example.test"
	mockPrefix  = mockBaseURL + defaultPathPrefix
	tokenURL    = mockPrefix + "/auth/token"
	mockID      = "client-id-1"
	mockSecret  = "s3cr3t-value-never-printed"
	mockToken   = "mgmt-token-1"
)

// setup returns a Client configured by cfg (at most one) and the httpmock
// transport it sends through: a fresh one, never httpmock's global. The
// token endpoint answers mockToken for 600 s (register another handler on
// tokenURL to change that). A request that no handler was registered for
// fails the test and is answered 418, which is never retried. Fields of cfg
// left zero get test values: the mock base URL and credentials, and retry
// waits of a millisecond or two.
func setup(t testing.TB, cfg ...Config) (*Client, *httpmock.MockTransport) {
	t.Helper()
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.BaseURL == "" {
		c.BaseURL = mockBaseURL
	}
	if c.TokenSource == nil && c.ClientID == "" {
		c.ClientID, c.ClientSecret = mockID, mockSecret
	}
	if c.RetryWaitMin == 0 && c.RetryWaitMax == 0 {
		c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, 2*time.Millisecond
	}
	mt := httpmock.NewMockTransport()
	c.HTTPClient = &http.Client{Transport: mt}
	client, err := NewClient(c)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	mt.RegisterResponder(http.MethodPost, tokenURL,
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	mt.RegisterNoResponder(func(r *http.Request) (*http.Response, error) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		return httpmock.NewStringResponse(http.StatusTeapot, "no handler for this request"), nil
	})
	return client, mt
}

// testMethod asserts the request's method.
func testMethod(t testing.TB, r *http.Request, want string) {
	t.Helper()
	if r.Method != want {
		t.Errorf("request method: got %q, want %q", r.Method, want)
	}
}

// testHeader asserts one header of the request: a single value, want; ""
// asserts its absence.
func testHeader(t testing.TB, r *http.Request, name, want string) {
	t.Helper()
	if got := r.Header.Values(name); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
		t.Errorf("request header %s: got %q, want %q", name, got, want)
	}
}

// testAPIHeaders asserts the headers every API request carries: the
// management token setup's token endpoint issues, and JSON both ways.
func testAPIHeaders(t testing.TB, r *http.Request) {
	t.Helper()
	testHeader(t, r, "Authorization", "Bearer "+mockToken)
	testHeader(t, r, "Content-Type", "application/json")
	testHeader(t, r, "Accept", "application/json")
}

// testQuery asserts the request's raw query, byte for byte ("" for none).
// httpmock routes a request to a URL registered without its query, or with
// its parameters in another order, so a handler asserts the query itself.
func testQuery(t testing.TB, r *http.Request, want string) {
	t.Helper()
	if r.URL.RawQuery != want {
		t.Errorf("request query: got %q, want %q", r.URL.RawQuery, want)
	}
}

// testBody asserts the request's body, byte for byte ("" for none).
func testBody(t testing.TB, r *http.Request, want string) {
	t.Helper()
	if got := readBody(r); got != want {
		t.Errorf("request body: got %q, want %q", got, want)
	}
}

// testJSONBody asserts that the request's body is the JSON value want,
// whatever its spacing and key order. Both are decoded as the client
// decodes (numbers as json.Number), so that no integer loses precision.
func testJSONBody(t testing.TB, r *http.Request, want string) {
	t.Helper()
	got := readBody(r)
	if diff := cmp.Diff(decodeJSONValue(t, want), decodeJSONValue(t, got)); diff != "" {
		t.Errorf("request body %s (-want +got):\n%s", got, diff)
	}
}

func readBody(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func decodeJSONValue(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q is not JSON: %v", s, err)
	}
	return v
}

// testCalls asserts how many times each route of mt was called, the token
// endpoint's included: want maps "METHOD URL", as registered, to a count.
// A route that want does not name must not have been called; nil asserts
// that nothing at all was sent.
func testCalls(t testing.TB, mt *httpmock.MockTransport, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for route, n := range mt.GetCallCountInfo() {
		if n > 0 {
			got[route] = n
		}
	}
	if want == nil {
		want = map[string]int{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls per route (-want +got):\n%s", diff)
	}
}

// jsonResponder answers status with v encoded as JSON and the JSON content type.
func jsonResponder(status int, v any) httpmock.Responder {
	return httpmock.NewJsonResponderOrPanic(status, v)
}

// rawResponder answers status with body as it stands, labelled with
// contentType ("" for no Content-Type header).
func rawResponder(status int, contentType, body string) httpmock.Responder {
	return func(*http.Request) (*http.Response, error) {
		resp := httpmock.NewStringResponse(status, body)
		if contentType != "" {
			resp.Header.Set("Content-Type", contentType)
		}
		return resp, nil
	}
}

// The list paths below mockBaseURL's host, as next_page links start.
const (
	usersPath  = defaultPathPrefix + "/users"
	thingsPath = defaultPathPrefix + "/things"
)

// registerPages registers a handler for each page of a listing: pages maps
// what a next_page link holds, the escaped path and raw query below
// mockBaseURL's host, to the page's answer. Each handler asserts a GET with
// the API's headers, exactly that query and no body.
func registerPages(t testing.TB, mt *httpmock.MockTransport, pages map[string]httpmock.Responder) {
	for link, answer := range pages {
		_, query, _ := strings.Cut(link, "?")
		mt.RegisterResponder(http.MethodGet, mockBaseURL+link, func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, http.MethodGet)
			testAPIHeaders(t, r)
			testQuery(t, r, query)
			testBody(t, r, "")
			return answer(r)
		})
	}
}

// pageCalls is what testCalls wants of a listing that got one token, then
// requested each of links (as often as it is named) from registerPages'
// handlers. The order of the pages is the links': each comes from the page
// before.
func pageCalls(links ...string) map[string]int {
	calls := map[string]int{"POST " + tokenURL: 1}
	for _, link := range links {
		calls["GET "+mockBaseURL+link]++
	}
	return calls
}

// pageOfUsers answers a page of Users with the given ids, and next as
// next_page ("" for null).
func pageOfUsers(next string, ids ...string) httpmock.Responder {
	users := make([]map[string]any, len(ids))
	for i, id := range ids {
		users[i] = map[string]any{"id": id, "created_at": "2024-01-02T03:04:05.678Z", "updated_at": "2024-01-02T03:04:05.678Z"}
	}
	return jsonResponder(http.StatusOK, map[string]any{"users": users, "next_page": nullable(next)})
}

// pageOfThings answers a page of Things with the given physical ids, and
// next as next_page ("" for null).
func pageOfThings(next string, ids ...string) httpmock.Responder {
	things := make([]map[string]any, len(ids))
	for i, id := range ids {
		things[i] = map[string]any{"physical_id": id, "created_at": "2024-01-02T03:04:05.678Z", "updated_at": "2024-01-02T03:04:05.678Z"}
	}
	return jsonResponder(http.StatusOK, map[string]any{"things": things, "next_page": nullable(next)})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// collect ranges over seq and returns the ids and errors it yielded. It
// gives up after 100 yields, so that a listing that loops fails the test.
func collect[T any](seq func(func(*T, error) bool), id func(*T) string) (ids []string, errs []error) {
	n := 0
	for item, err := range seq {
		if n++; n > 100 {
			errs = append(errs, errors.New("more than 100 yields: the listing loops"))
			break
		}
		if err != nil {
			if item != nil {
				ids = append(ids, "non-nil item with error")
			}
			errs = append(errs, err)
			continue
		}
		ids = append(ids, id(item))
	}
	return ids, errs
}

func idOfUser(u *User) string   { return u.ID }
func idOfThing(t *Thing) string { return t.PhysicalID }

// readSample returns the content of testdata/name.
func readSample(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading sample: %v", err)
	}
	return string(b)
}

// stamp parses a timestamp in the wire format.
func stamp(t testing.TB, s string) Timestamp {
	t.Helper()
	tm, err := time.Parse(wireTimeLayout, s)
	if err != nil {
		t.Fatalf("bad test timestamp %q: %v", s, err)
	}
	return Timestamp{tm}
}

// stampPtr is stamp as a pointer.
func stampPtr(t testing.TB, s string) *Timestamp {
	t.Helper()
	ts := stamp(t, s)
	return &ts
}

// ignoreAnswerMeta leaves out of a comparison of errors what they tell of
// the answer beside its body (headers, tested on their own in
// TestAnswerMeta).
var ignoreAnswerMeta = cmp.Options{
	cmpopts.IgnoreFields(APIError{}, "Header"),
	cmpopts.IgnoreFields(TokenError{}, "Header"),
}
