package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// The wire of Client.Do: each method with its body as sent, the path below
// the prefix with its query as given, the API's headers, and out decoded
// as json.Unmarshal decodes.
func TestDoWire(t *testing.T) {
	type event struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	}
	tests := []struct {
		name     string
		method   string
		path     string
		body     any
		answer   httpmock.Responder
		out      func() any // nil: Do gets a nil out
		wantURL  string     // registered without the query
		wantQ    string
		wantBody string
		want     any
	}{
		{
			name: "GET with a query, into a struct", method: http.MethodGet, path: "/events/e-1?expand=all&x=%2F",
			answer: jsonResponder(http.StatusOK, map[string]any{"id": "e-1", "count": 3}), out: func() any { return &event{} },
			wantURL: mockPrefix + "/events/e-1", wantQ: "expand=all&x=%2F", want: &event{ID: "e-1", Count: 3},
		},
		{
			name: "GET into a map: numbers as float64, as json.Unmarshal gives", method: http.MethodGet, path: "/events/e-1",
			answer: jsonResponder(http.StatusOK, map[string]any{"id": "e-1", "count": 3}), out: func() any { return &map[string]any{} },
			wantURL: mockPrefix + "/events/e-1", want: &map[string]any{"id": "e-1", "count": float64(3)},
		},
		{
			name: "POST of a struct, into a json.RawMessage", method: http.MethodPost, path: "/events", body: event{ID: "e-2", Count: 1},
			answer: rawResponder(http.StatusCreated, "application/json", ` {"id":"e-2"} `), out: func() any { return new(json.RawMessage) },
			wantURL: mockPrefix + "/events", wantBody: `{"id":"e-2","count":1}`, want: ptrTo(json.RawMessage(`{"id":"e-2"}`)),
		},
		{
			name: "PUT of a json.RawMessage, as it is", method: http.MethodPut, path: "/events/e-1", body: json.RawMessage(`{"count": 7 }`),
			answer: rawResponder(http.StatusOK, "application/json", `{"id":"e-1","count":7}`), out: func() any { return &event{} },
			wantURL: mockPrefix + "/events/e-1", wantBody: `{"count": 7 }`, want: &event{ID: "e-1", Count: 7},
		},
		{
			name: "PATCH of a []byte, as it is", method: http.MethodPatch, path: "/events/e-1", body: []byte(`{"count":8}`),
			answer: rawResponder(http.StatusOK, "application/json", `{"id":"e-1","count":8}`), out: func() any { return &event{} },
			wantURL: mockPrefix + "/events/e-1", wantBody: `{"count":8}`, want: &event{ID: "e-1", Count: 8},
		},
		{
			name: "DELETE, 204: out unchanged", method: http.MethodDelete, path: "/events/e-1",
			answer: rawResponder(http.StatusNoContent, "", ""), out: func() any { return &event{ID: "kept"} },
			wantURL: mockPrefix + "/events/e-1", want: &event{ID: "kept"},
		},
		{
			name: "HEAD, 200 without a body: out unchanged", method: http.MethodHead, path: "/events/e-1",
			answer: rawResponder(http.StatusOK, "application/json", ""), out: func() any { return &event{ID: "kept"} },
			wantURL: mockPrefix + "/events/e-1", want: &event{ID: "kept"},
		},
		{
			name: "a body of white space alone is empty", method: http.MethodGet, path: "/events/e-1",
			answer: rawResponder(http.StatusOK, "application/json", " \n"), out: func() any { return &event{ID: "kept"} },
			wantURL: mockPrefix + "/events/e-1", want: &event{ID: "kept"},
		},
		{
			name: "nil out: the body is read and dropped", method: http.MethodGet, path: "/events/e-1",
			answer: rawResponder(http.StatusOK, "text/plain", "not JSON, not read as JSON"), wantURL: mockPrefix + "/events/e-1",
		},
		{
			name: "a next_page link, as it stands", method: http.MethodGet, path: usersPath + "?page=2",
			answer: jsonResponder(http.StatusOK, map[string]any{"users": []any{}}), out: func() any { return &map[string]any{} },
			wantURL: mockPrefix + "/users", wantQ: "page=2", want: &map[string]any{"users": []any{}},
		},
		{
			name: "the prefix twice is a path below the prefix", method: http.MethodGet, path: defaultPathPrefix,
			answer: jsonResponder(http.StatusOK, map[string]any{}), wantURL: mockPrefix + defaultPathPrefix,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(tt.method, tt.wantURL, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, tt.method)
				testAPIHeaders(t, r)
				testQuery(t, r, tt.wantQ)
				testBody(t, r, tt.wantBody)
				return tt.answer(r)
			})
			var out any
			if tt.out != nil {
				out = tt.out()
			}
			if err := c.Do(t.Context(), tt.method, tt.path, tt.body, out); err != nil {
				t.Fatal(err)
			}
			if tt.out != nil {
				if diff := cmp.Diff(tt.want, out); diff != "" {
					t.Errorf("out (-want +got):\n%s", diff)
				}
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, tt.method + " " + tt.wantURL: 1})
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// Every refusal of Do matches ErrInvalidArgument and sends nothing, not
// even a token request; a refused next_page link matches
// ErrInvalidPageLink too.
func TestDoRefusals(t *testing.T) {
	type event struct{ ID string }
	var nilEvent *event
	tests := []struct {
		name         string
		method, path string
		body, out    any
		link         bool // also ErrInvalidPageLink
	}{
		{name: "absolute URL", path: "https://evil.test/x"},
		{name: "the base URL's own absolute URL", path: mockPrefix + "/users"},
		{name: "the base URL with another case", path: "HTTPS://api.example.test" + defaultPathPrefix + "/users"},
		{name: "scheme-relative", path: "//evil.test/x"},
		{name: "scheme-relative, backslash", path: `/\evil.test/x`},
		{name: "empty path", path: ""},
		{name: "not starting with /", path: "users/u-1"},
		{name: "a query alone", path: "?page=2"},
		{name: "dot-dot", path: "/users/../auth/token"},
		{name: "dot-dot at the end", path: "/users/.."},
		{name: "dot", path: "/./users"},
		{name: "escaped dot-dot", path: "/users/%2e%2E/x"},
		{name: "escaped slash and dot-dot", path: "/users%2F..%2Fx"},
		{name: "twice escaped dot-dot", path: "/users/%252e%252e/x"},
		{name: "three times escaped dot-dot", path: "/users/%25252e%25252e/x"},
		{name: "dot-dot with a path parameter", path: "/users/..;x/y"},
		{name: "escapes nested too deep", path: "/users/%" + strings.Repeat("25", 10) + "2ex"},
		{name: "backslash", path: `/users\..\x`},
		{name: "fragment", path: "/users#x"},
		{name: "space", path: "/users/a b"},
		{name: "tab", path: "/users/a\tb"},
		{name: "newline", path: "/users\n"},
		{name: "NUL", path: "/users\x00"},
		{name: "DEL", path: "/users\x7f"},
		{name: "control in the query", path: "/users?q=\r\n"},
		{name: "non-ASCII", path: "/users/é"},
		{name: "invalid escape", path: "/users/%zz"},
		{name: "link: dot-dot", path: usersPath + "/../../x", link: true},
		{name: "link: escaped dot-dot", path: usersPath + "/%2e%2e/%2e%2e/x?page=2", link: true},
		{name: "link: tab", path: usersPath + "\t", link: true},
		{name: "lower-case method", method: "get"},
		{name: "OPTIONS", method: http.MethodOptions},
		{name: "TRACE", method: http.MethodTrace},
		{name: "CONNECT", method: http.MethodConnect},
		{name: "a method with a space", method: "GET /x"},
		{name: "body: a channel", body: make(chan int)},
		{name: "body: NaN", body: math.NaN()},
		{name: "body: a func in a map", body: map[string]any{"f": func() {}}},
		{name: "body: MarshalJSON fails", body: failingMarshaler{}},
		{name: "out: a struct", out: event{}},
		{name: "out: a map", out: map[string]any{}},
		{name: "out: a typed nil pointer", out: nilEvent},
		{name: "out: a string", out: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			p := tt.path
			if p == "" && !strings.HasPrefix(tt.name, "empty") {
				p = "/events"
			}
			err := c.Do(t.Context(), method, p, tt.body, tt.out)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("Do(%q, %q) = %v; want ErrInvalidArgument", method, p, err)
			}
			if tt.link && !errors.Is(err, ErrInvalidPageLink) {
				t.Errorf("Do(%q, %q) = %v; want ErrInvalidPageLink too", method, p, err)
			}
			testCalls(t, mt, nil)
		})
	}
}

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("not today") }

