package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// The rounds of a replica waiting on a lease (each reads the value and
// tries the lease: one call on each key) are 20 ms apart, then 40 ms, as the
// holder usually stores within tens of milliseconds, then PollGap and a
// jitter of up to PollJitter, which keeps the replicas from polling in
// step: at most 18 calls on a key in any second.
const (
	PollGap    = 60 * time.Millisecond
	PollJitter = 30 * time.Millisecond
)

// FirstPollGaps are the gaps after a key's first rounds (see PollGap).
var FirstPollGaps = [...]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}

// Squatted leases: once a replica has waited out LeaseWaitsOut leases in a
// row (each to the end of its patience, without the value appearing or the
// lease coming free, and without the holder storing the value after the
// replica left: see WaitedOut), it waits on no lease for a cool-down
// (LeaseCoolDown, doubling while the one wait it then risks is waited out
// too, up to LeaseMaxCoolDown) and produces each value itself at once. A
// lease left by a replica that died, or held on purpose by whoever can
// write the store, then costs a few waits, not one per call: each new End
// User token is a new key, so a memory per key would not do.
const (
	LeaseWaitsOut    = 3
	LeaseCoolDown    = 5 * time.Second
	LeaseMaxCoolDown = 30 * time.Second
)

// errWaitedOut is the failure of a lease wait that reached its patience.
var errWaitedOut = errors.New("shared store: waited out another replica's lease")

// Lease is the protocol by which the replicas produce one value once and
// share it through a store: read the value; if it is absent, take the
// lease, read once more (the previous holder may have stored it and left
// between the read and the lock) and produce it; if another replica holds
// the lease, read again (see PollGap), for at most Patience (a lease left
// by a replica that died, or written by whoever can write the store, delays
// no longer; see also LeaseWaitsOut), never past ctx, nor past what the
// Hurry of its budget asks (see WithBudget). A store that fails, when
// reading the value or taking the lease, ends the wait at once: an error
// is not "not there yet", and the holder may well never be able to store.
type Lease struct {
	Key      string
	TTL      time.Duration // the lease's lifetime in the store
	Patience time.Duration // how long to wait for another holder
	// Unhurried is set when no caller waits for the value (a token
	// refreshed while the current one serves): the wait runs whatever the
	// Leases breaker says, and only tells it how it ended.
	Unhurried bool
}

// Hurry lets the callers that join a call shorten its waits: a caller that
// needs the call's result now (a replay after a 401, a call whose token
// has expired) waits for the store and on another replica's lease no
// longer than it can afford itself, whatever the call's own limits. It
// goes with the call's budget (see WithBudget). Its zero value asks
// nothing.
type Hurry struct {
	mu      sync.Mutex
	budget  *Budget       // the call's, once it has one
	store   time.Duration // store time asked for before the call had a budget (once cutBy is set)
	cutBy   time.Time     // the end of the store operation under way; zero: none
	leaseBy time.Time     // the end of the lease wait; zero: none
	moved   chan struct{} // closed when cutBy or leaseBy moves; made when a wait needs it
}

// For asks the call to wait no longer than the caller of ctx can afford:
// for the store, what is left of that caller's own budget (without one,
// timeout or half its time left); on a lease, patience or less (see
// Patience).
func (h *Hurry) For(ctx context.Context, timeout, patience time.Duration) {
	store := timeout
	if b := budgetOf(ctx); b != nil {
		store = b.Left()
	} else if d, ok := Deadline(ctx); ok {
		store = min(store, time.Until(d)/2)
	}
	store = max(store, 0)
	now := time.Now()
	cutBy, leaseBy := now.Add(store), now.Add(Patience(ctx, patience))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.budget != nil {
		h.budget.limit(store)
	} else if h.cutBy.IsZero() || store < h.store {
		h.store = store
	}
	moved := false
	if h.cutBy.IsZero() || cutBy.Before(h.cutBy) {
		h.cutBy, moved = cutBy, true
	}
	if h.leaseBy.IsZero() || leaseBy.Before(h.leaseBy) {
		h.leaseBy, moved = leaseBy, true
	}
	if moved && h.moved != nil {
		close(h.moved)
		h.moved = nil
	}
}

