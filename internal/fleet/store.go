// Package fleet is the machinery by which the replicas of a service share
// what they fetch through a store (the root package's SharedStore): the
// Guard that bounds every operation on the store (a timeout, a bound on
// the operations running, a Breaker, a budget per call), the lease by
// which one replica produces a value while the others wait for it, and the
// Sealer that names the keys and seals the values.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Store is a key-value store shared by the replicas of a service, as the
// root package's SharedStore documents it (which satisfies it).
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Delete(ctx context.Context, key string) error
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context) error, ok bool, err error)
}

// MaxCalls bounds the store operations of a Guard running at once,
// abandoned ones (past the timeout) included: beyond it, an operation
// fails at once rather than start, so a store that hangs holds at most this
// many goroutines, however many calls meet it. A store answering in a
// millisecond reaches it only past a hundred thousand operations a second.
const MaxCalls = 128

// ErrBusy is an operation refused because MaxCalls are running; like any
// store failure, the caller goes on without the store.
var ErrBusy = fmt.Errorf("shared store: %d calls running (abandoned ones included), not starting another", MaxCalls)

// ErrSkipped is an operation the Guard did not start: its Breaker is open,
// or the call's budget of store time is spent. The caller goes on without
// the store, as it does after a failure.
var ErrSkipped = errors.New("shared store: left alone for now (failing recently, or this call's time for it is spent)")

// Guard bounds every operation on the stores of one Client, whatever the
// store does with its context (go-redis, for one, ignores the deadline on
// socket reads unless told otherwise): an operation that overruns its time
// is abandoned, its error is the deadline's, and it finishes in the
// background, counted, within MaxCalls. Breaker judges the store by what
// each operation did in its own time (see do); a Client then goes on
// without its stores for a cool-down. Leases is the Breaker of the waits
// on other replicas' leases (see Await). Set the fields before the first
// use.
type Guard struct {
	// Timeout bounds one operation (Config.SharedStoreTimeout).
	Timeout time.Duration
	Breaker *Breaker
	Leases  *Breaker
	// Panicked returns the error of an operation that panicked, which its
	// caller gets; LogPanic then logs the panic (hosted code: after the
	// caller has its error). callerFailed is false for a panic of the code
	// that runs around the store in a goroutine of the SDK's (a Logger or
	// an Observer told of the Breaker: see Shared.Contain, Guard.probe),
	// whose callers are not affected. Both are required.
	Panicked func() error
	LogPanic func(ctx context.Context, p any, callerFailed bool)

	running   atomic.Int64 // operations running, abandoned ones included; <= MaxCalls
	abandoned atomic.Int64 // operations abandoned in all
	polls     pollTurns    // the rounds of the waits on leases (see Await)
}

// Running returns the operations running, abandoned ones included.
func (g *Guard) Running() int64 { return g.running.Load() }

// Abandoned returns the operations abandoned so far.
func (g *Guard) Abandoned() int64 { return g.abandoned.Load() }

// PollingKeys returns the number of keys whose waits are being spaced.
func (g *Guard) PollingKeys() int {
	g.polls.mu.Lock()
	defer g.polls.mu.Unlock()
	return len(g.polls.keys)
}

// forced is the context key of an operation that the Breaker must let
// through (see Forced).
type forced struct{}

// Forced returns ctx whose store operations run whatever the Breaker's
// state (see Breaker.Force): a sign-out must at least try to reach the
// fleet.
func Forced(ctx context.Context) context.Context { return context.WithValue(ctx, forced{}, true) }

// do runs op on the store, unless the Breaker or the call's budget refuses
// it (ErrSkipped) or MaxCalls are running (ErrBusy). The caller waits for
// it at most the Guard's Timeout, what is left of the call's budget (see
// WithBudget) and what its Hurry asks, and gets op's result, or an error
// matching context.DeadlineExceeded once that time passes (ctx's error
// once ctx ends), abandoning op. A panic of op is its error, logged.
//
// The Breaker judges the store, not the caller's patience nor the host's
// load: op has Judged from its start (twice the Guard's Timeout), whatever
// its caller waits (an op abandoned runs on in the background, no longer
// tied to ctx), and its outcome is what the store did in that time. An
// answer within it, however slow and however long after its caller left,
// is a success: on a busy host, an answer may reach the replica late, its
// reader waiting for the CPU. A store error, or no answer in that time, is
// a failure; an op whose caller's context ended while it waited says
// nothing. When the Breaker lets op through as
// its probe, probe (a read of op's key) runs instead, in the background
// (see Guard.probe), and the caller goes on without the store: no caller
// waits on a store that may still hang.
//
// orphan, when not nil, gets what an abandoned op returns without an
// error, once it returns: what no caller will use, such as a lease taken
// too late, to undo.
func do[T any](ctx context.Context, g *Guard, probe func(context.Context) error, op func(context.Context) (T, error), orphan func(T)) (T, error) {
	var zero T
	b := budgetOf(ctx)
	wait := g.Timeout
	var hurry *Hurry
	if b != nil {
		wait = min(wait, b.Left())
		hurry = b.hurry
		if wait <= 0 {
			return zero, ErrSkipped
		}
	}
	t, ok := g.Breaker.Force(), true
	if f, _ := ctx.Value(forced{}).(bool); !f {
		t, ok = g.Breaker.Allow()
	}
	if !ok {
		return zero, ErrSkipped
	}
	if t.probe {
		g.probe(ctx, t, probe)
		return zero, ErrSkipped
	}
	if g.running.Add(1) > MaxCalls {
		g.running.Add(-1)
		t.Abstained()
		return zero, ErrBusy
	}
	start := time.Now()
	v, err := run(ctx, g, wait, hurry, t, op, orphan)
	if b != nil {
		b.spend(time.Since(start))
	}
	return v, err
}