// The texts of Do's refusals name what is wrong, once "management: ".
func TestDoRefusalTexts(t *testing.T) {
	c, _ := setup(t)
	for _, tt := range []struct {
		method, path string
		out          any
		want         string
	}{
		{"GET", "/users/%2e%2e/x?q=secret-query", nil, `management: invalid argument: Client.Do: path "/users/%2e%2e/x": holds a dot segment`},
		{"GET", usersPath + "/../x?q=secret-query", nil, `management: invalid argument: Client.Do: invalid next_page link "` + usersPath + `/../x": holds a dot segment`},
		{"GET", "https://evil.test/x", nil, `management: invalid argument: Client.Do: path "https://evil.test/x": not a path starting with /`},
		{"get", "/x", nil, `management: invalid argument: Client.Do: method "get" is none of GET, HEAD, POST, PUT, PATCH and DELETE`},
		{"GET", "/x", struct{}{}, `management: invalid argument: Client.Do: out is a struct {}; want nil or a non-nil pointer to decode the answer into`},
	} {
		err := c.Do(t.Context(), tt.method, tt.path, nil, tt.out)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Do(%q, %q) = %v\nwant %s", tt.method, tt.path, err, tt.want)
		}
	}
	err := c.Do(t.Context(), "POST", "/x", math.Inf(1), nil)
	var unsupported *json.UnsupportedValueError
	if !errors.As(err, &unsupported) || !strings.HasPrefix(err.Error(), "management: invalid argument: Client.Do: the body cannot be sent as JSON: ") {
		t.Errorf("Do with an infinite body = %v; want ErrInvalidArgument wrapping json's error", err)
	}
}

