package management

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// flight is one call that any number of callers wait for, each only as long
// as its own context allows. It serves the token cache (one token request
// however many goroutines need a token) and the Authenticator (one
// authenticate call per End User token).
type flight[T any] struct {
	done    chan struct{} // closed once val and err are set
	settled atomic.Bool   // set by the first to settle: the call, or the abandon timer
	val     T
	err     error
	// started is the starter's context, origin its operation's mark: the
	// other operations that wait are reported to their Observer.
	started context.Context
	origin  *operationMark
}

// flightHost is what a flight needs of its owner to contain the code it
// hosts (a RoundTripper, a TokenSource, a SharedStore, Observer hooks),
// which runs in the flight's goroutine, where no caller's recover reaches.
type flightHost struct {
	what   string       // names the call in errors and logs: "End User token check"
	logger *slog.Logger // nil: discards
	// redactor returns the redactor of the credentials the call handles,
	// for a panic's value; nil: a redactor of none.
	redactor func() *redactor
	// sentinel is wrapped by the error of a call that panicked or outlived
	// its timeout (ErrAuthenticationUnavailable for a check); nil: none.
	sentinel error
}

// abandonGrace is how long a flight waits, past its timeout, for a call
// that is returning before it leaves it behind.
const abandonGrace = 100 * time.Millisecond

// startFlight runs call in a goroutine of its own, detached from the
// cancellation of ctx (a caller that gives up does not fail the others)
// but bounded by timeout, and returns the flight to wait on.
//
// The flight fails closed: when call panics, its waiters get an error (the
// panic is logged once, at Error, with its stack and its value redacted),
// never a zero value and a nil error, and the process lives on; when call
// outlives timeout (code that ignores its context), its waiters get an
// error at the timeout and call is left behind, logged. Either way finish,
// when not nil, records the outcome under its owner's lock before the
// waiters are woken, and must not call hosted code there: what it returns
// (nil for nothing) runs once they are woken, and may (it logs). release,
// when not nil, runs once call's goroutine has returned, however late, so
// that an owner can bound the calls still running.
//
// The result is published (the waiters woken) before anything that calls
// hosted code after call returns: the Logger, which may panic or block,
// cannot keep a waiter. A panic of that code is contained too (see
// contain).
//
// One goroutine per flight: the call's own, which settles the flight when
// call returns or panics. Only a call that outlives timeout is settled
// from elsewhere, by a timer armed for timeout plus abandonGrace and
// stopped when call returns; whichever settles first wins.
func startFlight[T any](ctx context.Context, h flightHost, timeout time.Duration, call func(context.Context) (T, error),
	finish func(context.Context, T, error) (report func()), release func()) *flight[T] {
	f := &flight[T]{done: make(chan struct{}), started: ctx, origin: markOf(ctx)}
	// WithoutCancel drops ctx's deadline too: the call's deadline is
	// exactly timeout from now, so the abandon timer needs no context.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	abandon := time.AfterFunc(timeout+abandonGrace, func() {
		defer h.contain(ctx) // the logs below: a Logger may panic
		if !f.claim() {
			return // not logged when the call won the race
		}
		var zero T
		report := f.settle(ctx, finish, zero, h.abandoned(ctx))
		h.logAbandoned(ctx)
		runReport(report)
	})
	go func() {
		defer cancel()
		if release != nil {
			defer release()
		}
		defer h.contain(ctx) // a panic once the result is published: of finish's report, a Logger's
		returned := false
		defer func() {
			if returned {
				return // a panic, if any, is not call's: contain's
			}
			p := recover()
			if p == nil {
				return
			}
			abandon.Stop()
			var report func()
			if f.claim() {
				var zero T
				report = f.settle(ctx, finish, zero, h.panicked())
			}
			h.logPanic(ctx, p, panicFailed) // logged even when abandoned: the panic is news
			runReport(report)
		}()
		v, err := call(ctx)
		returned = true
		abandon.Stop()
		if f.claim() {
			runReport(f.settle(ctx, finish, v, err))
		}
	}()
	return f
}

