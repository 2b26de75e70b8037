package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jarcoal/httpmock"
)

// A token request that went to the wrong place says so, and is never taken
// for an answer of the API.

func TestTokenEndpointAnswerWithoutOAuthShapeIsMisconfiguration(t *testing.T) {
	const leak = "echo-of-" + mockSecret
	tests := []struct {
		name   string
		status int
		resp   httpmock.Responder
	}{
		{"404 HTML page", 404, httpmock.NewStringResponder(404, "<html>Not Found "+leak+"</html>")},
		{"404 of the management shape", 404, jsonResponder(404, map[string]any{"reason": ReasonEntityNotFound, "error_message": leak})},
		{"401 of a gateway", 401, httpmock.NewStringResponder(401, leak)},
		{"401 of the management shape", 401, jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": leak})},
		{"400 empty", 400, httpmock.NewStringResponder(400, "")},
		{"405 text", 405, httpmock.NewStringResponder(405, "Method Not Allowed "+leak)},
		{"403 empty error code", 403, jsonResponder(403, map[string]any{"error": "", "error_description": leak})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testBody(t, r, grantBody)
				return tt.resp(r)
			})
			_, err := c.Users.Get(context.Background(), "u-1")

			var te *TokenError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (%T), want *TokenError", err, err)
			}
			if diff := cmp.Diff(TokenError{StatusCode: tt.status}, *te, ignoreAnswerMeta, cmpopts.IgnoreFields(TokenError{}, "BodyLength")); diff != "" {
				t.Errorf("TokenError (-want +got):\n%s", diff)
			}
			want := fmt.Sprintf("management: POST /auth/token: %d %s: not an answer of the token endpoint; check Config.BaseURL and Config.PathPrefix",
				tt.status, http.StatusText(tt.status))
			if te.BodyLength > 0 {
				media := te.Header.Get("Content-Type")
				if media == "" {
					media = "no Content-Type"
				}
				want += fmt.Sprintf("; body withheld (%s, %d bytes)", media, te.BodyLength)
			}
			if err.Error() != want {
				t.Errorf("Error() = %q, want %q", err, want)
			}
			if !errors.Is(err, ErrMisconfigured) {
				t.Errorf("errors.Is(err, ErrMisconfigured) = false")
			}
			for _, s := range []error{ErrNotFound, ErrUnauthorized, ErrValidation, ErrInvalidClient, ErrUnsupportedGrantType, ErrRateLimited} {
				if errors.Is(err, s) {
					t.Errorf("errors.Is(err, %v) = true", s)
				}
			}
			var ae *APIError
			if errors.As(err, &ae) {
				t.Errorf("errors.As finds an *APIError: %+v", ae)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1}) // the token request only, once
		})
	}
}

func TestTokenEndpointOutageIsNotMisconfiguration(t *testing.T) {
	const leak = "echo-of-" + mockSecret
	for _, status := range []int{429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			c, mt := setup(t, Config{MaxRetries: -1})
			mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testBody(t, r, grantBody)
				return rawResponder(status, "text/html", "<html>"+leak+"</html>")(r)
			})
			_, err := c.Users.Get(context.Background(), "u-1")
			want := &APIError{StatusCode: status, Method: "POST", Path: "/auth/token", BodyLength: int64(len("<html>" + leak + "</html>"))}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if diff := cmp.Diff(want, ae, ignoreAnswerMeta); diff != "" {
				t.Errorf("APIError (-want +got); the body must not be kept:\n%s", diff)
			}
			if errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrRateLimited) != (status == 429) {
				t.Errorf("errors.Is: ErrMisconfigured %t, ErrRateLimited %t", errors.Is(err, ErrMisconfigured), errors.Is(err, ErrRateLimited))
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1})
		})
	}
}

