package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

func TestNewClientValidates(t *testing.T) {
	creds := func(c Config) Config { c.ClientID, c.ClientSecret = "id", "secret"; return c }
	tests := []struct {
		name string
		cfg  Config
		want string // part of the error; "" means valid
	}{
		{"https", creds(Config{BaseURL: "https://api.example.com"}), ""},
		{"https with path and port", creds(Config{BaseURL: "https://api.example.com:8443/base/"}), ""},
		{"http loopback IPv4", creds(Config{BaseURL: "http://127.0.0.1:8080"}), ""},
		{"http loopback IPv6", creds(Config{BaseURL: "http://[::1]:8080"}), ""},
		{"http localhost", creds(Config{BaseURL: "http://localhost:8080"}), ""},
		{"http remote allowed", creds(Config{BaseURL: "http://api.internal", AllowInsecureHTTP: true}), ""},
		{"token source instead of credentials", Config{BaseURL: "https://a.example", TokenSource: staticSource("t")}, ""},
		{"missing base URL", creds(Config{}), "BaseURL is required"},
		{"relative base URL", creds(Config{BaseURL: "/v2"}), "absolute http or https"},
		{"other scheme", creds(Config{BaseURL: "ftp://a.example"}), "absolute http or https"},
		{"no host", creds(Config{BaseURL: "https://"}), "no host"},
		{"query", creds(Config{BaseURL: "https://a.example/?x=1"}), "query or fragment"},
		{"empty query", creds(Config{BaseURL: "https://a.example/?"}), "query or fragment"},
		{"fragment", creds(Config{BaseURL: "https://a.example/#x"}), "query or fragment"},
		{"user info", creds(Config{BaseURL: "https://u:p@a.example"}), "user info"},
		{"http remote", creds(Config{BaseURL: "http://api.example.com"}), "not loopback"},
		{"missing id", Config{BaseURL: "https://a.example", ClientSecret: "s"}, "ClientID and Config.ClientSecret are required"},
		{"missing secret", Config{BaseURL: "https://a.example", ClientID: "i"}, "ClientID and Config.ClientSecret are required"},
		{"negative wait", creds(Config{BaseURL: "https://a.example", RetryWaitMin: -1}), "must not be negative"},
		{"negative max wait", creds(Config{BaseURL: "https://a.example", RetryWaitMax: -1}), "must not be negative"},
		{"min above max", creds(Config{BaseURL: "https://a.example", RetryWaitMin: 2e9, RetryWaitMax: 1e9}), "longer than"},
		{"negative body limit", creds(Config{BaseURL: "https://a.example", MaxResponseBytes: -1}), "MaxResponseBytes"},
		{"bad prefix", creds(Config{BaseURL: "https://a.example", PathPrefix: "v2"}), "PathPrefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.cfg)
			if tt.want == "" {
				if err != nil || c == nil {
					t.Fatalf("NewClient = %v, %v; want a client", c, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewClient error = %v; want ErrInvalidArgument mentioning %q", err, tt.want)
			}
		})
	}
}

func TestNewClientSendsNothing(t *testing.T) {
	c, mt := setup(t)
	if c == nil {
		t.Fatal("no client")
	}
	testCalls(t, mt, nil)
}

func TestRequestHeadersAndURL(t *testing.T) {
	c, mt := setup(t, Config{UserAgent: "inventory-sync/2.1"})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/a%2Fb%20c", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer "+mockToken)
		testHeader(t, r, "Content-Type", "application/json")
		testHeader(t, r, "Accept", "application/json")
		testHeader(t, r, "User-Agent", "inventory-sync/2.1 management-go/"+Version)
		testQuery(t, r, "")
		testBody(t, r, "")
		return jsonResponder(200, map[string]any{"id": "a/b c"})(r)
	})

	u, err := c.Users.Get(context.Background(), "a/b c")
	if err != nil {
		t.Fatalf("Users.Get: %v", err)
	}
	if diff := cmp.Diff(&UserDetails{User: User{ID: "a/b c"}}, u); diff != "" {
		t.Errorf("decoded body (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users/a%2Fb%20c": 1})
}