// With a base URL that has a path of its own and no prefix, a path is
// still checked against the base URL's path.
func TestDoBaseWithPath(t *testing.T) {
	c, mt := setup(t, Config{BaseURL: "https://api.example.test/gw", PathPrefix: "/"})
	mt.RegisterResponder(http.MethodPost, "https://api.example.test/gw/auth/token",
		jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 600}))
	mt.RegisterResponder(http.MethodGet, "https://api.example.test/gw/events", jsonResponder(http.StatusOK, map[string]any{}))
	if err := c.Do(t.Context(), http.MethodGet, "/events", nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/../x", "/%2e%2e/x", "//evil.test/x"} {
		if err := c.Do(t.Context(), http.MethodGet, p, nil, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Do(GET, %q) = %v; want ErrInvalidArgument", p, err)
		}
	}
	testCalls(t, mt, map[string]int{"POST https://api.example.test/gw/auth/token": 1, "GET https://api.example.test/gw/events": 1})
}

// Retries by method: a GET, HEAD, PUT or DELETE is retried after a 5xx
// as the typed reads are; a POST or PATCH is not, but is resent after a
// 429 (its Retry-After waited for) and replayed once after a 401 with a
// new token.
func TestDoRetriesByMethod(t *testing.T) {
	const events = mockPrefix + "/events/e-1"
	for _, tt := range []struct {
		method string
		first  httpmock.Responder
		calls  int // requests of the endpoint
		tokens int
		ok     bool
	}{
		{http.MethodGet, statusResponder(http.StatusServiceUnavailable), 2, 1, true},
		{http.MethodHead, statusResponder(http.StatusBadGateway), 2, 1, true},
		{http.MethodPut, statusResponder(http.StatusInternalServerError), 2, 1, true},
		{http.MethodDelete, statusResponder(http.StatusGatewayTimeout), 2, 1, true},
		{http.MethodPost, statusResponder(http.StatusServiceUnavailable), 1, 1, false},
		{http.MethodPost, statusResponder(http.StatusInternalServerError), 1, 1, false},
		{http.MethodPatch, statusResponder(http.StatusBadGateway), 1, 1, false},
		{http.MethodPost, retryAfterResponder(http.StatusTooManyRequests, "1"), 2, 1, true},
		{http.MethodPatch, retryAfterResponder(http.StatusTooManyRequests, "1"), 2, 1, true},
		{http.MethodPost, statusResponder(http.StatusTooManyRequests), 2, 1, true},
		{http.MethodPost, statusResponder(http.StatusUnauthorized), 2, 2, true},
		{http.MethodPatch, statusResponder(http.StatusUnauthorized), 2, 2, true},
		{http.MethodGet, statusResponder(http.StatusUnauthorized), 2, 2, true},
	} {
		c, mt := setup(t)
		n := 0
		mt.RegisterResponder(tt.method, events, func(r *http.Request) (*http.Response, error) {
			testBody(t, r, map[bool]string{true: `{"n":1}`}[tt.method == http.MethodPost || tt.method == http.MethodPatch || tt.method == http.MethodPut])
			if n++; n == 1 {
				return tt.first(r)
			}
			return httpmock.NewStringResponse(http.StatusOK, `{}`), nil
		})
		var body any
		if tt.method == http.MethodPost || tt.method == http.MethodPatch || tt.method == http.MethodPut {
			body = map[string]int{"n": 1}
		}
		err := c.Do(t.Context(), tt.method, "/events/e-1", body, nil)
		var apiErr *APIError
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s after %v: %v", tt.method, n, err)
		case !tt.ok && (!errors.As(err, &apiErr) || apiErr.Method != tt.method || apiErr.Path != "/events/e-1"):
			t.Errorf("%s: %v; want an *APIError naming %s /events/e-1", tt.method, err, tt.method)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: tt.tokens, tt.method + " " + events: tt.calls})
	}
}

