package management

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

func TestRetryAfterHonouredThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: 100 * time.Millisecond, RetryWaitMax: 10 * time.Second})
		answers := httpmock.NewStringResponder(503, "busy").HeaderSet(http.Header{"Retry-After": {"3"}}).Once().Then(pageOfUsers("", "u-1"))
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return answers(r)
		})

		start := time.Now()
		page, err := c.Users.ListPage(context.Background(), nil)
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != "u-1" {
			t.Fatalf("ListPage = %v, %v; want the second attempt's page", page, err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("waited %v, want the 3 s of Retry-After", waited)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 2})
	})
}

func TestRetryAfterHTTPDate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: 100 * time.Millisecond, RetryWaitMax: 10 * time.Second})
		at := time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat)
		answers := httpmock.NewStringResponder(429, "slow down").HeaderSet(http.Header{"Retry-After": {at}}).Once().Then(pageOfUsers(""))
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return answers(r)
		})
		start := time.Now()
		if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 4*time.Second {
			t.Errorf("waited %v, want 4 s", waited)
		}
	})
}

func TestPersistentRateLimit(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: 3})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		return jsonResponder(429, map[string]any{"reason": "COMMON.RATE_LIMITED", "error_message": "too many"})(r)
	})
	_, err := c.Users.ListPage(context.Background(), nil)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Message != "too many" {
		t.Errorf("err = %#v, want the final *APIError 429", err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 4}) // MaxRetries+1
}

func TestNegativeMaxRetriesMeansOneAttempt(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: -1})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		return httpmock.NewStringResponse(503, ""), nil
	})
	_, err := c.Users.ListPage(context.Background(), nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 {
		t.Fatalf("err = %v, want *APIError 503", err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 1})
}

func TestDefaultRetriesOnServerErrors(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504} {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return httpmock.NewStringResponse(status, ""), nil
		})
		_, err := c.Users.ListPage(context.Background(), nil)
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != status {
			t.Fatalf("%d: err = %v", status, err)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 5}) // 1 + the default 4 retries
	}
}

func TestNeverRetried(t *testing.T) {
	tests := []struct {
		status   int
		body     map[string]any
		sentinel error
	}{
		{400, map[string]any{"reason": ReasonRequestValidation, "error_message": "Unsupported column: name"}, ErrValidation},
		{404, map[string]any{"reason": ReasonEntityNotFound, "error_message": "User u-1 was not found"}, ErrNotFound},
		{403, map[string]any{"reason": "AUTH.FORBIDDEN", "error_message": "no"}, nil},
		{409, map[string]any{"reason": "COMMON.CONFLICT", "error_message": "no"}, nil},
		{501, map[string]any{"reason": "COMMON.NOT_IMPLEMENTED", "error_message": "no"}, nil},
	}
	for _, tt := range tests {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return jsonResponder(tt.status, tt.body)(r)
		})
		_, err := c.Users.Get(context.Background(), "u-1")
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != tt.status || ae.Reason != tt.body["reason"] || ae.Message != tt.body["error_message"] {
			t.Errorf("%d: err = %v", tt.status, err)
		}
		if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
			t.Errorf("%d: errors.Is(err, %v) = false", tt.status, tt.sentinel)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users/u-1": 1})
	}
}

