package grpcauth_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/grpcauth"
	"google.golang.org/grpc/codes"
)

// The table of codes, for every error Check, CheckAuthorization and
// Recheck return.
func TestStatus(t *testing.T) {
	relayed := &management.InvalidTokenError{Response: &management.ClientResponse{HTTPCode: 401,
		HTTPBody: management.ClientErrorBody{ErrorCode: 401, Reason: "auth.session_expired", ErrorMessage: "Session expired"}}}
	for _, tc := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{management.ErrMissingToken, codes.Unauthenticated, wantMissing},
		{relayed, codes.Unauthenticated, "Session expired"},
		{fmt.Errorf("wrapped: %w", relayed), codes.Unauthenticated, "Session expired"},
		{&management.InvalidTokenError{}, codes.Unauthenticated, wantInvalid},
		{&management.InvalidTokenError{Response: &management.ClientResponse{HTTPCode: 401}}, codes.Unauthenticated, wantInvalid},
		{fmt.Errorf("%w: with no detail", management.ErrInvalidToken), codes.Unauthenticated, wantInvalid},
		{fmt.Errorf("%w: %q", management.ErrForbiddenRole, "SERVICE_ACCOUNT"), codes.PermissionDenied, wantForbidden},
		{management.ErrTooManyChecks, codes.ResourceExhausted, wantUnavailable},
		{management.ErrOverMissBudget, codes.ResourceExhausted, wantUnavailable},
		{fmt.Errorf("%w: 503 SERVICE.UNAVAILABLE at https://api.example.com", management.ErrAuthenticationUnavailable), codes.Unavailable, wantUnavailable},
		// The check's own Timeout passed: an outage, not the caller's deadline.
		{fmt.Errorf("%w: %w", management.ErrAuthenticationUnavailable, context.DeadlineExceeded), codes.Unavailable, wantUnavailable},
		{fmt.Errorf("waiting for the End User token check: %w", context.Canceled), codes.Canceled, "waiting for the End User token check: context canceled"},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded"},
		{management.ErrInvalidArgument, codes.Unavailable, wantUnavailable},
		{errors.New("something else"), codes.Unavailable, wantUnavailable},
	} {
		st := grpcauth.Status(tc.err)
		if st.Code() != tc.code || st.Message() != tc.msg {
			t.Errorf("Status(%v) = %v %q; want %v %q", tc.err, st.Code(), st.Message(), tc.code, tc.msg)
		}
	}
	if st := grpcauth.Status(nil); st != nil {
		t.Errorf("Status(nil) = %v; want nil", st)
	}
}
