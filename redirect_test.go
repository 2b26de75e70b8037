package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// The redirect policy: no 3xx is followed, by any method, to any place.

// redirectOps are one operation of each method the API uses.
var redirectOps = []request{
	{method: http.MethodGet, path: "/users/u-1"},
	{method: http.MethodPatch, path: "/things/t-1", body: []byte(`{"name":"n"}`)},
	{method: http.MethodPost, path: "/users/u-1/associated_things", body: []byte(`{"physical_id":"t-1"}`)},
	{method: http.MethodDelete, path: "/users/u-1/associated_things/t-1"},
}

var redirectStatuses = []int{301, 302, 303, 307, 308, 300, 304, 305, 399}

// redirectTo answers status with the Location header locs (none when empty).
func redirectTo(status int, locs ...string) httpmock.Responder {
	h := http.Header{}
	if len(locs) > 0 {
		h["Location"] = locs
	}
	return httpmock.NewStringResponder(status, "moved").HeaderSet(h)
}

func TestRedirectsNotFollowed(t *testing.T) {
	targets := []struct {
		name     string
		location []string
		message  string
	}{
		{"same origin, another path", []string{mockBaseURL + "/login?session=s-123#frag"},
			"redirect to /login not followed; check Config.BaseURL and Config.PathPrefix"},
		{"relative", []string{"/relative/path?session=s-123"},
			"redirect to /relative/path not followed; check Config.BaseURL and Config.PathPrefix"},
		{"same host, another port", []string{"https://api.example.test:8443/login?session=s-123"},
			"redirect to another origin, path /login, not followed; check Config.BaseURL and Config.PathPrefix"},
		{"another scheme", []string{"http://api.example.test/login"},
			"redirect to another origin, path /login, not followed; check Config.BaseURL and Config.PathPrefix"},
		{"another host", []string{"https://evil.example.test/login?session=s-123"},
			"redirect to another origin, path /login, not followed; check Config.BaseURL and Config.PathPrefix"},
		{"same origin, explicit port", []string{"https://API.example.test:443/login"},
			"redirect to /login not followed; check Config.BaseURL and Config.PathPrefix"},
		{"no Location", nil, "redirect not followed; check Config.BaseURL and Config.PathPrefix"},
		{"unreadable Location", []string{"https://[bad/x?session=s-123"}, "redirect to an unreadable Location not followed; check Config.BaseURL and Config.PathPrefix"},
		{"empty Location", []string{""}, "redirect to an unreadable Location not followed; check Config.BaseURL and Config.PathPrefix"},
	}
	for _, op := range redirectOps {
		for _, status := range redirectStatuses {
			for _, tt := range targets {
				t.Run(fmt.Sprintf("%s %d %s", op.method, status, tt.name), func(t *testing.T) {
					c, mt := setup(t)
					var followed recorder
					for _, u := range []string{mockBaseURL + "/login", mockBaseURL + "/relative/path",
						"https://api.example.test:8443/login", "http://api.example.test/login", "https://evil.example.test/login"} {
						for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
							mt.RegisterResponder(m, u, followed.respond(jsonResponder(200, map[string]any{})))
						}
					}
					mt.RegisterResponder(op.method, mockPrefix+op.path, func(r *http.Request) (*http.Response, error) {
						testMethod(t, r, op.method)
						testHeader(t, r, "Authorization", "Bearer "+mockToken)
						testBody(t, r, string(op.body))
						return redirectTo(status, tt.location...)(r)
					})

					status2, err := c.do(context.Background(), c.newRequest(op.method, op.path, "", op.body), &map[string]any{})
					want := &APIError{StatusCode: status, Method: op.method, Path: op.path, Message: tt.message}
					var ae *APIError
					if !errors.As(err, &ae) {
						t.Fatalf("err = %v (%T), want *APIError", err, err)
					}
					if diff := cmp.Diff(want, ae); diff != "" {
						t.Errorf("APIError (-want +got):\n%s", diff)
					}
					if status2 != status {
						t.Errorf("status = %d, want %d", status2, status)
					}
					if !errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized) {
						t.Errorf("errors.Is(%v): want ErrMisconfigured only", err)
					}
					if s := err.Error(); strings.Contains(s, "s-123") || strings.Contains(s, "example.test") || strings.Contains(s, "frag") {
						t.Errorf("Error() = %q names the Location's host, query or fragment", s)
					}
					if n := mt.GetCallCountInfo()[op.method+" "+mockPrefix+op.path]; n != 1 {
						t.Errorf("%s sent %d times, want once (never retried)", op.method, n)
					}
					if got := followed.all(); len(got) != 0 {
						t.Errorf("redirect followed: %+v", got)
					}
				})
			}
		}
	}
}