func TestHTMLBadGateway(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: 1})
	page := "<html><body><h1>502 Bad Gateway</h1>" + strings.Repeat("x", 4000) + "</body></html>"
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/things", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testAPIHeaders(t, r)
		return rawResponder(502, "text/html", page)(r)
	})
	_, err := c.Things.ListPage(context.Background(), nil)
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *APIError", err)
	}
	if ae.StatusCode != 502 || ae.Reason != "" || len(ae.Body) != maxErrorBody || !strings.HasPrefix(string(ae.Body), "<html>") {
		t.Errorf("APIError = status %d reason %q body %d bytes", ae.StatusCode, ae.Reason, len(ae.Body))
	}
	if got, want := err.Error(), "management: GET /things: 502 Bad Gateway"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTransportErrorsRetriedWithoutURL(t *testing.T) {
	c, mt := setup(t, Config{MaxRetries: 2})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testQuery(t, r, "page=secret-page-token")
		return nil, errors.New("connection reset by peer")
	})
	_, err := c.Users.ListPage(context.Background(), &ListOptions{NextPage: usersPath + "?page=secret-page-token"})
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want *TransportError", err, err)
	}
	if te.Attempts != 3 || te.Method != "GET" || te.Path != "/users" {
		t.Errorf("TransportError = %+v, want 3 attempts of GET /users", *te)
	}
	if s := err.Error(); strings.Contains(s, "secret-page-token") || strings.Contains(s, "https://") || !strings.Contains(s, "connection reset") {
		t.Errorf("Error() = %q; want the cause without the URL", s)
	}
}

// A RoundTripper whose error wraps a *url.Error of its own (a service
// mesh, a tracing wrapper) shows the request URL in its text, the query
// with it: no error text, log record or hook argument holds it, every
// *url.Error layer gives way to its cause, and errors.Is and errors.As
// still reach the cause.
func TestTransportErrorsWithoutNestedURL(t *testing.T) {
	var hooked []string
	obs := &Observer{AttemptDone: func(_ context.Context, _ Operation, _ Attempt, r AttemptResult) {
		if r.Err != nil {
			hooked = append(hooked, r.Err.Error())
		}
	}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for name, wrap := range map[string]func(u string) error{
		"mesh": func(u string) error {
			return fmt.Errorf("mesh: upstream: %w", &url.Error{Op: "Get", URL: u, Err: refused})
		},
		"two wrappers": func(u string) error {
			return fmt.Errorf("trace: %w", fmt.Errorf("mesh: %w", &url.Error{Op: "Get", URL: u, Err: refused}))
		},
		"nested": func(u string) error {
			return &url.Error{Op: "Get", URL: u, Err: fmt.Errorf("mesh: %w", &url.Error{Op: "Get", URL: u, Err: refused})}
		},
		"joined": func(u string) error {
			return errors.Join(errors.New("mesh"), &url.Error{Op: "Get", URL: u, Err: refused})
		},
		"quoted": func(u string) error {
			return fmt.Errorf("mesh: %q: %w", (&url.Error{Op: "Get", URL: u, Err: refused}).Error(), refused)
		},
	} {
		logs := &logBuffer{}
		hooked = nil
		c, mt := setup(t, Config{MaxRetries: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond, Observer: obs,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testQuery(t, r, "page=secret-page-token")
			return nil, wrap(r.URL.String())
		})
		_, err := c.Users.ListPage(context.Background(), &ListOptions{NextPage: usersPath + "?page=secret-page-token"})
		var te *TransportError
		if !errors.As(err, &te) {
			t.Fatalf("%s: err = %v (%T), want *TransportError", name, err, err)
		}
		texts := append([]string{err.Error(), fmt.Sprintf("%+v", te.Err), logs.String()}, hooked...)
		for _, text := range texts {
			if strings.Contains(text, "secret-page-token") || strings.Contains(text, "?page") || strings.Contains(text, mockBaseURL) {
				t.Errorf("%s: the request URL in %q", name, text)
			}
		}
		if len(hooked) != 2 || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(logs.String(), "connection refused") {
			t.Errorf("%s: Error() = %q, hooks %q; want the cause in the error, each hook and the log", name, err, hooked)
		}
		var ue *url.Error
		var op *net.OpError
		if errors.As(err, &ue) || !errors.Is(err, syscall.ECONNREFUSED) || (name != "quoted" && !errors.As(err, &op)) {
			t.Errorf("%s: errors.As reaches a *url.Error: %v; errors.Is the cause: %v; errors.As the *net.OpError: %v",
				name, errors.As(err, &ue), errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &op))
		}
	}
}

func TestRetryAfterPastDeadlineReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMax: time.Minute})
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return httpmock.NewStringResponder(503, "").HeaderSet(http.Header{"Retry-After": {"30"}})(r)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Users.ListPage(ctx, nil)
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 {
			t.Fatalf("err = %v, want the last answer, *APIError 503", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("waited %v; want an immediate return, not a sleep into the deadline", waited)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 1})
	})
}

func TestContextCancelledStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMin: time.Second, RetryWaitMax: time.Second, MaxRetries: 10})
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testMethod(t, r, "GET")
			testAPIHeaders(t, r)
			return httpmock.NewStringResponse(503, ""), nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(2500 * time.Millisecond); cancel() }()
		_, err := c.Users.ListPage(ctx, nil)
		var te *TransportError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &te) || te.Path != "/users" || te.Attempts != 3 {
			t.Fatalf("err = %v, want a *TransportError of GET /users after 3 attempts wrapping context.Canceled", err)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 3}) // at 0, 1 and 2 s
	})
}

func TestRetryCarriesRefreshedToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{RetryWaitMax: time.Minute})
		ti := &tokenIssuer{lifetime: 600 * time.Second}
		mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
			testHeader(t, r, "Authorization", "Bearer tok-1")
			return pageOfUsers("")(r)
		})
		if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(585 * time.Second) // due for refresh; the retry at 605 s comes after tok-1 expired
		attempt := 0
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
			attempt++
			if attempt == 1 {
				testHeader(t, r, "Authorization", "Bearer tok-1")
				return httpmock.NewStringResponse(503, ""), nil
			}
			// The retry carries the refreshed token, not the expired one.
			testHeader(t, r, "Authorization", "Bearer tok-2")
			return jsonResponder(200, map[string]any{"id": "u-1"})(r)
		})
		if _, err := c.Users.Get(context.Background(), "u-1"); err != nil {
			t.Fatal(err)
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 2, "GET " + mockPrefix + "/users": 1, "GET " + mockPrefix + "/users/u-1": 2})
	})
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	withRetryAfter := func(status int, v string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {v}}}
	}
	min, max := 100*time.Millisecond, 2*time.Second
	if got := retryWait(min, max, 0, withRetryAfter(429, "1"), now); got != time.Second {
		t.Errorf("429 Retry-After 1 = %v", got)
	}
	if got := retryWait(min, max, 0, withRetryAfter(503, "120"), now); got != max {
		t.Errorf("Retry-After above the cap = %v, want %v", got, max)
	}
	if got := retryWait(min, max, 0, withRetryAfter(503, now.Add(-time.Hour).Format(http.TimeFormat)), now); got != min {
		t.Errorf("Retry-After in the past = %v, want RetryWaitMin %v", got, min)
	}
	if got := retryWait(min, max, 0, withRetryAfter(429, "0"), now); got != min {
		t.Errorf("Retry-After 0 = %v, want RetryWaitMin %v", got, min)
	}
	if got := retryWait(3*time.Second, 10*time.Second, 2, withRetryAfter(503, "1"), now); got != 3*time.Second {
		t.Errorf("Retry-After 1 below RetryWaitMin 3s = %v, want 3s", got)
	}
	if got := retryWait(min, max, 0, withRetryAfter(429, "2"), now); got != max {
		t.Errorf("Retry-After at the cap = %v, want %v", got, max)
	}
	for n := range 40 {
		ceiling := max
		if n < 5 {
			ceiling = min << n
		}
		for range 50 {
			got := retryWait(min, max, n, withRetryAfter(502, "1"), now) // Retry-After only on 429 and 503
			if got < min || got > ceiling {
				t.Fatalf("retry %d wait %v outside [%v, %v]", n, got, min, ceiling)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"99999999999999999", 24 * time.Hour, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRetryAfterBoundedByRetryWaits(t *testing.T) {
	tests := []struct {
		retryAfter string
		want       time.Duration
	}{
		{"0", 2 * time.Second},  // below RetryWaitMin: the shortest wait
		{"1", 2 * time.Second},  // idem
		{"5", 5 * time.Second},  // as announced
		{"90", 8 * time.Second}, // above RetryWaitMax: the longest wait
	}
	for _, tt := range tests {
		t.Run(tt.retryAfter, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, mt := setup(t, Config{RetryWaitMin: 2 * time.Second, RetryWaitMax: 8 * time.Second})
				answers := httpmock.NewStringResponder(429, "").HeaderSet(http.Header{"Retry-After": {tt.retryAfter}}).Once().Then(pageOfUsers(""))
				mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
					testMethod(t, r, "GET")
					testAPIHeaders(t, r)
					return answers(r)
				})
				start := time.Now()
				if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); waited != tt.want {
					t.Errorf("Retry-After %s: waited %v, want %v", tt.retryAfter, waited, tt.want)
				}
			})
		})
	}
}

