package otel_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	mgmtotel "github.com/serviceconnect/management/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// outageTransport is the service in memory: a management token, and the
// authenticate endpoint confirming every End User while up, answering 503
// while down.
type outageTransport struct{ down atomic.Bool }

func (o *outageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	status, body := http.StatusOK, `{"access_token":"mgmt-1","token_type":"Bearer","expires_in":600}`
	switch {
	case strings.HasSuffix(r.URL.Path, "/authenticate") && o.down.Load():
		status, body = http.StatusServiceUnavailable, `{"reason":"SERVICE.UNAVAILABLE","error_message":""}`
	case strings.HasSuffix(r.URL.Path, "/authenticate"):
		body = `{"is_token_valid":true,"user_id":"u-ada","user_role":"APPUSER","to_client_response":null}`
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// Stale passes are counted by management.authenticator.stale, apart from
// hits and misses, and the authenticate breaker's opening and closing by
// management.breaker with the attribute "authenticate".
func TestStaleAndAuthenticateBreakerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		svc := &outageTransport{}
		client, err := management.NewClient(management.Config{
			BaseURL: "https://mgmt.example", ClientID: "id-1", ClientSecret: "secret-1", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: svc},
			Observer:   mgmtotel.New(mgmtotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))),
		})
		if err != nil {
			t.Fatal(err)
		}
		auth := &management.Authenticator{Client: client, CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		check := func() *management.EndUser {
			t.Helper()
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Authorization", "Bearer eu-ada")
			u, err := auth.Check(r)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the call's outcome reported
			return u
		}
		sums := func() map[string]map[string]int64 {
			t.Helper()
			return sumsByBreaker(t, reader, "management.authenticator.", "management.breaker.")
		}
		check() // confirmed
		svc.down.Store(true)
		time.Sleep(11 * time.Second)
		for range 3 { // the third failure opens the breaker
			if u := check(); !u.Stale {
				t.Fatalf("check during the outage: %+v; want a stale pass", u)
			}
		}
		want := map[string]map[string]int64{
			"management.authenticator.misses":       {"": 1},
			"management.authenticator.stale":        {"": 3},
			"management.authenticator.calls.active": {"": 0},
			"management.breaker.open":               {"authenticate": 1},
			"management.breaker.openings":           {"authenticate": 1},
		}
		if diff := cmp.Diff(want, sums()); diff != "" {
			t.Errorf("during the outage (-want +got):\n%s", diff)
		}
		svc.down.Store(false)
		time.Sleep(2 * time.Second) // past the first cool-down
		check()                     // a stale pass; its call is the probe, which closes the breaker
		if u := check(); u.Stale {
			t.Errorf("check after recovery: %+v; want a fresh pass", u)
		}
		want["management.authenticator.stale"][""] = 4
		want["management.authenticator.hits"] = map[string]int64{"": 1}
		want["management.breaker.open"]["authenticate"] = 0
		if diff := cmp.Diff(want, sums()); diff != "" {
			t.Errorf("after recovery (-want +got):\n%s", diff)
		}
	})
}