// probe sends op to the store as t, the Breaker's probe, in a goroutine of
// its own, bounded by the Guard's Timeout: the caller does not wait for
// it. Its success closes the Breaker, its failure opens it for longer.
// Telling the Breaker runs hosted code (its OnChange logs and tells the
// Observer), contained there.
func (g *Guard) probe(ctx context.Context, t Ticket, op func(context.Context) error) {
	if op == nil || g.running.Add(1) > MaxCalls {
		if op != nil {
			g.running.Add(-1)
		}
		t.Abstained()
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				g.LogPanic(ctx, p, false)
			}
		}()
		_, _ = run(ctx, g, g.Judged(), nil, t, func(ctx context.Context) (struct{}, error) { return struct{}{}, op(ctx) }, nil)
	}()
}

// Judged is how long after its start an operation is judged (see do): an
// answer by then is the store answering, none a failure. Its callers wait
// for it at most the Guard's Timeout, so that a hung store costs each of
// them that long, and the Breaker opens once the operations started in
// the store's first Judged have failed.
func (g *Guard) Judged() time.Duration { return 2 * g.Timeout }

// judgement is the Breaker's verdict on one operation, given once, by
// whichever sees first how the operation went: its goroutine when it
// returns, its caller when the operation's context ended while it waited,
// or a timer at the end of the operation's time, once its caller left.
type judgement struct {
	t    Ticket
	once atomic.Bool
	cut  atomic.Bool // the caller's context ended while it waited: no news of the store
}

// answered judges an operation that returned err (within its time, unless
// opCtx has ended).
func (j *judgement) answered(ctx, opCtx context.Context, err error) {
	switch {
	case !j.once.CompareAndSwap(false, true):
	case err == nil:
		j.t.Succeeded(ctx)
	case opCtx.Err() != nil && j.cut.Load():
		j.t.Abstained()
	default:
		j.t.Failed(ctx, err)
	}
}

// timedOut judges an operation whose time (opCtx) ended before it
// returned.
func (j *judgement) timedOut(ctx, opCtx context.Context) {
	switch {
	case !j.once.CompareAndSwap(false, true):
	case j.cut.Load() || !errors.Is(opCtx.Err(), context.DeadlineExceeded):
		j.t.Abstained()
	default:
		j.t.Failed(ctx, fmt.Errorf("shared store: no answer in time: %w", opCtx.Err()))
	}
}

// run runs op, judged as t, in a goroutine of its own with a context that
// ends after Judged (or when ctx ends while the caller waits), and returns
// its result, or an error once the caller stops waiting: after wait (at
// most the Guard's Timeout), once ctx ends, or once hurry asks the
// caller's result by a time that has come. The caller judges an op it waited for
// (after it has the result: the Breaker's OnChange is hosted code); the
// op's goroutine, or a timer at the end of its time, one it left. orphan:
// see do.
func run[T any](ctx context.Context, g *Guard, wait time.Duration, hurry *Hurry, t Ticket, op func(context.Context) (T, error), orphan func(T)) (T, error) {
	parent := ctx
	j := &judgement{t: t}
	// The op's own time, which its caller's leaving does not shorten: a
	// store that honours its context still ends an abandoned op then.
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.Judged())
	// While its caller waits, the op ends with the caller's context.
	unfollow := context.AfterFunc(parent, func() {
		defer g.contain(parent) // nothing here panics; listed as every goroutine is
		j.cut.Store(true)
		cancel()
	})
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	// claimed is set by whichever comes first: op's goroutine, once done
	// holds its result, or the caller abandoning op.
	var claimed atomic.Bool
	left := func(err error) { // the caller left op: judged here, contained
		defer g.contain(parent)
		j.answered(parent, opCtx, err)
	}
	go func() {
		defer g.running.Add(-1)
		defer cancel() // a store that honours its context may yet end an abandoned call early
		defer func() {
			if p := recover(); p != nil {
				err := g.Panicked()
				done <- result{err: err} // the caller first: what follows is hosted code
				if !claimed.CompareAndSwap(false, true) {
					left(err)
				}
				g.LogPanic(opCtx, p, true)
			}
		}()
		v, err := op(opCtx)
		done <- result{v, err}
		if !claimed.CompareAndSwap(false, true) {
			left(err)
			if err == nil && orphan != nil {
				orphan(v) // still counted in running, as the call it undoes was
			}
		}
	}()
	var moved <-chan struct{}
	if hurry != nil {
		_, _, moved = hurry.state()
	}
	var hurried <-chan time.Time
	timer := time.NewTimer(min(wait, g.Timeout))
	defer timer.Stop()
	limit := timer.C
	hurriedAway := false