// A retried PATCH carries its whole request again: body, length, headers.
func TestRetrySendsTheWholeRequestAgain(t *testing.T) {
	c, mt := setup(t)
	attempt := 0
	mt.RegisterResponder(http.MethodPatch, mockPrefix+"/things/p-1", func(r *http.Request) (*http.Response, error) {
		attempt++
		testMethod(t, r, "PATCH")
		testAPIHeaders(t, r)
		testHeader(t, r, "User-Agent", "management-go/"+Version)
		testBody(t, r, `{"name":"n"}`)
		if r.ContentLength != int64(len(`{"name":"n"}`)) {
			t.Errorf("attempt %d: ContentLength = %d", attempt, r.ContentLength)
		}
		if attempt == 1 {
			return httpmock.NewStringResponse(http.StatusServiceUnavailable, "busy"), nil
		}
		return jsonResponder(http.StatusOK, map[string]any{"physical_id": "p-1", "name": "n"})(r)
	})
	got, err := c.Things.Update(context.Background(), "p-1", ThingUpdate{Name: Ptr("n")})
	if err != nil || got.PhysicalID != "p-1" || got.Name != "n" {
		t.Fatalf("Update = %+v, %v; want the second attempt's Thing", got, err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "PATCH " + mockPrefix + "/things/p-1": 2})
}

// A connection failure that a retry cannot mend is not retried: those that
// retryablehttp's policy recognises in net/http's texts (an untrusted
// certificate, an unsupported scheme, a header net/http refused, a
// redirect loop) and a TLS verification failure a RoundTripper wrapped.
// Any other is.
func TestConnectionFailuresRetriedOrNot(t *testing.T) {
	for _, tc := range []struct {
		err      error
		attempts int
	}{
		{errors.New("tls: failed to verify certificate: x509: certificate is not trusted"), 1},
		{errors.New(`unsupported protocol scheme "ftp"`), 1},
		{errors.New(`net/http: invalid header field value for "X-Trace"`), 1},
		{errors.New("stopped after 10 redirects"), 1},
		{fmt.Errorf("proxy: %w", x509.UnknownAuthorityError{}), 1},
		{fmt.Errorf("proxy: %w", &tls.CertificateVerificationError{Err: errors.New("expired")}), 1},
		{fmt.Errorf("proxy: %w", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "h"}), 1},
		{errors.New("connection reset by peer"), 3},
	} {
		c, mt := setup(t, Config{MaxRetries: 2})
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", httpmock.NewErrorResponder(tc.err))
		_, err := c.Users.Get(t.Context(), "u-1")
		var te *TransportError
		if !errors.As(err, &te) || te.Attempts != tc.attempts {
			t.Errorf("%v: err = %v, want a *TransportError after %d attempt(s)", tc.err, err, tc.attempts)
		}
	}
}