func TestDefaultUserAgent(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		testHeader(t, r, "User-Agent", "management-go/"+Version)
		return jsonResponder(200, map[string]any{"things": []any{}, "next_page": nil})(r)
	})
	if _, err := c.Things.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/things": 1})
}

func TestCustomPathPrefixAndBasePath(t *testing.T) {
	const api = "https://gw.example.test/tenant-7/v3/mgmt"
	c, mt := setup(t, Config{BaseURL: "https://gw.example.test/tenant-7/", PathPrefix: "/v3/mgmt/"})
	mt.RegisterResponder(http.MethodPost, api+"/auth/token", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "POST")
		testBody(t, r, grantBody)
		return jsonResponder(200, map[string]any{"access_token": "t", "token_type": "Bearer", "expires_in": 600})(r)
	})
	mt.RegisterResponder(http.MethodGet, api+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer t")
		testQuery(t, r, "")
		return jsonResponder(200, map[string]any{"users": []any{}, "next_page": nil})(r)
	})
	if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + api + "/auth/token": 1, "GET " + api + "/users": 1})
}

func TestResponseDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		resp httpmock.Responder
		want string
		is   error
	}{
		{"not JSON", httpmock.NewStringResponder(200, "<html>ok</html>"), "invalid character", nil},
		{"truncated", httpmock.NewStringResponder(200, `{"id":"u-1","email":`), "unexpected EOF", nil},
		{"empty", httpmock.NewStringResponder(200, ""), "empty body", nil},
		{"trailing data", httpmock.NewStringResponder(200, `{"id":"u-1"} {"id":"u-2"}`), "after the JSON value", nil},
		{"wrong type", httpmock.NewStringResponder(200, `["u-1"]`), "cannot unmarshal array", nil},
		{"oversized", httpmock.NewStringResponder(200, `{"id":"`+strings.Repeat("x", 200)+`"}`), "too large", ErrResponseTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t, Config{MaxResponseBytes: 100})
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testAPIHeaders(t, r)
				return tt.resp(r)
			})
			_, err := c.Users.Get(context.Background(), "u-1")
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T); want *DecodeError", err, err)
			}
			if de.Method != "GET" || de.Path != "/users/u-1" || de.StatusCode != 200 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q %+v; want GET /users/u-1 200 mentioning %q", err, *de, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "management: GET /users/u-1: 200 ") {
				t.Errorf("err = %q; want it to name the operation and status", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestClientStringHidesCredentials(t *testing.T) {
	c, _ := setup(t)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), c.String()} {
		if strings.Contains(s, mockSecret) || strings.Contains(s, mockID) {
			t.Errorf("client printed as %q", s)
		}
	}
}

// staticSource is a TokenSource that always returns the same token.
type staticSource string

func (s staticSource) Token(context.Context) (*Token, error) {
	return &Token{AccessToken: string(s), TokenType: "Bearer"}, nil
}

func TestTokenSourceReplacesClientCredentials(t *testing.T) {
	c, mt := setup(t, Config{TokenSource: staticSource("user-supplied")})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer user-supplied")
		return jsonResponder(200, map[string]any{"users": []any{}, "next_page": nil})(r)
	})
	if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"GET " + mockPrefix + "/users": 1}) // and never the token endpoint
}

// mutatingSource returns one *Token whose fields it changes in place, as a
// hand-written TokenSource might.
type mutatingSource struct{ tok Token }

func (s *mutatingSource) Token(context.Context) (*Token, error) { return &s.tok, nil }

func TestAuthorizationFollowsATokenChangedInPlace(t *testing.T) {
	src := &mutatingSource{tok: Token{AccessToken: "first", TokenType: "Bearer"}}
	c, mt := setup(t, Config{TokenSource: src})
	var want string // the Authorization the call under way carries
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", want)
		return jsonResponder(200, map[string]any{"users": []any{}, "next_page": nil})(r)
	})
	for _, access := range []string{"first", "first", "second"} {
		src.tok.AccessToken = access
		want = "Bearer " + access
		if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	testCalls(t, mt, map[string]int{"GET " + mockPrefix + "/users": 3})
}
