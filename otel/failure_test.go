package otel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/serviceconnect/management"
)

// error.type names each kind of failure without an answer, through the
// wrapping the SDK adds, with few values: never an error's text.
func TestFailureType(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("GET /users/u-ada: %w", &net.OpError{Op: "dial", Net: "tcp", Err: err})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wrap(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection_refused"},
		{wrap(os.NewSyscallError("read", syscall.ECONNRESET)), "connection_reset"},
		{fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF), "connection_closed"},
		{wrap(&net.DNSError{Err: "no such host", Name: "api.example.com", IsNotFound: true}), "name_resolution_error"},
		{fmt.Errorf("attempt: %w", context.DeadlineExceeded), "timeout"},
		{wrap(&timeoutError{}), "timeout"},
		{fmt.Errorf("attempt: %w", context.Canceled), "canceled"},
		{&management.DecodeError{}, "*management.DecodeError"},
		{errors.New("u-ada: something else"), "*errors.errorString"},
	} {
		if got := failureType(tc.err); got != tc.want {
			t.Errorf("failureType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }
