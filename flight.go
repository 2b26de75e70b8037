package management

import (
	"context"
	"time"
)

// flight is one call that any number of callers wait for, each only as long
// as its own context allows. It serves the token cache (one token request
// however many goroutines need a token) and the Authenticator (one
// authenticate call per End User token).
type flight[T any] struct {
	done chan struct{} // closed once val and err are set
	val  T
	err  error
}

// startFlight runs call in a goroutine of its own, detached from the
// cancellation of ctx (a caller that gives up does not fail the others)
// but bounded by timeout, and returns the flight to wait on. call does its
// own bookkeeping (storing its result under its owner's lock) before it
// returns: waiters are woken after that.
func startFlight[T any](ctx context.Context, timeout time.Duration, call func(context.Context) (T, error)) *flight[T] {
	f := &flight[T]{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		f.val, f.err = call(ctx)
	}()
	return f
}

// wait returns the flight's result, or ctx's error if ctx ends first.
func (f *flight[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
