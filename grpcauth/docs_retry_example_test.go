package grpcauth_test

// docs/grpc.md's client that reads the retry delay, exactly as the guide
// shows it (the SDK's TestReadmeSnippetsAreExamples checks that), and the
// test that runs it over a real connection.

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// waitBeforeRetry returns how long the server asked the client to wait
// before it sends the RPC that failed with err again (a
// google.rpc.RetryInfo detail), and whether it asked.
func waitBeforeRetry(err error) (time.Duration, bool) {
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// TestWaitBeforeRetry: once the breaker holds the calls to a service that
// answers 503, a client reads from the refused RPC's error the rest of the
// cool-down (about 1 s); a refusal without the detail, and no error, give
// no delay.
func TestWaitBeforeRetry(t *testing.T) {
	r := newRig(t, rigConfig{config: func(cfg *management.Config) { cfg.MaxRetries = -1 }}) // one 503 per call
	r.fake.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
	var d time.Duration
	var asked bool
	for range 4 { // 3 calls in a row without an answer open the breaker
		_, err := r.client().UnaryCall(with(r.ctx, r.token()), &testgrpc.SimpleRequest{})
		if st := r.status(err); st.Code() != codes.Unavailable {
			t.Fatalf("the service down: %v; want Unavailable", st.Code())
		}
		if d, asked = waitBeforeRetry(err); asked {
			break
		}
	}
	if !asked || d < 500*time.Millisecond || d > 2*time.Second {
		t.Errorf("with the breaker open: waitBeforeRetry = %v, %t; want the cool-down of about 1s", d, asked)
	}
	_, err := r.client().UnaryCall(r.ctx, &testgrpc.SimpleRequest{}) // no token
	if d, asked := waitBeforeRetry(err); status.Code(err) != codes.Unauthenticated || asked {
		t.Errorf("without a token: %v, waitBeforeRetry = %v, %t; want Unauthenticated and no delay", err, d, asked)
	}
	if d, asked := waitBeforeRetry(nil); asked {
		t.Errorf("waitBeforeRetry(nil) = %v, true; want no delay", d)
	}
}