// link makes b the budget of the call h hurries, limited as asked so far.
func (h *Hurry) link(b *Budget) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.budget = b
	if !h.cutBy.IsZero() {
		b.limit(h.store)
	}
}

// state returns the ends asked for (zero: none) and a channel closed when
// one moves.
func (h *Hurry) state() (cutBy, leaseBy time.Time, moved <-chan struct{}) {
	if h == nil {
		return time.Time{}, time.Time{}, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.moved == nil {
		h.moved = make(chan struct{})
	}
	return h.cutBy, h.leaseBy, h.moved
}

// pollTurns spaces the polling rounds of all the waits on one lease in a
// Client (several Authenticators on one Client, a check that Forget
// detached and the one after it), so that together they poll the key as
// one poller would (see PollGap). It holds the keys being polled only.
type pollTurns struct {
	mu   sync.Mutex
	keys map[string]polling
}

// polling is the rounds given on one key: how many, and the latest.
type polling struct {
	given int
	last  time.Time
}

// next gives a wait on key, which has just had a round, its next round
// after the latest any wait on key was given, and returns when it is.
func (p *pollTurns) next(key string, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = make(map[string]polling)
	}
	k := p.keys[key]
	from := now
	if k.last.After(now) {
		from = k.last
	}
	gap := PollGap + rand.N(PollJitter)
	if k.given < len(FirstPollGaps) {
		gap = FirstPollGaps[k.given]
	}
	k.given++
	k.last = from.Add(gap)
	p.keys[key] = k
	return k.last
}

// done forgets key when the round at was the latest given on it: no other
// wait polls it.
func (p *pollTurns) done(key string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys[key].last.Equal(at) {
		delete(p.keys, key)
	}
}

// WaitedOut is a wait that ran out of patience on another replica's lease,
// not yet counted by the Leases breaker: the replica produces the value
// itself, then tells with Judge whether the lease's holder stored it
// meanwhile. A holder that did was alive, only slower than the patience (a
// busy host): its lease does not count as waited out. A nil *WaitedOut
// does nothing.
type WaitedOut struct {
	t Ticket
}

// Judge counts the wait: as waited out, unless stored reports that the
// lease's holder stored the value after this replica left.
func (w *WaitedOut) Judge(ctx context.Context, stored bool) {
	switch {
	case w == nil:
	case stored:
		w.t.Succeeded(ctx)
	default:
		w.t.Failed(ctx, errWaitedOut)
	}
}

// Await runs the lease protocol on s and returns the value read, or found
// false when this replica must produce it: then unlock, when not nil,
// releases the lease it holds (nil when the store failed, the wait gave up
// or ctx ended), and out, when not nil, is the wait that ran out of
// patience, to judge once the value is produced.
func Await[T any](ctx context.Context, s *Shared, l Lease, read func() (T, bool, error)) (v T, found bool, unlock func(), out *WaitedOut) {
	g := s.store.g
	w := wait{g: g, key: l.Key, giveUp: time.Now().Add(l.Patience), unhurried: l.Unhurried}
	if b := budgetOf(ctx); b != nil {
		w.hurry = b.hurry
	}
	defer w.end()
	for {
		v, ok, err := read()
		switch {
		case err != nil:
			return v, false, nil, nil
		case ok:
			w.found(ctx)
			return v, true, nil, nil
		}
		release, locked, err := s.TryLock(ctx, l.Key, l.TTL)
		switch {
		case err != nil:
			return v, false, nil, nil
		case locked:
			w.found(ctx) // the holder, if any, let it go: alive
			unlock = func() { release(context.WithoutCancel(ctx)) }
			if v, ok, err := read(); err == nil && ok {
				unlock()
				return v, true, nil, nil
			}
			return v, false, unlock, nil
		}
		if !w.round(ctx) {
			return v, false, nil, w.waitedOut()
		}
	}
}

