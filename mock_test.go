package management

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// The shared httpmock fixture of the package's unit tests.

const (
	mockBaseURL = "https://api.example.test"
	mockPrefix  = mockBaseURL + defaultPathPrefix
	mockID      = "client-id-1"
	mockSecret  = "s3cr3t-value-never-printed"
	mockToken   = "mgmt-token-1"
)

// newMockClient returns a Client whose requests go to a fresh httpmock
// transport (never the global one) on which the token endpoint answers
// mockToken for 600 s. Fields of cfg left zero get test values: the mock
// base URL and credentials, and retry waits of a millisecond or two.
func newMockClient(t testing.TB, cfg Config) (*Client, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	if cfg.BaseURL == "" {
		cfg.BaseURL = mockBaseURL
	}
	if cfg.TokenSource == nil && cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret = mockID, mockSecret
	}
	if cfg.RetryWaitMin == 0 && cfg.RetryWaitMax == 0 {
		cfg.RetryWaitMin, cfg.RetryWaitMax = time.Millisecond, 2*time.Millisecond
	}
	cfg.HTTPClient = &http.Client{Transport: mt}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/auth/token",
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	return c, mt
}

// jsonResponder answers status with v encoded as JSON and the JSON content type.
func jsonResponder(status int, v any) httpmock.Responder {
	return httpmock.NewJsonResponderOrPanic(status, v)
}

// recorded is what a recorder saw of one request.
type recorded struct {
	Method string
	Path   string // escaped path
	Query  string
	Header http.Header
	Body   string
}

// recorder records the requests it answers, for tests that assert on the
// exact request sent. It is safe for concurrent use.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

// respond records the request and answers with next.
func (r *recorder) respond(next httpmock.Responder) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{
			Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery,
			Header: req.Header.Clone(), Body: string(body),
		})
		r.mu.Unlock()
		return next(req)
	}
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// jsonBody decodes a recorded JSON body for comparison with go-cmp.
func jsonBody(t testing.TB, body string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("request body %q is not JSON: %v", body, err)
	}
	return v
}

// setup is the fixture of the package's wire tests, in the manner of
// go-github's: a Client (configured by cfg, see newMockClient) and the
// httpmock transport to register each test's handlers on. Handlers assert
// what they receive with testMethod, testHeader and testBody.
func setup(t testing.TB, cfg ...Config) (*Client, *httpmock.MockTransport) {
	t.Helper()
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newMockClient(t, c)
}

// testMethod asserts the request's method.
func testMethod(t testing.TB, r *http.Request, want string) {
	t.Helper()
	if r.Method != want {
		t.Errorf("request method: got %q, want %q", r.Method, want)
	}
}

// testHeader asserts one header of the request; want "" asserts its absence.
func testHeader(t testing.TB, r *http.Request, name, want string) {
	t.Helper()
	if got := r.Header.Values(name); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
		t.Errorf("request header %s: got %q, want %q", name, got, want)
	}
}

// testBody asserts the request's body, byte for byte ("" for none).
func testBody(t testing.TB, r *http.Request, want string) {
	t.Helper()
	var got []byte
	if r.Body != nil {
		got, _ = io.ReadAll(r.Body)
	}
	if string(got) != want {
		t.Errorf("request body: got %q, want %q", got, want)
	}
}
