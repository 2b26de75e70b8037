package management

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// An error says what the answer carried beside its body: its headers
// (without any that can carry a credential), its request id and the wait
// Retry-After asked for.
func TestAnswerMeta(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
		resp := httpmock.NewStringResponse(http.StatusTooManyRequests, `{"reason":"RATE","error_message":"slow down"}`)
		h := resp.Header
		h.Set("Content-Type", "application/json")
		h.Set("X-Request-Id", "req-42")
		h.Set("Retry-After", "7")
		h.Set("Set-Cookie", "session=abc")
		h.Set("X-Api-Key", "key-1")
		h.Set("X-Session-Token", "tok-1")
		h.Set("WWW-Authenticate", `Bearer realm="x"`)
		return resp, nil
	})
	_, err := c.Users.Get(context.Background(), "u-1")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v; want *APIError", err)
	}
	if ae.RequestID != "req-42" || ae.RetryAfter != 7*time.Second {
		t.Errorf("RequestID %q, RetryAfter %v; want req-42, 7s", ae.RequestID, ae.RetryAfter)
	}
	if ae.Header.Get("Content-Type") != "application/json" || ae.Header.Get("Retry-After") != "7" {
		t.Errorf("Header lacks plain headers: %v", ae.Header)
	}
	for _, name := range []string{"Set-Cookie", "X-Api-Key", "X-Session-Token", "Www-Authenticate"} {
		if v := ae.Header.Values(name); len(v) != 0 {
			t.Errorf("Header keeps %s: %q", name, v)
		}
	}
	if !strings.HasSuffix(err.Error(), "(request id req-42)") {
		t.Errorf("Error() = %q; want it to end with the request id", err)
	}
}

func TestTokenErrorMeta(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, mockPrefix+"/auth/token", func(r *http.Request) (*http.Response, error) {
		resp := httpmock.NewStringResponse(http.StatusUnauthorized, `{"error":"invalid_client","error_description":"bad"}`)
		resp.Header.Set("X-Request-Id", "req-7")
		resp.Header.Set("Set-Cookie", "s=1")
		return resp, nil
	})
	_, err := c.Users.Get(context.Background(), "u-1")
	var te *TokenError
	if !errors.As(err, &te) || te.RequestID != "req-7" || te.Header.Get("Set-Cookie") != "" || !strings.HasSuffix(err.Error(), "(request id req-7)") {
		t.Errorf("err = %#v; want a *TokenError with RequestID req-7 and no Set-Cookie", err)
	}
}

// A request id that is not printable ASCII is not kept: a hostile answer
// could put anything there.
func TestRequestIDMustBePrintable(t *testing.T) {
	_, id, _ := answerMeta(http.Header{"X-Request-Id": {"a\x1b[2Jb"}}, time.Now())
	if id != "" {
		t.Errorf("RequestID = %q; want none", id)
	}
}

// The request id is the first one of the request-id headers shaped like
// an id: one with a newline or a control byte is passed over, not taken
// for the answer's id, in an error and in AttemptDone.
func TestRequestIDIsTheFirstShapedLikeOne(t *testing.T) {
	var got AttemptResult
	c, mt := setup(t, Config{MaxRetries: -1, Observer: &Observer{AttemptDone: func(_ context.Context, _ Operation, _ Attempt, r AttemptResult) {
		if r.Status == http.StatusBadRequest {
			got = r
		}
	}}})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
		resp, _ := jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "no"})(r)
		resp.Header.Set("X-Request-Id", "id\nforged")
		resp.Header["Request-Id"] = []string{"", "a\x1b[2Jb"}
		resp.Header.Set("X-Correlation-Id", "corr-42")
		resp.Header.Set("X-Trace-Id", "trace-7")
		return resp, nil
	})
	_, err := c.Users.Get(context.Background(), "u-1")
	var ae *APIError
	if !errors.As(err, &ae) || ae.RequestID != "corr-42" || !strings.HasSuffix(err.Error(), "(request id corr-42)") {
		t.Errorf("err = %v; want RequestID corr-42", err)
	}
	if got.RequestID != "corr-42" || got.RequestIDHeader != "X-Correlation-Id" {
		t.Errorf("AttemptDone got request id %q from %q; want corr-42 from X-Correlation-Id", got.RequestID, got.RequestIDHeader)
	}
	if _, id, _ := answerMeta(http.Header{"X-Amz-Request-Id": {"bad id", "amz-1"}}, time.Now()); id != "amz-1" {
		t.Errorf("X-Amz-Request-Id [bad id, amz-1]: RequestID %q, want the second value", id)
	}
}

// Deprecation and Sunset headers are logged once per route and Client.
func TestDeprecationLoggedOncePerRoute(t *testing.T) {
	var logs strings.Builder
	c, mt := setup(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	deprecated := func(body string) httpmock.Responder {
		return func(*http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(http.StatusOK, body)
			resp.Header.Set("Deprecation", "@1767225600")
			resp.Header.Set("Sunset", "Wed, 01 Jul 2026 00:00:00 GMT")
			return resp, nil
		}
	}
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", deprecated(`{"id":"u-1"}`))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-2", deprecated(`{"id":"u-2"}`))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things/t-1", deprecated(`{"physical_id":"t-1"}`))
	for _, id := range []string{"u-1", "u-2", "u-1"} {
		if _, err := c.Users.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Things.Get(context.Background(), "t-1"); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if got := strings.Count(out, "route is deprecated"); got != 2 {
		t.Errorf("%d deprecation records; want 2 (one per route):\n%s", got, out)
	}
	if !strings.Contains(out, "route=/users/{user_id}") || !strings.Contains(out, `sunset="Wed, 01 Jul 2026 00:00:00 GMT"`) {
		t.Errorf("the record names neither the route template nor the sunset:\n%s", out)
	}
}