// wait is one Await's wait on another replica's lease.
type wait struct {
	g      *Guard
	key    string
	giveUp time.Time // by patience
	hurry  *Hurry
	// unhurried: see Lease.Unhurried
	unhurried bool
	ticket    Ticket    // from g.Leases, once the wait has begun
	begun     bool      // the wait has begun (the lease was found held)
	turn      time.Time // the latest round this wait was given
	out       bool      // the wait ran out of patience: ticket is the caller's to judge
}

// waitedOut hands the ticket of a wait that ran out of patience to the
// caller; nil for a wait that ended otherwise.
func (w *wait) waitedOut() *WaitedOut {
	if !w.out {
		return nil
	}
	out := &WaitedOut{t: w.ticket}
	w.ticket = Ticket{}
	return out
}

// round waits for the next round on the key, and reports whether there
// is one: not when the Leases breaker is open (the replica goes its own
// way), the wait is out of patience or hurried to its end, or ctx ends.
func (w *wait) round(ctx context.Context) bool {
	if !w.begun {
		t, ok := w.g.Leases.Force(), true
		if !w.unhurried {
			t, ok = w.g.Leases.Allow()
		}
		if !ok {
			return false
		}
		w.ticket, w.begun = t, true
	}
	for {
		now := time.Now()
		giveUp, moved := w.deadline()
		if !now.Before(giveUp) {
			w.out = true // judged by the caller (see WaitedOut)
			return false
		}
		if w.turn.IsZero() || !w.turn.After(now) {
			w.turn = w.g.polls.next(w.key, now)
		}
		// A round past giveUp is not taken: the wait ends at giveUp without
		// a read of its own, so that all the waits on a key, ending
		// together, keep to the one schedule.
		next := w.turn
		if giveUp.Before(next) {
			next = giveUp
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			w.ticket.Abstained()
			w.ticket = Ticket{}
			return false
		case <-moved:
			t.Stop()
			continue // hurried: the end is sooner
		case <-t.C:
		}
		if !w.turn.After(giveUp) {
			return true
		}
	}
}

// deadline returns when the wait ends, hurried or not, and a channel closed
// when a hurry moves it.
func (w *wait) deadline() (time.Time, <-chan struct{}) {
	_, by, moved := w.hurry.state()
	if !by.IsZero() && by.Before(w.giveUp) {
		return by, moved
	}
	return w.giveUp, moved
}

// found tells the Leases breaker that a wait, if it had begun, ended
// well: the value appeared or the lease came free.
func (w *wait) found(ctx context.Context) {
	if w.begun {
		w.ticket.Succeeded(ctx)
		w.ticket = Ticket{}
	}
}

// end releases the wait's turn in the polling and its ticket, if the wait
// ended otherwise (a store failing: no news of the lease).
func (w *wait) end() {
	if !w.turn.IsZero() {
		w.g.polls.done(w.key, w.turn)
	}
	w.ticket.Abstained()
}

// Pace estimates how long a lease's holder takes to produce its value,
// from how long this replica takes when it holds one (an average that
// weighs the latest eighth): a replica waits for another only a few times
// that, so that a lease held on purpose or by a replica that died costs
// little when the service answers fast, while a slow service is still
// asked once per value. Its zero value has no estimate.
type Pace struct {
	avg atomic.Int64 // nanoseconds; 0: no estimate yet
}

// Record adds the time one production took.
func (p *Pace) Record(d time.Duration) {
	d = max(d, 1)
	for {
		old := p.avg.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if p.avg.CompareAndSwap(old, next) {
			return
		}
	}
}

// Patience is four times the estimate, within [floor, limit]; limit
// without an estimate.
func (p *Pace) Patience(floor, limit time.Duration) time.Duration {
	avg := time.Duration(p.avg.Load())
	if avg == 0 {
		return limit
	}
	return min(max(4*avg, floor), limit)
}
