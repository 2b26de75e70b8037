package management

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// The rounds of a replica waiting on a lease (each reads the value and
// tries the lease: one call on each key) are 20 ms apart, then 40 ms, as the
// holder usually stores within tens of milliseconds, then pollGap and a
// jitter of up to pollJitter, which keeps the replicas from polling in
// step: at most 18 calls on a key in any second.
const (
	pollGap    = 60 * time.Millisecond
	pollJitter = 30 * time.Millisecond
)

// firstPollGaps are the gaps after a key's first rounds (see pollGap).
var firstPollGaps = [...]time.Duration{20 * time.Millisecond, 40 * time.Millisecond}

// lease is the protocol by which the replicas produce one value once and
// share it through a store: read the value; if it is absent, take the
// lease, read once more (the previous holder may have stored it and left
// between the read and the lock) and produce it; if another replica holds
// the lease, read again (see pollGap), for at most patience (a
// lease left by a replica that died, or written by whoever can write the
// store, delays no longer), never past ctx. A store that fails, when
// reading the value or taking the lease, ends the wait at once: an error is
// not "not there yet", and the holder may well never be able to store.
type lease struct {
	store    *sharedStore
	key      string
	ttl      time.Duration // the lease's lifetime in the store
	patience time.Duration // how long to wait for another holder
}

// pollTurns spaces the polling rounds of all the waits on one lease in a
// Client (several Authenticators on one Client, a check that Forget
// detached and the one after it), so that together they poll the key as
// one poller would (see pollGap). It holds the keys being polled only.
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
	gap := pollGap + rand.N(pollJitter)
	if k.given < len(firstPollGaps) {
		gap = firstPollGaps[k.given]
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

// awaitLease returns the value read, or found false when this replica must
// produce it: then unlock, when not nil, releases the lease it holds (nil
// when the store failed, the wait gave up or ctx ended).
func awaitLease[T any](ctx context.Context, l lease, read func() (T, bool, error)) (v T, found bool, unlock func()) {
	polls := &l.store.store.g.polls
	giveUp := time.Now().Add(l.patience)
	var turn time.Time // the latest round this wait was given
	defer func() {
		if !turn.IsZero() {
			polls.done(l.key, turn)
		}
	}()
	for {
		v, ok, err := read()
		switch {
		case err != nil:
			return v, false, nil
		case ok:
			return v, true, nil
		}
		release, locked, err := l.store.tryLock(ctx, l.key, l.ttl)
		switch {
		case err != nil:
			return v, false, nil
		case locked:
			unlock = func() { release(context.WithoutCancel(ctx)) }
			if v, ok, err := read(); err == nil && ok {
				unlock()
				return v, true, nil
			}
			return v, false, unlock
		}
		now := time.Now()
		if !now.Before(giveUp) {
			return v, false, nil
		}
		turn = polls.next(l.key, now)
		// A round past giveUp is not taken: the wait ends at giveUp without
		// a read of its own, so that all the waits on a key, ending
		// together, keep to the one schedule.
		t := time.NewTimer(min(turn.Sub(now), giveUp.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, false, nil
		case <-t.C:
		}
		if turn.After(giveUp) {
			return v, false, nil
		}
	}
}

// callerDeadline is the context key of the deadline of the caller that
// started a flight (see keepDeadline).
type callerDeadline struct{}

// keepDeadline returns ctx carrying its deadline as a value too: a flight
// runs detached from its caller's context (and so without its deadline),
// yet waits for another replica no longer than that caller can afford. A
// deadline kept earlier (a check's flight needing a token) stays when it is
// the sooner.
func keepDeadline(ctx context.Context) context.Context {
	d, ok := ctx.Deadline()
	if kept, was := ctx.Value(callerDeadline{}).(time.Time); was && (!ok || kept.Before(d)) {
		return ctx
	}
	if ok {
		return context.WithValue(ctx, callerDeadline{}, d)
	}
	return ctx
}

// callerPatience is limit, or half the time left to the deadline kept in ctx
// (see keepDeadline) when that is shorter: the other half is for doing the
// work itself.
func callerPatience(ctx context.Context, limit time.Duration) time.Duration {
	if d, ok := ctx.Value(callerDeadline{}).(time.Time); ok {
		return max(min(limit, time.Until(d)/2), 0)
	}
	return limit
}
