package grpcauth_test

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// retryDelay returns the delay of st's RetryInfo detail, and whether it
// has one.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// A check refused while the Authenticator holds its calls to the service
// is Unavailable with the rest of the cool-down as a RetryInfo, wrapped or
// not; other refusals carry no detail.
func TestStatusRetryInfo(t *testing.T) {
	held := &management.AuthenticationUnavailableError{RetryAfter: 2500 * time.Millisecond, Err: errors.New("calls held")}
	for _, err := range []error{held, fmt.Errorf("checking: %w", held)} {
		st := grpcauth.Status(err)
		if d, ok := retryDelay(st); st.Code() != codes.Unavailable || st.Message() != wantUnavailable || !ok || d != 2500*time.Millisecond {
			t.Errorf("Status(%v) = %v %q, RetryInfo %v (%t); want Unavailable %q with a RetryInfo of 2.5s", err, st.Code(), st.Message(), d, ok, wantUnavailable)
		}
	}
	for _, err := range []error{
		fmt.Errorf("%w: 503", management.ErrAuthenticationUnavailable),
		management.ErrTooManyChecks,
		management.ErrInvalidToken,
	} {
		if st := grpcauth.Status(err); len(st.Details()) != 0 {
			t.Errorf("Status(%v) has details %v; want none", err, st.Details())
		}
	}
}

// While the service answers 503: a token the service confirmed within
// StaleIfError reaches the handler, its End User marked Stale; a token
// never confirmed is refused Unavailable, and once the breaker holds the
// calls, at once and with the rest of the cool-down as a RetryInfo.
func TestUnaryDuringAnOutage(t *testing.T) {
	const ttl = 50 * time.Millisecond
	r := newRig(t, rigConfig{
		config: func(cfg *management.Config) { cfg.MaxRetries = -1 }, // one 503 per call
		auth:   func(a *management.Authenticator) { a.CacheTTL, a.StaleIfError = ttl, time.Minute },
	})
	confirmed := with(r.ctx, r.token())
	if _, err := r.client().UnaryCall(confirmed, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	if u := r.svc.last.Load(); u == nil || u.Stale {
		t.Fatalf("the service up: the handler found %+v; want a fresh End User", u)
	}
	time.Sleep(ttl) // the verdict expires: the next check asks the service
	r.fake.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)

	res, err := r.client().UnaryCall(confirmed, &testgrpc.SimpleRequest{})
	if err != nil || res.GetUsername() != "u-ada" {
		t.Fatalf("a confirmed token, the service down: %v, %v; want u-ada let through", res, err)
	}
	if u := r.svc.last.Load(); *u != (management.EndUser{ID: "u-ada", Role: management.RoleAppUser, Stale: true}) {
		t.Errorf("the handler found %+v; want u-ada, Stale", *u)
	}

	never := with(r.ctx, r.token())
	handled := r.svc.handled.Load()
	var st *status.Status
	for range 4 { // 3 calls in a row without an answer open the breaker
		_, err := r.client().UnaryCall(never, &testgrpc.SimpleRequest{})
		if st = r.status(err); st.Code() != codes.Unavailable || st.Message() != wantUnavailable {
			t.Fatalf("a token never confirmed: %v %q; want Unavailable %q", st.Code(), st.Message(), wantUnavailable)
		}
		if _, ok := retryDelay(st); ok {
			break
		}
	}
	if d, ok := retryDelay(st); !ok || d < 500*time.Millisecond || d > 2*time.Second {
		t.Errorf("with the breaker open: RetryInfo %v (%t); want the cool-down of about 1s", d, ok)
	}
	if got := r.svc.handled.Load() - handled; got != 0 {
		t.Errorf("%d refused RPCs reached the handler", got)
	}
	if !strings.Contains(r.logs.String(), "Stale") {
		t.Errorf("the Client's log says nothing of the stale pass:\n%s", r.logs.String())
	}
}

// An open stream whose verdict expired during an outage goes on while the
// service's last confirmation is within StaleIfError (the handler's
// context keeps the End User of the opening check, Stale false); without
// it, the next message ends the stream Unavailable.
func TestStreamDuringAnOutage(t *testing.T) {
	const ttl = 50 * time.Millisecond
	for _, grace := range []time.Duration{time.Minute, 0} {
		r := newRig(t, rigConfig{
			config: func(cfg *management.Config) { cfg.MaxRetries = -1 },
			auth:   func(a *management.Authenticator) { a.CacheTTL, a.StaleIfError = ttl, grace },
		})
		duplex := r.duplex(with(r.ctx, r.token()))
		time.Sleep(ttl) // the verdict expires: the next message checks the token again
		r.fake.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
		if grace == 0 {
			_, err := exchange(duplex)
			r.wantStatus("without StaleIfError, the service down", err, codes.Unavailable, wantUnavailable)
			continue
		}
		for i := range 5 { // past the breaker's 3 calls: the stream needs none
			if user, err := exchange(duplex); err != nil || user != "u-ada" {
				t.Fatalf("message %d, the service down: %q, %v; want the stream to go on", i, user, err)
			}
		}
		// A new stream of a token never confirmed is refused at once.
		d, err := r.client().FullDuplexCall(with(r.ctx, r.token()))
		if err == nil {
			_, err = exchange(d)
		}
		if st := r.status(err); st.Code() != codes.Unavailable {
			t.Errorf("a new stream, a token never confirmed: %v; want Unavailable", st.Code())
		}
	}
}
