package fleet

import (
	"context"
	"sync/atomic"
	"time"
)

// Budget is one call's time for the store: a call (a check, a token's
// fetch, a Forget) waits for the store at most Budget's limit in total,
// however many operations it makes, and asks no more of the store once it
// is spent; and it spends no more than half its time before doing its own
// work (asking the service), on the store and on other replicas' leases
// together, so that the store's time never eats the service's.
type Budget struct {
	left    atomic.Int64 // nanoseconds of store time left
	halfway time.Time    // the latest end of the waits before the call's own work; zero: none
	hurry   *Hurry       // nil: none
}

// budgetKey is the context key of a call's *Budget.
type budgetKey struct{}

// WithBudget returns ctx carrying the store budget of a call that starts
// now: limit, or half the time left to ctx's deadline (the sooner of its
// own and the one KeepDeadline kept) when that is less. hurry, when not
// nil, lets the callers that join the call shorten its waits.
func WithBudget(ctx context.Context, limit time.Duration, hurry *Hurry) context.Context {
	b := &Budget{hurry: hurry}
	if d, ok := Deadline(ctx); ok {
		half := time.Until(d) / 2
		limit = max(min(limit, half), 0)
		b.halfway = time.Now().Add(half)
	}
	b.left.Store(int64(limit))
	if hurry != nil {
		hurry.link(b) // what joiners asked before the call reached the store
	}
	return context.WithValue(ctx, budgetKey{}, b)
}

// WithoutBudget returns ctx without a budget: for what runs after the
// call has answered (a write-back, a lease's release), each operation
// bounded by the Guard's timeout alone.
func WithoutBudget(ctx context.Context) context.Context {
	if budgetOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, (*Budget)(nil))
}

func budgetOf(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Left returns the store time left.
func (b *Budget) Left() time.Duration { return time.Duration(b.left.Load()) }

func (b *Budget) spend(d time.Duration) { b.left.Add(-int64(d)) }

// limit lowers the store time left to d.
func (b *Budget) limit(d time.Duration) {
	for {
		left := b.left.Load()
		if left <= int64(d) || b.left.CompareAndSwap(left, int64(d)) {
			return
		}
	}
}

// callerDeadline is the context key of the deadline of the caller that
// started a flight (see KeepDeadline).
type callerDeadline struct{}

// KeepDeadline returns ctx carrying its deadline as a value too: a flight
// runs detached from its caller's context (and so without its deadline),
// yet waits for the store and for other replicas no longer than that
// caller can afford. A deadline kept earlier (a check's flight needing a
// token) stays when it is the sooner.
func KeepDeadline(ctx context.Context) context.Context {
	d, ok := ctx.Deadline()
	if kept, was := ctx.Value(callerDeadline{}).(time.Time); was && (!ok || kept.Before(d)) {
		return ctx
	}
	if ok {
		return context.WithValue(ctx, callerDeadline{}, d)
	}
	return ctx
}

// Deadline returns the sooner of ctx's deadline and the one KeepDeadline
// kept in it.
func Deadline(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Deadline()
	if kept, was := ctx.Value(callerDeadline{}).(time.Time); was && (!ok || kept.Before(d)) {
		return kept, true
	}
	return d, ok
}

// Patience is limit, or less when the call of ctx cannot afford it: the
// time to its budget's halfway mark (see Budget), or, without a budget,
// half the time left to its deadline (see Deadline).
func Patience(ctx context.Context, limit time.Duration) time.Duration {
	if b := budgetOf(ctx); b != nil {
		if b.halfway.IsZero() {
			return limit
		}
		return max(min(limit, time.Until(b.halfway)), 0)
	}
	if d, ok := Deadline(ctx); ok {
		return max(min(limit, time.Until(d)/2), 0)
	}
	return limit
}