func statusResponder(status int) httpmock.Responder {
	return rawResponder(status, "application/json", `{"reason":"X","error_message":"try again"}`)
}

func retryAfterResponder(status int, retryAfter string) httpmock.Responder {
	return func(r *http.Request) (*http.Response, error) {
		resp, _ := statusResponder(status)(r)
		resp.Header.Set("Retry-After", retryAfter)
		return resp, nil
	}
}

// A POST or PATCH whose connection failed is sent again only when no
// connection was made; after a failure that may have come once the
// request was written, the error is returned. Other methods are retried
// either way.
func TestDoConnectionFailures(t *testing.T) {
	const events = mockPrefix + "/events"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	unresolved := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.example.test", IsNotFound: true}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tt := range []struct {
		method string
		err    error
		calls  int
	}{
		{http.MethodPost, refused, 2},
		{http.MethodPatch, unresolved, 2},
		{http.MethodPost, &net.OpError{Op: "proxyconnect", Net: "tcp", Err: syscall.ECONNREFUSED}, 2},
		{http.MethodPost, reset, 1},
		{http.MethodPatch, io.ErrUnexpectedEOF, 1},
		{http.MethodPost, errors.New("a RoundTripper's own failure"), 1},
		{http.MethodPut, reset, 2},
		{http.MethodDelete, io.ErrUnexpectedEOF, 2},
		{http.MethodGet, reset, 2},
	} {
		c, mt := setup(t)
		n := 0
		mt.RegisterResponder(tt.method, events, func(r *http.Request) (*http.Response, error) {
			if n++; n == 1 {
				return nil, tt.err
			}
			return httpmock.NewStringResponse(http.StatusOK, `{}`), nil
		})
		err := c.Do(t.Context(), tt.method, "/events", []byte(`{}`), nil)
		var te *TransportError
		if tt.calls == 1 && (!errors.As(err, &te) || te.Attempts != 1 || te.Path != "/events") {
			t.Errorf("%s after %v: %v; want a *TransportError of 1 attempt", tt.method, tt.err, err)
		}
		if tt.calls == 2 && err != nil {
			t.Errorf("%s after %v: %v; want it retried", tt.method, tt.err, err)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, tt.method + " " + events: tt.calls})
	}
}

