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

// redirectOps are one call of each method the API uses, with the request
// it sends: the path below the prefix and the body ("" for none).
var redirectOps = []struct {
	method, path, body string
	call               func(context.Context, *Client) error
}{
	{http.MethodGet, "/users/u-1", "", func(ctx context.Context, c *Client) error {
		_, err := c.Users.Get(ctx, "u-1")
		return err
	}},
	{http.MethodPatch, "/things/t-1", `{"name":"n"}`, func(ctx context.Context, c *Client) error {
		_, err := c.Things.Update(ctx, "t-1", ThingUpdate{Name: Ptr("n")})
		return err
	}},
	{http.MethodPost, "/users/u-1/associated_things", `{"physical_id":"t-1","model":"m","firmware_version":"1"}`, func(ctx context.Context, c *Client) error {
		_, _, err := c.Users.AssociateThing(ctx, "u-1", NewAssociation{PhysicalID: "t-1", Model: "m", FirmwareVersion: "1"})
		return err
	}},
	{http.MethodDelete, "/users/u-1/associated_things/t-1", "", func(ctx context.Context, c *Client) error {
		return c.Users.DisassociateThing(ctx, "u-1", "t-1")
	}},
}

// registerFollowed registers, for every method, a handler at each of urls
// that fails the test: a redirect to it was followed.
func registerFollowed(t *testing.T, mt *httpmock.MockTransport, urls ...string) {
	for _, u := range urls {
		for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
			mt.RegisterResponder(m, u, func(r *http.Request) (*http.Response, error) {
				t.Errorf("redirect followed: %s %s", r.Method, r.URL)
				return jsonResponder(200, map[string]any{})(r)
			})
		}
	}
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
					registerFollowed(t, mt, mockBaseURL+"/login", mockBaseURL+"/relative/path",
						"https://api.example.test:8443/login", "http://api.example.test/login", "https://evil.example.test/login")
					mt.RegisterResponder(op.method, mockPrefix+op.path, func(r *http.Request) (*http.Response, error) {
						testMethod(t, r, op.method)
						testAPIHeaders(t, r)
						testBody(t, r, op.body)
						return redirectTo(status, tt.location...)(r)
					})

					err := op.call(context.Background(), c)
					want := &APIError{StatusCode: status, Method: op.method, Path: op.path, Message: tt.message}
					var ae *APIError
					if !errors.As(err, &ae) {
						t.Fatalf("err = %v (%T), want *APIError", err, err)
					}
					if diff := cmp.Diff(want, ae, ignoreAnswerMeta); diff != "" {
						t.Errorf("APIError (-want +got):\n%s", diff)
					}
					if !errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized) {
						t.Errorf("errors.Is(%v): want ErrMisconfigured only", err)
					}
					if s := err.Error(); strings.Contains(s, "s-123") || strings.Contains(s, "example.test") || strings.Contains(s, "frag") {
						t.Errorf("Error() = %q names the Location's host, query or fragment", s)
					}
					// Sent once, never retried, and nothing else sent.
					testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, op.method + " " + mockPrefix + op.path: 1})
				})
			}
		}
	}
}

func TestTokenEndpointRedirectNotFollowed(t *testing.T) {
	for _, status := range redirectStatuses {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			c, mt := setup(t)
			other := "https://api.example.test:8443" + defaultPathPrefix + "/auth/token"
			registerFollowed(t, mt, other) // with the client credentials
			mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testBody(t, r, grantBody)
				return redirectTo(status, other+"?client_secret=x")(r)
			})

			_, err := c.Users.Get(context.Background(), "u-1")
			want := &APIError{StatusCode: status, Method: "POST", Path: "/auth/token",
				Message: "redirect to another origin, path " + defaultPathPrefix + "/auth/token, not followed; check Config.BaseURL and Config.PathPrefix"}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if diff := cmp.Diff(want, ae, ignoreAnswerMeta); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrInvalidClient) {
				t.Errorf("errors.Is(%v): want ErrMisconfigured only", err)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1}) // the token request only
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
	// setup's transport, under clients of the caller's own: the subject is
	// what the SDK does with Config.HTTPClient, which setup replaces.
	_, mt := setup(t)
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
		_, err = c.Users.Get(context.Background(), "u-1")
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
						err = op.call(context.Background(), c)
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
