package fleet

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker stops a kind of operation for a cool-down once it fails: after
// Threshold failures in a row it opens (with Forgive, successes between
// the failures wear the run down rather than end it), and the operations it guards are
// refused at once (the caller goes on without them) until the cool-down
// has passed; then one operation at a time is let through as a probe. A
// probe that succeeds closes it at once; one that fails opens it for twice
// the previous cool-down, up to MaxCoolDown. A Breaker that opens again
// within CoolDown of a probe closing it goes on from twice the cool-down
// it had, rather than from CoolDown: what works for some operations and
// not others (a cluster with one node down) does not keep the callers
// waiting on every other failure, while failures spread out in time (a
// loaded host's slow moments) start from CoolDown each time. Every cool-down is jittered
// (±20%), so that the replicas of a fleet do not probe in step.
//
// Set the fields before the first use; a Breaker is then safe for
// concurrent use. While it is closed, Allow costs two atomic loads. A nil
// *Breaker lets everything through.
type Breaker struct {
	// Threshold is the number of failures in a row that opens it (0: 1).
	Threshold int
	// Forgive is the number of successes that take one failure off a run
	// of failures; 0: a success ends the run. A Breaker whose operations
	// fail on part of what it guards (some keys of a store) then still
	// opens, while a failure now and then, among successes, never adds up
	// to Threshold.
	Forgive int
	// CoolDown is the first cool-down; MaxCoolDown caps its growth.
	CoolDown, MaxCoolDown time.Duration
	// OnChange, when set, is told when the breaker opens and closes. It
	// runs in the goroutine that reported the outcome, without the
	// Breaker's lock held, and may be hosted code (a Logger, an Observer).
	OnChange func(ctx context.Context, c Change)

	// open, gen and failures are written under mu; they are atomic so
	// that an operation on a closed Breaker takes no lock.
	open     atomic.Bool
	gen      atomic.Uint64 // changes when it opens and when it closes
	failures atomic.Int64  // the run of failures while closed, in steps (see step)
	skipped  atomic.Int64  // operations refused since it opened

	mu      sync.Mutex
	next    time.Duration // the cool-down after the next failed probe
	until   time.Time     // the earliest next probe
	probing bool          // a probe is running
	opened  time.Time
	last    time.Duration // the cool-down it had when it last closed
	closed  time.Time     // when it last closed
}

// Change is a breaker opening or closing.
type Change struct {
	// Open is true when it opened, false when it closed.
	Open bool
	// CoolDown is, when it opened, the time until the first probe.
	CoolDown time.Duration
	// Err is, when it opened, the failure that opened it.
	Err error
	// Skipped is, when it closed, the operations refused while it was open.
	Skipped int64
	// OpenFor is, when it closed, how long it was open.
	OpenFor time.Duration
}

// Ticket is an operation the Breaker let through. Report its outcome with
// exactly one of Succeeded, Failed or Abstained.
type Ticket struct {
	b     *Breaker
	gen   uint64
	probe bool
}

// Allow returns the ticket of an operation when the Breaker lets it
// through: while it is closed, or as the one probe once the cool-down has
// passed. Otherwise it counts the operation as skipped and returns false.
func (b *Breaker) Allow() (Ticket, bool) {
	if b == nil {
		return Ticket{}, true // no Breaker: everything goes
	}
	if gen := b.gen.Load(); !b.open.Load() {
		return Ticket{b: b, gen: gen}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open.Load():
		return Ticket{b: b, gen: b.gen.Load()}, true
	case b.probing || time.Now().Before(b.until):
		b.skipped.Add(1)
		return Ticket{}, false
	}
	b.probing = true
	return Ticket{b: b, gen: b.gen.Load(), probe: true}, true
}

// Force returns the ticket of an operation that runs whatever the state
// (an operation that must at least be tried, such as Forget's, or the
// release of a lease): its failure counts only while the Breaker is
// closed, and its success does not close an open one (it may have reached
// a part of what the Breaker guards that works, as one node of a cluster;
// only a probe closes it).
func (b *Breaker) Force() Ticket {
	if b == nil {
		return Ticket{}
	}
	return Ticket{b: b, gen: b.gen.Load()}
}

// IsOpen reports whether the Breaker is open (false for nil).
func (b *Breaker) IsOpen() bool { return b != nil && b.open.Load() }

// Remaining returns how long the Breaker still refuses every operation:
// the rest of its cool-down while it is open, 0 once the cool-down is over
// (a probe may run, or runs) and while it is closed.
func (b *Breaker) Remaining() time.Duration {
	if !b.IsOpen() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return 0
	}
	return max(time.Until(b.until), 0)
}

// Probe reports whether the ticket is the Breaker's probe: its outcome
// may close the Breaker or open it for longer, and so tell OnChange.
func (t Ticket) Probe() bool { return t.probe }

// Succeeded reports that the operation succeeded: a probe closes the
// Breaker; any success ends a run of failures, or with Forgive wears it
// down.
func (t Ticket) Succeeded(ctx context.Context) {
	if t.b == nil {
		return
	}
	b := t.b
	if !b.open.Load() && b.failures.Load() == 0 {
		return // the common case: nothing to change
	}
	b.mu.Lock()
	if t.gen != b.gen.Load() {
		b.mu.Unlock()
		return // an operation let through before the Breaker last changed
	}
	if !b.open.Load() {
		if b.Forgive > 0 {
			b.failures.Store(max(b.failures.Load()-1, 0))
		} else {
			b.failures.Store(0)
		}
		b.mu.Unlock()
		return
	}
	if !t.probe {
		b.mu.Unlock()
		return
	}
	c := Change{Skipped: b.skipped.Swap(0), OpenFor: time.Since(b.opened)}
	b.gen.Add(1)
	b.failures.Store(0)
	b.last, b.closed = b.next, time.Now()
	b.probing, b.next = false, 0
	b.open.Store(false)
	b.mu.Unlock()
	b.changed(ctx, c)
}

// Failed reports that the operation failed with err: while the Breaker is
// closed, the Threshold-th failure in a row opens it; a failed probe opens
// it again for a longer cool-down.
func (t Ticket) Failed(ctx context.Context, err error) {
	if t.b == nil {
		return
	}
	b := t.b
	b.mu.Lock()
	switch {
	case t.gen != b.gen.Load():
		b.mu.Unlock()
		return
	case t.probe:
		b.next = min(2*b.next, b.MaxCoolDown)
		b.until = time.Now().Add(jitter(b.next))
		b.probing = false
		b.mu.Unlock()
		return
	case b.open.Load():
		b.mu.Unlock()
		return // a forced operation: the Breaker is open already
	}
	if b.failures.Add(b.step()) < int64(max(b.Threshold, 1))*b.step() {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	b.failures.Store(0)
	b.gen.Add(1)
	b.next = min(b.CoolDown, b.MaxCoolDown)
	if b.last > 0 && now.Sub(b.closed) < b.CoolDown {
		b.next = min(2*b.last, b.MaxCoolDown)
	}
	cool := jitter(b.next)
	b.until, b.opened = now.Add(cool), now
	b.probing = false
	b.skipped.Store(0)
	b.open.Store(true)
	b.mu.Unlock()
	b.changed(ctx, Change{Open: true, CoolDown: cool, Err: err})
}

// Abstained reports an operation whose outcome says nothing of what the
// Breaker guards (its caller gave up first): a probe's turn is given back,
// for the next operation to take at once.
func (t Ticket) Abstained() {
	if t.b == nil || !t.probe {
		return
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if t.gen == t.b.gen.Load() {
		t.b.probing = false
	}
}

// step is what a failure adds to the run: Forgive successes take it off.
func (b *Breaker) step() int64 { return int64(max(b.Forgive, 1)) }

func (b *Breaker) changed(ctx context.Context, c Change) {
	if b.OnChange != nil {
		b.OnChange(ctx, c)
	}
}

// jitter returns d spread over ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
