package grpcauth

import (
	"context"
	"errors"
	"time"

	"github.com/serviceconnect/management"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The messages of the statuses that do not relay the service's.
const (
	msgMissing     = "An access token must be provided in the authorization metadata."
	msgInvalid     = "The access token is invalid."
	msgForbidden   = "This access token is not allowed here."
	msgUnavailable = "The access token could not be checked; try again later."
)

// Status returns the status an interceptor ends an RPC with when err, an
// error of management.Authenticator's CheckAuthorization, Check or
// Recheck, refuses it; nil when err is nil. It is the one table of codes,
// for code that answers a refusal itself (a Connect service's
// Authenticator.ErrorHandler, see the package's example):
//
//   - no token, a malformed one, several, or an invalid one
//     (management.ErrMissingToken, management.ErrInvalidToken):
//     codes.Unauthenticated, with the message the service gave to relay
//     (redacted of the token by the SDK) or a fixed one;
//   - a valid token of another role, such as a management token
//     (management.ErrForbiddenRole): codes.PermissionDenied;
//   - too many checks in flight, or over the miss budget
//     (management.ErrTooManyChecks, management.ErrOverMissBudget):
//     codes.ResourceExhausted;
//   - the service could not answer, or any other error
//     (management.ErrAuthenticationUnavailable): codes.Unavailable; when
//     the Authenticator holds its calls to the service for a cool-down
//     (a *management.AuthenticationUnavailableError), with a RetryInfo
//     detail (google.rpc.RetryInfo) of its RetryAfter, which gRPC clients
//     that honour it wait before they try again;
//   - the caller's context ended while the check waited: codes.Canceled or
//     codes.DeadlineExceeded, as status.FromContextError gives them.
//
// No message quotes the token or the cause of an outage, which the SDK
// logs through the Client's Logger.
func Status(err error) *status.Status {
	var invalid *management.InvalidTokenError
	var held *management.AuthenticationUnavailableError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, management.ErrMissingToken):
		return status.New(codes.Unauthenticated, msgMissing)
	case errors.As(err, &invalid):
		msg := msgInvalid
		if invalid.Response != nil && invalid.Response.HTTPBody.ErrorMessage != "" {
			msg = invalid.Response.HTTPBody.ErrorMessage
		}
		return status.New(codes.Unauthenticated, msg)
	case errors.Is(err, management.ErrInvalidToken):
		return status.New(codes.Unauthenticated, msgInvalid)
	case errors.Is(err, management.ErrForbiddenRole):
		return status.New(codes.PermissionDenied, msgForbidden)
	case errors.Is(err, management.ErrTooManyChecks), errors.Is(err, management.ErrOverMissBudget):
		return status.New(codes.ResourceExhausted, msgUnavailable)
	case errors.As(err, &held):
		return retryAfter(status.New(codes.Unavailable, msgUnavailable), held.RetryAfter)
	case errors.Is(err, management.ErrAuthenticationUnavailable):
		// Before the context's errors: a check that outlived
		// Authenticator.Timeout is an outage, not the caller's deadline.
		return status.New(codes.Unavailable, msgUnavailable)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err)
	}
	return status.New(codes.Unavailable, msgUnavailable)
}

// retryAfter returns st with a RetryInfo detail of d; st as it is should
// the detail not marshal (it always does).
func retryAfter(st *status.Status, d time.Duration) *status.Status {
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)}); err == nil {
		return withInfo
	}
	return st
}

// refusal is the status error of err, a refusal of the RPC of ctx: when
// ctx has ended, the caller gave up, whatever the check came to.
func refusal(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return Status(err).Err()
}