wait:
	for {
		select {
		case r := <-done:
			unfollow()
			j.answered(parent, opCtx, r.err)
			return r.v, r.err
		case <-opCtx.Done(): // its whole time, or the caller's context ended
			select {
			case r := <-done: // it answered, and its goroutine ended its context
				unfollow()
				j.answered(parent, opCtx, r.err)
				return r.v, r.err
			default:
			}
			j.timedOut(parent, opCtx)
			break wait
		case <-limit:
			break wait
		case <-moved:
			var by time.Time
			by, _, moved = hurry.state()
			if d := time.Until(by); d > 0 {
				timer := time.NewTimer(d)
				defer timer.Stop()
				hurried = timer.C
				continue
			}
			hurriedAway = true
			break wait
		case <-hurried:
			hurriedAway = true
			break wait
		}
	}
	if !claimed.CompareAndSwap(false, true) { // it answered just as the caller left
		unfollow()
		r := <-done
		j.answered(parent, opCtx, r.err)
		return r.v, r.err
	}
	g.abandoned.Add(1)
	if unfollow() {
		// Left before the op's time is up: the op runs on, no longer tied
		// to ctx, and is judged when it returns or when its time is up.
		context.AfterFunc(opCtx, func() {
			defer g.contain(parent)
			j.timedOut(parent, opCtx)
		})
	}
	var zero T
	switch err := parent.Err(); {
	case err != nil:
		return zero, fmt.Errorf("shared store: call abandoned: %w", err)
	case hurriedAway:
		return zero, fmt.Errorf("shared store: call abandoned: its caller needs the result now: %w", context.DeadlineExceeded)
	}
	return zero, fmt.Errorf("shared store: call abandoned after %v: %w", min(wait, g.Timeout), context.DeadlineExceeded)
}

// contain, deferred where the SDK tells the Breaker in a goroutine of its
// own (its OnChange is hosted code: a Logger, an Observer), recovers a
// panic there and logs it; no caller is affected.
func (g *Guard) contain(ctx context.Context) {
	if p := recover(); p != nil {
		g.LogPanic(ctx, p, false)
	}
}

// Guarded is a Store with every operation bounded by a Guard.
type Guarded struct {
	store Store
	g     *Guard
}

// Guard returns store bounded by g.
func (g *Guard) Guard(store Store) Guarded { return Guarded{store, g} }

// probe returns a read of key, the Breaker's probe for an operation on
// key: it changes nothing in the store.
func (s Guarded) probe(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := s.store.Get(ctx, key)
		return err
	}
}

// Get, Set and Delete call the store through do.
func (s Guarded) Get(ctx context.Context, key string) ([]byte, error) {
	return do(ctx, s.g, s.probe(key), func(ctx context.Context) ([]byte, error) { return s.store.Get(ctx, key) }, nil)
}

// Set: see Get.
func (s Guarded) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	_, err := do(ctx, s.g, s.probe(key), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.store.Set(ctx, key, value, ttl)
	}, nil)
	return err
}

// Delete: see Get.
func (s Guarded) Delete(ctx context.Context, key string) error {
	_, err := do(ctx, s.g, s.probe(key), func(ctx context.Context) (struct{}, error) { return struct{}{}, s.store.Delete(ctx, key) }, nil)
	return err
}

// TryLock takes the lease; its unlock is bounded too. A lease taken by a
// call that was abandoned is released once the call returns, within the
// Guard's Timeout (as far as the store honours its context): no one holds
// it, and the other replicas would wait on it until it lapses.
func (s Guarded) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	type lock struct {
		unlock func(context.Context) error
		ok     bool
	}
	l, err := do(ctx, s.g, s.probe(key), func(ctx context.Context) (lock, error) {
		unlock, ok, err := s.store.TryLock(ctx, key, ttl)
		return lock{unlock, ok}, err
	}, func(l lock) {
		if l.ok && l.unlock != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.g.Timeout)
			defer cancel()
			_ = l.unlock(ctx)
		}
	})
	switch {
	case err != nil || !l.ok:
		return nil, false, err
	case l.unlock == nil: // a store's bug: the lease then lapses by itself
		return func(context.Context) error { return nil }, true, nil
	}
	return func(ctx context.Context) error {
		_, err := do(ctx, s.g, nil, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.unlock(ctx) }, nil)
		return err
	}, true, nil
}