func TestNewClientRefusesBaseURLWithThePrefix(t *testing.T) {
	tests := []struct {
		base, prefix, want string
	}{
		{"https://api.example.com/v2/api/management/service_connect", "", "https://api.example.com"},
		{"https://api.example.com/v2/api/management/service_connect/", "", "https://api.example.com"},
		{"https://gw.example.com:8443/tenant-7/v2/api/management/service_connect", "", "https://gw.example.com:8443/tenant-7"},
		{"https://gw.example.com/tenant-7/v3/mgmt", "/v3/mgmt/", "https://gw.example.com/tenant-7"},
	}
	for _, tt := range tests {
		_, err := NewClient(Config{BaseURL: tt.base, PathPrefix: tt.prefix, ClientID: "id", ClientSecret: "secret"})
		prefix := strings.TrimSuffix(tt.prefix, "/")
		if prefix == "" {
			prefix = defaultPathPrefix
		}
		want := fmt.Sprintf("management: invalid argument: Config.BaseURL %q already ends with the path prefix %q, which the client adds to every path; write BaseURL as %q",
			strings.TrimSuffix(tt.base, "/"), prefix, tt.want)
		if !errors.Is(err, ErrInvalidArgument) || err.Error() != want {
			t.Errorf("NewClient(%q, %q) = %v; want %q", tt.base, tt.prefix, err, want)
		}
	}
	for _, base := range []string{"https://api.example.com/v2", "https://api.example.com/service_connect", "https://api.example.com/x/v2/api/management/service_connect/more"} {
		if _, err := NewClient(Config{BaseURL: base, ClientID: "id", ClientSecret: "secret"}); err != nil {
			t.Errorf("NewClient(%q) = %v; want a client", base, err)
		}
	}
}

func TestNewClientRefusesClientIDWithColon(t *testing.T) {
	_, err := NewClient(Config{BaseURL: mockBaseURL, ClientID: "tenant:app-7", ClientSecret: mockSecret})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Config.ClientID contains ':'") {
		t.Fatalf("err = %v; want ErrInvalidArgument about ':' in Config.ClientID", err)
	}
	if strings.Contains(err.Error(), "tenant") || strings.Contains(err.Error(), mockSecret) {
		t.Errorf("err = %q quotes the credentials", err)
	}
	// A colon in the secret is fine (RFC 7617), and the id is unused with a TokenSource.
	for _, cfg := range []Config{
		{BaseURL: mockBaseURL, ClientID: "app-7", ClientSecret: "a:b"},
		{BaseURL: mockBaseURL, ClientID: "tenant:app-7", TokenSource: staticSource("t")},
	} {
		if _, err := NewClient(cfg); err != nil {
			t.Errorf("NewClient = %v; want a client", err)
		}
	}
}

// The package's error texts say "management: " once, however they nest.
func TestErrorsSayThePrefixOnce(t *testing.T) {
	tokenErr := &TokenError{StatusCode: 401, Code: "invalid_client", Description: "Bad client"}
	tests := []struct {
		err  error
		want string
	}{
		{&TransportError{Method: "GET", Path: "/users", Attempts: 3, Err: context.Canceled},
			"management: GET /users: no answer after 3 attempt(s): context canceled"},
		{&TransportError{Method: "GET", Path: "/users", Attempts: 2, Err: tokenErr},
			"management: GET /users: no answer after 2 attempt(s): POST /auth/token: 401 invalid_client: Bad client"},
		{&TransportError{Method: "GET", Path: "/users", Attempts: 2, Err: errorf("waiting for a token: %w", context.DeadlineExceeded)},
			"management: GET /users: no answer after 2 attempt(s): waiting for a token: context deadline exceeded"},
		{&TransportError{Method: "GET", Path: "/users", Err: errors.New("net/http: nil Context")},
			"management: GET /users: not sent: net/http: nil Context"},
		{&DecodeError{Method: "GET", Path: "/users", StatusCode: 200, Err: errorf("%w (limit %d bytes)", ErrResponseTooLarge, 100)},
			"management: GET /users: 200 response: response body too large (limit 100 bytes)"},
		{&DecodeError{Method: "GET", Path: "/users", StatusCode: 200, Err: ErrInvalidPageLink},
			"management: GET /users: 200 response: invalid next_page link"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	// NewClient's refusals, one per check.
	for _, cfg := range []Config{
		{}, {BaseURL: "ftp://x"}, {BaseURL: mockBaseURL},
		{BaseURL: mockBaseURL, ClientID: "a:b", ClientSecret: "s"},
		{BaseURL: mockBaseURL, TokenSource: staticSource("t"), RetryWaitMin: -1},
		{BaseURL: mockBaseURL, TokenSource: staticSource("t"), MaxResponseBytes: -1},
		{BaseURL: mockBaseURL, TokenSource: staticSource("t"), PathPrefix: "x"},
		{BaseURL: mockBaseURL, TokenSource: staticSource("t"), RetryWaitMin: 2, RetryWaitMax: 1},
		{BaseURL: mockPrefix, TokenSource: staticSource("t")},
	} {
		_, err := NewClient(cfg)
		if err == nil || strings.Count(err.Error(), "management: ") != 1 || !strings.HasPrefix(err.Error(), "management: invalid argument: ") {
			t.Errorf("NewClient error %q: want the prefix once, then the sentinel", err)
		}
	}
}

func TestTransportErrorOfAPackageErrorOverTheWire(t *testing.T) {
	// A retry whose fresh token cannot be had: the token error, inside the
	// *TransportError, reads with the prefix once.
	c, mt := setup(t, Config{TokenSource: &failingAfterFirst{}})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer t") // the first token; no retry got another
		return httpmock.NewStringResponse(503, ""), nil
	})
	_, err := c.Users.ListPage(context.Background(), nil)
	if err == nil || strings.Count(err.Error(), "management: ") != 1 || !errors.Is(err, ErrInvalidClient) {
		t.Fatalf("err = %v; want the prefix once, and ErrInvalidClient through it", err)
	}
}

// failingAfterFirst hands out one token, then refuses.
type failingAfterFirst struct{ n int }

func (s *failingAfterFirst) Token(context.Context) (*Token, error) {
	s.n++
	if s.n > 1 {
		return nil, &TokenError{StatusCode: 401, Code: "invalid_client"}
	}
	return &Token{AccessToken: "t", TokenType: "Bearer"}, nil
}

// A 200 of the token endpoint that is not JSON at all is no answer of the
// token endpoint, whatever it is labelled: it matches ErrMisconfigured and
// says what to check, as an HTML page labelled text/html does. So does one
// of the authenticate endpoint (whose body is withheld too), and an HTML
// page labelled JSON from a route whose body is kept.
func TestNonJSON200IsMisconfiguration(t *testing.T) {
	const page = "<html><body>Sign in</body></html>"
	answers := map[string]httpmock.Responder{
		"HTML without a Content-Type":    rawResponder(200, "", page),
		"HTML labelled application/json": rawResponder(200, "application/json", page),
		"text/plain":                     rawResponder(200, "text/plain", "OK"),
		"an empty body":                  rawResponder(200, "application/json", ""),
	}
	for name, answer := range answers {
		for _, route := range []string{"/auth/token", "/authenticate", "/users/u-1"} {
			t.Run(name+" from "+route, func(t *testing.T) {
				c, mt := setup(t, Config{MaxRetries: -1})
				method := http.MethodPost
				if route == "/users/u-1" {
					method = http.MethodGet
				}
				mt.RegisterResponder(method, mockPrefix+route, answer)
				mt.RegisterResponder(http.MethodPost, mockPrefix+"/authenticate", answer)
				var err error
				if route == "/authenticate" {
					_, err = c.Authenticate(context.Background(), "Bearer eu-12345678")
				} else {
					_, err = c.Users.Get(context.Background(), "u-1")
				}
				kept := route == "/users/u-1"
				if kept && !strings.Contains(name, "HTML") {
					// A kept body that is not HTML is shown as it is: no hint.
					if errors.Is(err, ErrMisconfigured) {
						t.Errorf("err = %v; want no ErrMisconfigured for a body that is shown", err)
					}
					return
				}
				if !errors.Is(err, ErrMisconfigured) || !strings.HasSuffix(err.Error(), "; check Config.BaseURL and Config.PathPrefix") {
					t.Errorf("err = %v; want ErrMisconfigured and the hint", err)
				}
			})
		}
	}
	// JSON of another shape is the token endpoint misbehaving, not a wrong place.
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodPost, tokenURL, rawResponder(200, "application/json", `{"token":"x"}`))
	if _, err := c.Users.Get(context.Background(), "u-1"); err == nil || errors.Is(err, ErrMisconfigured) {
		t.Errorf("err = %v; want an error that does not match ErrMisconfigured", err)
	}
}
