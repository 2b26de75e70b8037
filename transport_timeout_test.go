package management

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// stallingBody is a 200 answer's body that sends nothing until its
// request's context ends.
type stallingBody struct{ ctx context.Context }

func (b stallingBody) Read([]byte) (int, error) { <-b.ctx.Done(); return 0, b.ctx.Err() }
func (b stallingBody) Close() error             { return nil }

// TestHTTPClientTimeoutBoundsEachAttempt: the Timeout of Config.HTTPClient
// bounds each attempt, and not the call: an attempt whose answer does not
// come within it fails and is retried. The caller's client keeps its Timeout.
func TestHTTPClientTimeoutBoundsEachAttempt(t *testing.T) {
	const timeout = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		mt := httpmock.NewMockTransport()
		var attempts atomic.Int32
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
			if attempts.Add(1) > 1 {
				return httpmock.NewStringResponse(http.StatusOK, `{"id":"u-1"}`), nil
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		hc := &http.Client{Transport: mt, Timeout: timeout}
		c, err := NewClient(Config{
			BaseURL: mockBaseURL, TokenSource: staticSource(mockToken), HTTPClient: hc,
			RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		u, err := c.Users.Get(context.Background(), "u-1")
		if err != nil || u.ID != "u-1" {
			t.Fatalf("Get = %+v, %v; want u-1 on the second attempt", u, err)
		}
		if got, want := time.Since(start), timeout+time.Millisecond; got != want || attempts.Load() != 2 {
			t.Errorf("%d attempts in %v; want 2 in %v (the first ended by the Timeout)", attempts.Load(), got, want)
		}
		if hc.Timeout != timeout {
			t.Errorf("the caller's HTTPClient.Timeout became %v", hc.Timeout)
		}
	})
}

// TestHTTPClientTimeoutBoundsTheBody: the Timeout covers reading the
// answer's body, as http.Client.Timeout does: a body that stalls fails the
// call at the Timeout with a *DecodeError (a 200 came back; it is not retried).
func TestHTTPClientTimeoutBoundsTheBody(t *testing.T) {
	const timeout = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		mt := httpmock.NewMockTransport()
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(http.StatusOK, "")
			resp.Body = stallingBody{r.Context()}
			return resp, nil
		})
		c, err := NewClient(Config{
			BaseURL: mockBaseURL, TokenSource: staticSource(mockToken),
			HTTPClient: &http.Client{Transport: mt, Timeout: timeout},
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.Users.Get(context.Background(), "u-1")
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get = %v; want a *DecodeError matching context.DeadlineExceeded", err)
		}
		if got := time.Since(start); got != timeout {
			t.Errorf("failed after %v, want %v", got, timeout)
		}
	})
}

// TestHTTPClientTimeoutEveryAttempt: when every attempt stalls, each ends
// at the Timeout and the call fails with a *TransportError that matches
// context.DeadlineExceeded, after MaxRetries+1 attempts.
func TestHTTPClientTimeoutEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mt := httpmock.NewMockTransport()
		var attempts atomic.Int32
		mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
			attempts.Add(1)
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		c, err := NewClient(Config{
			BaseURL: mockBaseURL, TokenSource: staticSource(mockToken),
			HTTPClient: &http.Client{Transport: mt, Timeout: time.Second},
			MaxRetries: 2, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.Users.Get(context.Background(), "u-1")
		var te *TransportError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get = %v; want a *TransportError matching context.DeadlineExceeded", err)
		}
		if got, want := time.Since(start), 3*time.Second+2*time.Millisecond; got != want || attempts.Load() != 3 {
			t.Errorf("%d attempts in %v; want 3 in %v", attempts.Load(), got, want)
		}
	})
}
