package management

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAPIErrorString(t *testing.T) {
	tests := []struct {
		err  APIError
		want string
	}{
		{APIError{StatusCode: 404, Reason: ReasonEntityNotFound, Message: "User u-1 was not found", Method: "GET", Path: "/users/u-1"},
			"management: GET /users/u-1: 404 COMMON.ENTITY_NOT_FOUND: User u-1 was not found"},
		{APIError{StatusCode: 401, Reason: ReasonUnauthorized, Method: "PATCH", Path: "/things/t-1"},
			"management: PATCH /things/t-1: 401 AUTH.UNAUTHORIZED"},
		{APIError{StatusCode: 502, Method: "GET", Path: "/users", Body: []byte("<html>")},
			"management: GET /users: 502 Bad Gateway"},
		{APIError{StatusCode: 599, Method: "GET", Path: "/users"}, "management: GET /users: 599"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestAPIErrorIs(t *testing.T) {
	tests := []struct {
		err  APIError
		is   []error
		isnt []error
	}{
		{APIError{StatusCode: 401, Reason: ReasonUnauthorized}, []error{ErrUnauthorized}, []error{ErrNotFound, ErrValidation, ErrRateLimited}},
		{APIError{StatusCode: 401, Reason: "auth.unauthorized"}, []error{ErrUnauthorized}, nil},
		{APIError{StatusCode: 401}, []error{ErrUnauthorized}, nil},
		{APIError{StatusCode: 404, Reason: ReasonEntityNotFound}, []error{ErrNotFound}, []error{ErrUnauthorized}},
		{APIError{StatusCode: 404}, []error{ErrNotFound}, nil},
		{APIError{StatusCode: 400, Reason: ReasonRequestValidation}, []error{ErrValidation}, []error{ErrNotFound}},
		{APIError{StatusCode: 400, Reason: "COMMON.OTHER"}, nil, []error{ErrValidation}},
		{APIError{StatusCode: 429}, []error{ErrRateLimited}, []error{ErrValidation}},
		{APIError{StatusCode: 500}, nil, []error{ErrUnauthorized, ErrNotFound, ErrValidation, ErrRateLimited, ErrInvalidArgument}},
	}
	for _, tt := range tests {
		var err error = &tt.err
		for _, s := range tt.is {
			if !errors.Is(err, s) {
				t.Errorf("errors.Is(%v, %v) = false", err, s)
			}
		}
		for _, s := range tt.isnt {
			if errors.Is(err, s) {
				t.Errorf("errors.Is(%v, %v) = true", err, s)
			}
		}
	}
}

// answerError sends Users.Get("u-1") through a client (that never retries)
// whose management endpoint, or whose token endpoint when token is set,
// answers status and body, and returns the error the call fails with.
func answerError(t *testing.T, token bool, status int, body string) error {
	t.Helper()
	c, mt := setup(t, Config{MaxRetries: -1})
	method, route := http.MethodGet, mockPrefix+"/users/u-1"
	if token {
		method, route = http.MethodPost, tokenURL
	}
	mt.RegisterResponder(method, route, rawResponder(status, "", body))
	u, err := c.Users.Get(t.Context(), "u-1")
	if u != nil {
		t.Errorf("Users.Get = %+v with an error answer", u)
	}
	return err
}

func TestErrorFor(t *testing.T) {
	tests := []struct {
		name   string
		token  bool // the token endpoint answers, not the User's
		status int
		body   string
		want   error
	}{
		{"management shape", false, 404, `{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"User u-1 was not found"}`,
			&APIError{StatusCode: 404, Reason: ReasonEntityNotFound, Message: "User u-1 was not found", Method: "GET", Path: "/users/u-1"}},
		{"token shape on token endpoint", true, 401, `{"error":"invalid_client","error_description":"Bad client"}`,
			&TokenError{StatusCode: 401, Code: "invalid_client", Description: "Bad client"}},
		{"token shape elsewhere", false, 401, `{"error":"invalid_token","error_description":"expired"}`,
			&APIError{StatusCode: 401, Reason: "invalid_token", Message: "expired", Method: "GET", Path: "/users/u-1"}},
		{"not JSON", false, 502, `<html>bad gateway</html>`,
			&APIError{StatusCode: 502, Method: "GET", Path: "/users/u-1", Body: []byte("<html>bad gateway</html>")}},
		{"empty", true, 500, ``, &APIError{StatusCode: 500, Method: "POST", Path: "/auth/token"}},
		{"wrong types", false, 400, `{"reason":7,"error_message":["x"]}`,
			&APIError{StatusCode: 400, Method: "GET", Path: "/users/u-1", Body: []byte(`{"reason":7,"error_message":["x"]}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := answerError(t, tt.token, tt.status, tt.body)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) }), ignoreAnswerMeta); diff != "" {
				t.Errorf("errorFor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorPathNeverHasQuery(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testQuery(t, r, "page=opaque-token-123")
		return rawResponder(400, "application/json", `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"Invalid page"}`)(r)
	})
	_, err := c.Users.ListPage(t.Context(), &ListOptions{NextPage: usersPath + "?page=opaque-token-123"})
	if s := err.Error(); s != "management: GET /users: 400 COMMON.REQUEST_VALIDATION: Invalid page" {
		t.Errorf("Error() = %q", s)
	}
}

func FuzzErrorBody(f *testing.F) {
	for _, seed := range []string{
		`{"reason":"COMMON.ENTITY_NOT_FOUND","error_message":"User u-1 was not found"}`,
		`{"error":"invalid_client","error_description":"Bad"}`,
		`<html></html>`, ``, `null`, `[]`, `{"reason":null}`, `{"reason":"x","error_message":{}}`,
	} {
		f.Add(400, []byte(seed), false)
		f.Add(401, []byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, tokenEndpoint bool) {
		if status < 300 || status > 999 {
			status = 300 + (status%700+700)%700 // answers that are not 2xx
		}
		err := answerError(t, tokenEndpoint, status, string(body))
		if err == nil || err.Error() == "" {
			t.Fatalf("errorFor(%d, %q) = %v", status, body, err)
		}
		var ae *APIError
		if errors.As(err, &ae) && len(ae.Body) > maxErrorBody {
			t.Fatalf("Body kept %d bytes", len(ae.Body))
		}
		if strings.Contains(err.Error(), "\x00") && !strings.Contains(string(body), "\x00") {
			t.Fatalf("error text invented a NUL")
		}
	})
}

func TestErrorfSaysThePrefixOnce(t *testing.T) {
	inner := &APIError{StatusCode: 503, Method: "GET", Path: "/users"}
	err := errorf("listing %s, page %d: %w", "/users", 2, inner)
	if got, want := err.Error(), "management: listing /users, page 2: GET /users: 503 Service Unavailable"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr != inner {
		t.Errorf("errors.As does not find the *APIError in %v", err)
	}
	both := errorf("%w: %w", ErrAuthenticationUnavailable, inner)
	if got, want := both.Error(), "management: End User token check unavailable: GET /users: 503 Service Unavailable"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(both, ErrAuthenticationUnavailable) || !errors.As(both, &apiErr) {
		t.Errorf("errors.Is/As do not see both wrapped errors of %v", both)
	}
}
