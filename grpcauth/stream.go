package grpcauth

import (
	"context"
	"sync/atomic"

	"github.com/serviceconnect/management"
	"google.golang.org/grpc"
)

// stream is a stream whose End User was let through when it opened, and
// whose verdict is read again on each message (see StreamServerInterceptor).
type stream struct {
	grpc.ServerStream
	ctx     context.Context // the handler's: checked, canceled by a refusal
	cancel  context.CancelCauseFunc
	checked context.Context // CheckAuthorization's: what Recheck reads
	a       *management.Authenticator
	// refused is the status error of the first refusal. RecvMsg and
	// SendMsg may run at once, in two goroutines.
	refused atomic.Pointer[error]
}

func newStream(ss grpc.ServerStream, a *management.Authenticator, checked context.Context) *stream {
	ctx, cancel := context.WithCancelCause(checked)
	return &stream{ServerStream: ss, ctx: ctx, cancel: cancel, checked: checked, a: a}
}

// Context returns the handler's context, with the End User in it.
func (s *stream) Context() context.Context { return s.ctx }

// RecvMsg receives a message and delivers it if the token is still let
// through.
func (s *stream) RecvMsg(m any) error {
	if r := s.refused.Load(); r != nil {
		return *r
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.recheck()
}

// SendMsg sends a message if the token is still let through.
func (s *stream) SendMsg(m any) error {
	if err := s.recheck(); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

// recheck returns nil while the stream's token is let through; otherwise
// the refusal's status error, the same from then on, having ended the
// handler's context.
func (s *stream) recheck() error {
	if r := s.refused.Load(); r != nil {
		return *r
	}
	err := s.a.Recheck(s.checked)
	if err == nil {
		return nil
	}
	// A variable of its own: the one whose address is kept would escape,
	// an allocation on every message.
	r := refusal(s.checked, err)
	if s.refused.CompareAndSwap(nil, &r) {
		s.cancel(r)
	}
	return *s.refused.Load()
}