func TestTokenEndpointRedirectNotFollowed(t *testing.T) {
	for _, status := range redirectStatuses {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			c, mt := setup(t)
			var followed recorder
			other := "https://api.example.test:8443" + defaultPathPrefix + "/auth/token"
			mt.RegisterResponder(http.MethodPost, other, followed.respond(jsonResponder(200, map[string]any{})))
			mt.RegisterResponder(http.MethodGet, other, followed.respond(jsonResponder(200, map[string]any{})))
			mt.RegisterResponder(http.MethodPost, tokenURL, redirectTo(status, other+"?client_secret=x"))
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", jsonResponder(200, map[string]any{}))

			_, _, err := getRaw(context.Background(), c, "/users/u-1", "")
			want := &APIError{StatusCode: status, Method: "POST", Path: "/auth/token",
				Message: "redirect to another origin, path " + defaultPathPrefix + "/auth/token, not followed; check Config.BaseURL and Config.PathPrefix"}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if diff := cmp.Diff(want, ae); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrInvalidClient) {
				t.Errorf("errors.Is(%v): want ErrMisconfigured only", err)
			}
			if got := followed.all(); len(got) != 0 {
				t.Errorf("redirect followed with the client credentials: %+v", got)
			}
			if n := mt.GetTotalCallCount(); n != 1 {
				t.Errorf("%d requests, want the token request only", n)
			}
		})
	}
}

// countingRedirects is a caller's CheckRedirect that follows redirects and
// counts how often it is asked.
type countingRedirects struct {
	mu sync.Mutex
	n  int
}

func (c *countingRedirects) check(*http.Request, []*http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil
}

func TestRedirectPolicyLeavesCallersClientAlone(t *testing.T) {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(200, map[string]any{"access_token": mockToken, "expires_in": 600}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", redirectTo(302, mockBaseURL+"/login"))
	mt.RegisterResponder(http.MethodGet, mockBaseURL+"/login", jsonResponder(200, map[string]any{}))

	plain := &http.Client{Transport: mt}
	var counter countingRedirects
	following := &http.Client{Transport: mt, CheckRedirect: counter.check}
	for _, hc := range []*http.Client{plain, following} {
		c, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = getRaw(context.Background(), c, "/users/u-1", "")
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 302 {
			t.Fatalf("err = %v, want the 302 as an *APIError", err)
		}
	}
	if plain.CheckRedirect != nil || plain.Transport != mt || following.Transport != mt {
		t.Error("the caller's client was modified")
	}
	if counter.n != 0 {
		t.Errorf("the caller's CheckRedirect was asked %d times; the SDK's policy should replace it", counter.n)
	}
	if n := mt.GetCallCountInfo()["GET "+mockBaseURL+"/login"]; n != 0 {
		t.Fatalf("redirect followed %d times", n)
	}
	// The caller's own clients still follow redirects as they did.
	for _, hc := range []*http.Client{plain, following} {
		resp, err := hc.Get(mockPrefix + "/users/u-1")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("caller's client: %v, %v; want the redirect followed to 200", resp, err)
		}
		resp.Body.Close()
	}
	if counter.n != 1 {
		t.Errorf("caller's CheckRedirect asked %d times, want 1", counter.n)
	}
}

// wireServer is an httptest server that records what it receives.
type wireServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD path Authorization"
}

func newWireServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *wireServer {
	s := &wireServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *wireServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// TestRedirectsNotFollowedOverTheWire redirects, through real connections,
// to the same host on another port (where net/http would forward the
// Authorization header) and to another path of the same origin: nothing
// reaches either.
func TestRedirectsNotFollowedOverTheWire(t *testing.T) {
	type target int
	const (
		otherPort target = iota
		otherPath
	)
	for _, tokenRoute := range []bool{false, true} {
		for _, op := range redirectOps {
			for _, status := range []int{301, 302, 303, 307, 308} {
				for _, to := range []target{otherPort, otherPath} {
					name := fmt.Sprintf("%s %d to %v token route %t", op.method, status, map[target]string{otherPort: "another port", otherPath: "another path"}[to], tokenRoute)
					t.Run(name, func(t *testing.T) {
						other := newWireServer(t, nil)
						var api *wireServer
						api = newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
							isToken := r.URL.Path == defaultPathPrefix+"/auth/token"
							if isToken == tokenRoute {
								loc := other.URL + r.URL.Path
								if to == otherPath {
									loc = api.URL + "/elsewhere" + r.URL.Path
								}
								w.Header().Set("Location", loc)
								w.WriteHeader(status)
								return
							}
							switch {
							case isToken:
								w.Header().Set("Content-Type", "application/json")
								fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":600}`, mockToken)
							default:
								w.WriteHeader(http.StatusTeapot) // not expected: the test fails below
							}
						})
						c, err := NewClient(Config{BaseURL: api.URL, ClientID: mockID, ClientSecret: mockSecret})
						if err != nil {
							t.Fatal(err)
						}
						_, err = c.do(context.Background(), c.newRequest(op.method, op.path, "", op.body), nil)
						var ae *APIError
						if !errors.As(err, &ae) || ae.StatusCode != status {
							t.Errorf("err = %v, want *APIError %d", err, status)
						}
						if got := other.requests(); len(got) != 0 {
							t.Errorf("the other port received %q", got)
						}
						for _, r := range api.requests() {
							if strings.Contains(r, " /elsewhere") {
								t.Errorf("the other path received %q", r)
							}
						}
						wantReqs := 1 // the redirected request, once
						if !tokenRoute {
							wantReqs = 2 // the token, then the redirected request
						}
						if got := api.requests(); len(got) != wantReqs {
							t.Errorf("API received %q, want %d request(s)", got, wantReqs)
						}
					})
				}
			}
		}
	}
}