// claim reports whether the caller is the first to settle the flight: the
// call returning (or panicking), or the abandon timer.
func (f *flight[T]) claim() bool {
	return f.settled.CompareAndSwap(false, true)
}

// settle sets the flight's outcome, has finish record it and wakes the
// waiters; it returns what finish left to run once they are woken. Only
// the one that claimed the flight settles it.
func (f *flight[T]) settle(ctx context.Context, finish func(context.Context, T, error) func(), v T, err error) (report func()) {
	f.val, f.err = v, err
	if finish != nil {
		report = finish(ctx, v, err)
	}
	close(f.done)
	return report
}

// runReport runs the report a flight's finish left, if any.
func runReport(report func()) {
	if report != nil {
		report()
	}
}

// contain, deferred in a goroutine the SDK starts, recovers a panic of the
// hosted code it runs (a Logger's included) and logs it: no hosted code
// kills the process from a goroutine of the SDK's own.
func (h flightHost) contain(ctx context.Context) {
	if p := recover(); p != nil {
		h.logPanic(ctx, p, panicContained)
	}
}

// The records of a panic of hosted code: of a call, whose callers get an
// error, and of what runs around it in the background (a Logger's, a
// write-back's), whose callers are not affected.
const (
	panicFailed    = "management: code hosted by the SDK panicked; its callers get an error"
	panicContained = "management: code hosted by the SDK panicked in the background; the SDK goes on"
)

// panicked is the waiters' error for a call that panicked.
func (h flightHost) panicked() error {
	if h.sentinel != nil {
		return errorf("%w: %w", h.sentinel, hostedPanic(h.what))
	}
	return errorf("%w", hostedPanic(h.what))
}

// hostedPanic is the error of a call whose hosted code panicked, naming
// the call: a bug of that code, not an outage of the service (see
// unreachable).
type hostedPanic string

// Error names the call and says the panic was logged, never its value:
// the value may hold what the hosted code held, a credential included.
func (p hostedPanic) Error() string { return "the " + string(p) + " panicked (logged)" }

// logPanic logs a panic of hosted code as msg, once, at Error, with its
// value redacted and the stack it was raised on (called from the
// recovering function, whose stack still holds the panicking frames). A
// panic while logging it (of the Logger, or of the value's String method)
// is dropped: there is no one left to tell.
func (h flightHost) logPanic(ctx context.Context, p any, msg string) {
	defer dropPanic()
	if h.logger == nil || !h.logger.Enabled(ctx, slog.LevelError) {
		return // no stack taken for a Logger that discards
	}
	r := &redactor{}
	if h.redactor != nil {
		r = h.redactor()
	}
	h.logger.LogAttrs(ctx, slog.LevelError, msg, slog.String("call", h.what), slog.String("panic", r.panicText(p)), slog.String("stack", string(debug.Stack())))
}

// dropPanic, deferred, drops a panic.
func dropPanic() { _ = recover() }

// abandoned is the waiters' error for a call that outlived its deadline.
func (h flightHost) abandoned(ctx context.Context) error {
	if h.sentinel != nil {
		return errorf("%w: the %s did not end by its deadline: %w", h.sentinel, h.what, ctx.Err())
	}
	return errorf("the %s did not end by its deadline: %w", h.what, ctx.Err())
}

// logAbandoned logs a call left running past its deadline.
func (h flightHost) logAbandoned(ctx context.Context) {
	if h.logger != nil {
		h.logger.LogAttrs(ctx, slog.LevelWarn, "management: a call ignored its deadline; its callers were answered, the call is left running",
			slog.String("call", h.what))
	}
}

// wait returns the flight's result, or ctx's error if ctx ends first.
func (f *flight[T]) wait(ctx context.Context) (T, error) {
	joined(ctx, f.started, f.origin)
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
