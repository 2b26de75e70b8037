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

// getRaw sends a GET of path (below the prefix) through the client's one
// request path, as every endpoint does.
func getRaw(ctx context.Context, c *Client, path, query string) (map[string]any, int, error) {
	var out map[string]any
	status, err := c.do(ctx, c.newRequest(http.MethodGet, path, query, nil), &out)
	return out, status, err
}

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
	c, mt := newMockClient(t, Config{})
	if c == nil || mt.GetTotalCallCount() != 0 {
		t.Fatalf("NewClient made %d requests; want 0", mt.GetTotalCallCount())
	}
}

func TestRequestHeadersAndURL(t *testing.T) {
	c, mt := newMockClient(t, Config{UserAgent: "inventory-sync/2.1"})
	var rec recorder
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/a%2Fb%20c",
		rec.respond(jsonResponder(200, map[string]any{"id": "a/b c"})))

	out, status, err := getRaw(context.Background(), c, "/users/a%2Fb%20c", "")
	if err != nil || status != 200 {
		t.Fatalf("do = %d, %v", status, err)
	}
	if diff := cmp.Diff(map[string]any{"id": "a/b c"}, out); diff != "" {
		t.Errorf("decoded body (-want +got):\n%s", diff)
	}
	reqs := rec.all()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	want := map[string]string{
		"Authorization": "Bearer " + mockToken,
		"Content-Type":  "application/json",
		"Accept":        "application/json",
		"User-Agent":    "inventory-sync/2.1 management-go/" + Version,
	}
	for k, v := range want {
		if got.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if got.Method != http.MethodGet || got.Path != "/v2/api/management/service_connect/users/a%2Fb%20c" || got.Body != "" {
		t.Errorf("request = %s %s body %q", got.Method, got.Path, got.Body)
	}
}

func TestDefaultUserAgent(t *testing.T) {
	c, mt := newMockClient(t, Config{})
	var rec recorder
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", rec.respond(jsonResponder(200, map[string]any{})))
	if _, _, err := getRaw(context.Background(), c, "/things", ""); err != nil {
		t.Fatal(err)
	}
	if ua := rec.all()[0].Header.Get("User-Agent"); ua != "management-go/"+Version {
		t.Errorf("User-Agent = %q", ua)
	}
}

func TestCustomPathPrefixAndBasePath(t *testing.T) {
	c, mt := newMockClient(t, Config{BaseURL: "https://gw.example.test/tenant-7/", PathPrefix: "/v3/mgmt/"})
	mt.RegisterResponder(http.MethodPost, "https://gw.example.test/tenant-7/v3/mgmt/auth/token",
		jsonResponder(200, map[string]any{"access_token": "t", "token_type": "Bearer", "expires_in": 600}))
	mt.RegisterResponder(http.MethodGet, "https://gw.example.test/tenant-7/v3/mgmt/users", jsonResponder(200, map[string]any{"ok": true}))
	if _, _, err := getRaw(context.Background(), c, "/users", ""); err != nil {
		t.Fatal(err)
	}
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
			c, mt := newMockClient(t, Config{MaxResponseBytes: 100})
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", tt.resp)
			_, _, err := getRaw(context.Background(), c, "/users/u-1", "")
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
	c, _ := newMockClient(t, Config{})
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
	c, mt := newMockClient(t, Config{TokenSource: staticSource("user-supplied")})
	var rec recorder
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", rec.respond(jsonResponder(200, map[string]any{})))
	if _, _, err := getRaw(context.Background(), c, "/users", ""); err != nil {
		t.Fatal(err)
	}
	if got := rec.all()[0].Header.Get("Authorization"); got != "Bearer user-supplied" {
		t.Errorf("Authorization = %q", got)
	}
	if n := mt.GetCallCountInfo()["POST "+mockPrefix+"/auth/token"]; n != 0 {
		t.Errorf("token endpoint called %d times; want 0", n)
	}
}

// mutatingSource returns one *Token whose fields it changes in place, as a
// hand-written TokenSource might.
type mutatingSource struct{ tok Token }

func (s *mutatingSource) Token(context.Context) (*Token, error) { return &s.tok, nil }

func TestAuthorizationFollowsATokenChangedInPlace(t *testing.T) {
	src := &mutatingSource{tok: Token{AccessToken: "first", TokenType: "Bearer"}}
	c, mt := newMockClient(t, Config{TokenSource: src})
	var rec recorder
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", rec.respond(jsonResponder(200, map[string]any{})))
	for _, access := range []string{"first", "first", "second"} {
		src.tok.AccessToken = access
		if _, _, err := getRaw(context.Background(), c, "/users", ""); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range rec.all() {
		got = append(got, r.Header.Get("Authorization"))
	}
	if diff := cmp.Diff([]string{"Bearer first", "Bearer first", "Bearer second"}, got); diff != "" {
		t.Errorf("Authorization per call (-want +got):\n%s", diff)
	}
}