// On the wire: a POST whose connection a server cuts once it has read the
// request is not sent again; a GET is; a POST to a port nothing listens
// on is sent again, each time.
func TestDoConnectionCutOnTheWire(t *testing.T) {
	var posts, gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/auth/token"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":600}`)
			return
		case r.Method == http.MethodPost:
			posts.Add(1)
		default:
			gets.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close() // the request was read: the service may have acted on it
		}
	}))
	defer srv.Close()
	c, err := NewClient(Config{BaseURL: srv.URL, ClientID: mockID, ClientSecret: mockSecret,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var te *TransportError
	if err := c.Do(t.Context(), http.MethodPost, "/events", map[string]string{"kind": "login"}, nil); !errors.As(err, &te) || te.Attempts != 1 {
		t.Errorf("POST, connection cut: %v; want a *TransportError after 1 attempt", err)
	}
	if err := c.Do(t.Context(), http.MethodGet, "/events", nil, nil); !errors.As(err, &te) || te.Attempts != 3 {
		t.Errorf("GET, connection cut: %v; want a *TransportError after 3 attempts", err)
	}
	if posts.Load() != 1 || gets.Load() != 3 {
		t.Errorf("the server read %d POSTs and %d GETs; want 1 and 3", posts.Load(), gets.Load())
	}

	// A port nothing listens on: the connection is refused, nothing was sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c, err = NewClient(Config{BaseURL: "http://" + addr, TokenSource: staticSource("tok-1"),
		RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(t.Context(), http.MethodPost, "/events", nil, nil); !errors.As(err, &te) || te.Attempts != 3 || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("POST, connection refused: %v; want a *TransportError after 3 attempts", err)
	}
}

// A 429 or 503 with Retry-After on a Do pauses the route of Do's requests
// of that method, "Client.Do", whatever the path: neither the pauses' map
// nor a log record holds the path.
func TestDoPauseKey(t *testing.T) {
	var logs logBuffer
	c, mt := setup(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond})
	const secret = "e-8c1f-private"
	n := 0
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/"+secret, func(r *http.Request) (*http.Response, error) {
		if n++; n == 1 {
			resp := httpmock.NewStringResponse(http.StatusTooManyRequests, `{"reason":"X","error_message":"slow down"}`)
			resp.Header.Set("Retry-After", "1")
			resp.Header.Set("Deprecation", "@1700000000")
			return resp, nil
		}
		return httpmock.NewStringResponse(http.StatusUnauthorized, `{}`), nil
	})
	mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
		return httpmock.NewStringResponse(http.StatusOK, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
	})
	if err := c.Do(t.Context(), http.MethodGet, "/events/"+secret+"?cursor=q-secret", nil, nil); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Do: %v; want the 401 that came after the replay", err)
	}
	c.pauses.mu.Lock()
	var keys []routeKey
	for k := range c.pauses.routes {
		keys = append(keys, k)
	}
	c.pauses.mu.Unlock()
	if diff := cmp.Diff([]routeKey{{http.MethodGet, "Client.Do"}}, keys, cmp.AllowUnexported(routeKey{})); diff != "" {
		t.Errorf("paused routes (-want +got):\n%s", diff)
	}
	text := logs.String()
	for _, want := range []string{"pausing the route", "route=Client.Do", "retrying", "token refused", "deprecated"} {
		if !strings.Contains(text, want) {
			t.Errorf("the logs lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, secret) || strings.Contains(text, "q-secret") || strings.Contains(text, "/events") {
		t.Errorf("a log record holds the path:\n%s", text)
	}
}

// Do's errors: the path below the prefix without the query, redacted;
// the service's texts redacted; a body that is not out's type is a
// *DecodeError naming the operation; an answer over the size bound
// matches ErrResponseTooLarge.
func TestDoErrors(t *testing.T) {
	c, mt := setup(t, Config{MaxResponseBytes: 256})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/e-404",
		jsonResponder(http.StatusNotFound, map[string]any{"reason": ReasonEntityNotFound, "error_message": "no event e-404 for token " + mockToken}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/e-1", rawResponder(http.StatusOK, "application/json", `{"id": 42}`))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/big", rawResponder(http.StatusOK, "application/json", `{"id":"`+strings.Repeat("x", 300)+`"}`))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/html", rawResponder(http.StatusOK, "text/html", `<html>`))

	err := c.Do(t.Context(), http.MethodGet, "/events/e-404?cursor=q-1", nil, nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("404: %v; want an *APIError matching ErrNotFound", err)
	}
	if apiErr.Method != "GET" || apiErr.Path != "/events/e-404" || strings.Contains(err.Error(), mockToken) || strings.Contains(err.Error(), "q-1") {
		t.Errorf("404: %v (path %q); want GET /events/e-404, no token, no query", err, apiErr.Path)
	}

	var out struct{ ID string }
	err = c.Do(t.Context(), http.MethodGet, "/events/e-1", nil, &out)
	var de *DecodeError
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &de) || !errors.As(err, &typeErr) || de.Method != "GET" || de.Path != "/events/e-1" || de.StatusCode != 200 {
		t.Errorf("a number for a string: %v; want a *DecodeError of GET /events/e-1 wrapping json's error", err)
	} else if !strings.HasPrefix(err.Error(), "management: GET /events/e-1: 200 response") {
		t.Errorf("the DecodeError does not name the operation: %v", err)
	}

	var raw json.RawMessage
	if err := c.Do(t.Context(), http.MethodGet, "/events/big", nil, &raw); !errors.Is(err, ErrResponseTooLarge) || !errors.As(err, &de) || raw != nil {
		t.Errorf("over the bound: %v, out %q; want a *DecodeError matching ErrResponseTooLarge, out unchanged", err, raw)
	}
	if err := c.Do(t.Context(), http.MethodGet, "/events/html", nil, &raw); !errors.As(err, &de) || !errors.Is(err, ErrMisconfigured) {
		t.Errorf("HTML: %v; want a *DecodeError matching ErrMisconfigured", err)
	}

	// A path that holds the token itself is redacted where an error names it.
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/echo/"+mockToken, statusResponder(http.StatusBadRequest))
	err = c.Do(t.Context(), http.MethodGet, "/echo/"+mockToken, nil, nil)
	if !errors.As(err, &apiErr) || strings.Contains(err.Error(), mockToken) || strings.Contains(apiErr.Path, mockToken) {
		t.Errorf("a path with the token: %v; want it redacted", err)
	}
	if err := c.Do(t.Context(), http.MethodGet, "/echo/"+mockToken+"/%2e%2e", nil, nil); err == nil || strings.Contains(err.Error(), mockToken) {
		t.Errorf("a refused path with the token: %v; want it redacted", err)
	}
}

// The answers of the token and authenticate endpoints can carry
// credentials: an error of a Do to them never quotes their bodies.
func TestDoSecretEndpoints(t *testing.T) {
	c, mt := setup(t)
	const issued = "fresh-token-from-the-endpoint"
	for _, p := range []string{"/auth/token", "/AUTH/Token/", "/auth%2Ftoken", "/authenticate"} {
		mt.RegisterResponder(http.MethodPost, mockPrefix+p, rawResponder(http.StatusOK, "application/json", `{"access_token":"`+issued+`"`))
		var out map[string]any
		err := c.Do(t.Context(), http.MethodPost, p, nil, &out)
		var de *DecodeError
		if !errors.As(err, &de) || de.Body != nil || de.BodyLength == 0 || strings.Contains(err.Error(), issued) {
			t.Errorf("POST %s: %v; want a *DecodeError that withholds the body", p, err)
		}
	}
	if !secretPath(defaultPathPrefix+"/authenticate?x=1", defaultPathPrefix) || secretPath(defaultPathPrefix+"/users", defaultPathPrefix) {
		t.Error("secretPath tells the endpoints apart wrongly")
	}
}

// A Do is observed without its path: Operation.Route "" and no
// PathValues, Attempt.URL with the path redacted whole and no query.
func TestDoObserved(t *testing.T) {
	var mu sync.Mutex
	var ops []Operation
	var attempts []Attempt
	obs := &Observer{
		OperationStart: func(ctx context.Context, op Operation) context.Context {
			mu.Lock()
			defer mu.Unlock()
			ops = append(ops, op)
			return ctx
		},
		AttemptStart: func(ctx context.Context, op Operation, a Attempt) context.Context {
			mu.Lock()
			defer mu.Unlock()
			a.Header = nil
			attempts = append(attempts, a)
			return ctx
		},
	}
	c, mt := setup(t, Config{Observer: obs})
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/events/e-1", jsonResponder(http.StatusOK, map[string]any{}))
	if err := c.Do(t.Context(), http.MethodPatch, "/events/e-1?x=q-1", []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	wantOps := []Operation{{Method: "PATCH"}, {Method: "POST", Route: "/auth/token"}}
	if diff := cmp.Diff(wantOps, ops); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	wantAttempts := []Attempt{
		{Method: "POST", Route: "/auth/token", ServerAddress: "api.example.test", ServerPort: 443, URL: mockPrefix + "/auth/token"},
		{Method: "PATCH", ServerAddress: "api.example.test", ServerPort: 443, URL: mockPrefix + "/REDACTED"},
	}
	if diff := cmp.Diff(wantAttempts, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if got := ops[0].Name(); got != "PATCH" {
		t.Errorf("Name of a Do's operation = %q, want PATCH", got)
	}
}

// However many goroutines call Do at once on a new Client, one token
// request is made, and each call gets its own answer.
func TestDoConcurrentCallsShareOneToken(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
		time.Sleep(10 * time.Millisecond) // the others arrive while the first fetches the token
		return httpmock.NewStringResponse(http.StatusOK, `{"access_token":"`+mockToken+`","token_type":"Bearer","expires_in":600}`), nil
	})
	mt.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`/events/e-\d+$`), func(r *http.Request) (*http.Response, error) {
		testAPIHeaders(t, r)
		return httpmock.NewStringResponse(http.StatusOK, `{"id":"`+path.Base(r.URL.Path)+`"}`), nil
	})
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := "e-" + strings.Repeat("1", i+1)
			var out struct{ ID string }
			errs[i] = c.Do(t.Context(), http.MethodGet, "/events/"+id, nil, &out)
			if errs[i] == nil && out.ID != id {
				errs[i] = errors.New("got " + out.ID + ", want " + id)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := mt.GetCallCountInfo()["POST "+tokenURL]; got != 1 {
		t.Errorf("%d token requests, want 1", got)
	}
}

// A Client that NewClient did not make says so.
func TestDoNotNewClient(t *testing.T) {
	var nilClient *Client
	for _, c := range []*Client{nilClient, {}} {
		if err := c.Do(context.Background(), http.MethodGet, "/x", nil, nil); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NewClient") {
			t.Errorf("Do of %#v: %v", c, err)
		}
	}
}

// FuzzDoPath checks that Do requests no path that, resolved against the
// base URL, leaves the prefix (or, for a next_page link, the base URL's
// path), holds a segment a server could take for "." or "..", in any
// decoding, or would not be sent as given.
func FuzzDoPath(f *testing.F) {
	for _, s := range []string{
		"/users/u-1", "/things?order_by=updatedAt", usersPath + "?page=2", "/", "", "users", "//evil.test/x",
		"https://api.example.test/x", "/%2e%2e/x", "/x/%252e%252e", usersPath + "/../x", "/a\tb", "/a\x7fb",
		defaultPathPrefix, defaultPathPrefix + "x/y", "/x?y=/../z", "/x#y", `/x\y`, "/..;x",
	} {
		f.Add(s)
	}
	type fuzzBase struct {
		c       *Client
		prefix  string // the path every request of a Do stays under, escaped
		decoded string // and decoded
	}
	var bases []fuzzBase
	for _, cfg := range []Config{
		{BaseURL: "https://api.example.test"},
		{BaseURL: "https://api.example.test:8443/gw", PathPrefix: "/v1"},
		{BaseURL: "http://127.0.0.1:8080/a%2Fb", PathPrefix: "/"},
	} {
		c, _ := setup(f, cfg)
		u, err := url.Parse(c.baseURL + c.prefix)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, fuzzBase{c, c.basePath + c.prefix, strings.TrimSuffix(u.Path, "/")})
	}
	f.Fuzz(func(t *testing.T, p string) {
		for _, b := range bases {
			req, err := b.c.doRequest(http.MethodGet, p, nil, nil)
			if err != nil {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("%q refused with %v, which is not ErrInvalidArgument", p, err)
				}
				continue
			}
			if seg, form, found := oracleDotSegment(p); found {
				t.Fatalf("accepted %q: read as %q, it has the dot segment %q", p, form, seg)
			}
			u, err := url.Parse(req.url)
			if err != nil {
				t.Fatalf("accepted %q: %q does not parse: %v", p, req.url, err)
			}
			base, _ := url.Parse(b.c.baseURL)
			if u.Scheme != base.Scheme || u.Host != base.Host || u.User != nil {
				t.Fatalf("accepted %q: %q goes to %s://%s", p, req.url, u.Scheme, u.Host)
			}
			if rp := u.EscapedPath(); rp != b.prefix && !strings.HasPrefix(rp, b.prefix+"/") {
				t.Fatalf("accepted %q: %q is not under %q", p, rp, b.prefix)
			}
			if cleaned := path.Clean(u.Path); cleaned != b.decoded && !strings.HasPrefix(cleaned, b.decoded+"/") {
				t.Fatalf("accepted %q: %q resolves to %q, outside %q", p, req.url, cleaned, b.decoded)
			}
			if strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("accepted %q, which holds a control character", p)
			}
			if want := strings.TrimPrefix(req.url, b.c.baseURL); u.RequestURI() != b.c.basePath+want && u.RequestURI()+"?" != b.c.basePath+want {
				t.Fatalf("accepted %q: %q would be sent as %q", p, req.url, u.RequestURI())
			}
		}
	})
}

// An out of a type JSON cannot fill is a *DecodeError, never a panic.
func TestDoOutOfAnyType(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/events/e-1", rawResponder(http.StatusOK, "application/json", `{"id":"e-1","n":[1,2]}`))
	var (
		fn   func()
		ch   chan int
		cx   complex128
		st   fmt.Stringer
		num  int
		pp   **struct{ ID string }
		arr  [1]string
		anyv any
	)
	for _, out := range []any{&fn, &ch, &cx, &st, &num, &arr} {
		err := c.Do(t.Context(), http.MethodGet, "/events/e-1", nil, out)
		var de *DecodeError
		if !errors.As(err, &de) || de.Path != "/events/e-1" {
			t.Errorf("into %T: %v; want a *DecodeError", out, err)
		}
	}
	pp = new(*struct{ ID string })
	for _, out := range []any{pp, &anyv} {
		if err := c.Do(t.Context(), http.MethodGet, "/events/e-1", nil, out); err != nil {
			t.Errorf("into %T: %v", out, err)
		}
	}
	if (*pp).ID != "e-1" || anyv.(map[string]any)["n"].([]any)[1] != float64(2) {
		t.Errorf("decoded %+v and %v", **pp, anyv)
	}
}
