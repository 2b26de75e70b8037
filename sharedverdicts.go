package management

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// sharedVerdicts keeps the Authenticator's verdicts on End User tokens in
// its SharedStore, sealed, behind the in-process cache, so that the
// replicas of a service ask the service once per token per CacheTTL. The
// replica that needs a verdict takes the token's lease, asks the service and
// stores the verdict; the others read it. A store that fails or is slow
// never fails a check and is never a verdict: the replica asks on its own.
// It is sharedTokens' twin; a nil *sharedVerdicts (no store) does nothing.
type sharedVerdicts struct {
	store   *fleet.Shared
	cache   *verdictCache // turns a stored answer into a verdict
	timeout time.Duration // Authenticator.Timeout, as applied
	logger  *slog.Logger
	foreign atomic.Bool // a foreign epoch was logged
	// pace estimates how long a lease's holder takes to store its
	// verdict, from how long asking the service and storing the verdict
	// take this replica.
	pace fleet.Pace
}

// storedVerdict is a verdict as sealed in the store: the service's answer,
// when the verdict expires, and when the service gave the answer. It is
// kept past its expiry for as long as a grace could last (see
// Authenticator.StaleIfError): the fleet's record of the service's latest
// answer on the token.
type storedVerdict struct {
	Auth     EndUserAuthentication `json:"auth"`
	Expires  time.Time             `json:"expires"`
	Answered time.Time             `json:"answered,omitzero"` // zero when a replica of an earlier version stored it
	// Leased is set when the replica that stored it held the token's
	// lease: a replica that ran out of patience waiting on that lease
	// then knows that its holder was alive (see fleet.WaitedOut).
	Leased bool `json:"leased,omitzero"`
}

// How Forget holds for the whole fleet, with a store that has no
// compare-and-set: the verdicts on an End User token are stored under the
// token's epoch, a random value that Forget replaces. A check reads the
// epoch before it asks the service and stores the verdict under that
// epoch; a check on another replica whose answer lands after Forget thus
// writes under an epoch no one reads any more. The epoch lives long enough
// (epochTTL) that every verdict stored under an earlier one has expired
// before readers could fall back to the key without an epoch.

// epochLen is the length of an epoch as stored: 12 random bytes, base64url.
const epochLen = 16

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// errForeignEpoch is a token's epoch in the store that this SDK did not
// write: the check goes on without the store rather than trust it, and the
// first one is logged.
var errForeignEpoch = errors.New("shared store: a verdict epoch of a foreign shape")

// verdictTurn is what a check that asks the service itself has of the
// store (see sharedVerdicts.await).
type verdictTurn struct {
	slot   string           // where to put the verdict; "" when the store failed: it is then not stored
	leased bool             // this replica holds the token's lease
	record authVerdict      // the record of the token it read, expired; zero when there was none
	out    *fleet.WaitedOut // the wait that ran out of patience on another replica's lease, to judge
}

// await returns the verdict on header from the store, waiting while another
// replica holds the token's lease and asks the service (see lease). It
// returns found false when this replica must ask the service itself, with
// its turn: the slot to put its verdict in, and the record it read of the
// token, expired: what the check may let the token through stale on (see
// Authenticator.judge). A lease it took is released when ctx ends (the
// check's call is bounded by Authenticator.Timeout), or lapses by itself.
// ctx carries the check's budget of store time (see fleet.WithBudget),
// which bounds the wait on another replica too, by the check's own clock.
func (s *sharedVerdicts) await(ctx context.Context, header string) (v authVerdict, found bool, turn verdictTurn) {
	if s == nil {
		return authVerdict{}, false, turn
	}
	slot, err := s.slot(ctx, header)
	if err != nil {
		return authVerdict{}, false, turn
	}
	read := func() (authVerdict, bool, error) {
		v, found, err := s.record(ctx, slot, header)
		if found {
			turn.record = v
		}
		if !found || !time.Now().Before(v.expires) {
			return authVerdict{}, false, err
		}
		return v, true, nil
	}
	l := fleet.Lease{Key: slot + ":lease", TTL: verdictLease, Patience: fleet.Patience(ctx, s.patience())}
	v, found, unlock, out := fleet.Await(ctx, s.store, l, read)
	turn.slot, turn.leased, turn.out = slot, unlock != nil, out
	if unlock != nil {
		// In a goroutine of its own, where a failing store may open the
		// breaker, which logs and tells the Observer: hosted code,
		// contained there.
		context.AfterFunc(ctx, func() {
			defer s.store.Contain(ctx)
			unlock()
		})
	}
	return v, found, turn
}

// judgeWait tells the Leases breaker how a wait that ran out of patience
// went, once the check has asked the service itself: not waited out if
// the lease's holder stored its verdict since (a holder alive on a busy
// host), as a read of the slot, within what is left of the check's store
// budget, tells; waited out otherwise, or when the store cannot tell.
func (s *sharedVerdicts) judgeWait(ctx context.Context, turn verdictTurn) {
	if s == nil || turn.out == nil {
		return
	}
	sv, found, _ := s.open(ctx, turn.slot)
	turn.out.Judge(ctx, found && sv.Leased)
}

// patience is how long a check waits for another replica's verdict, by
// its own clock: four times what asking the service and storing the
// verdict take this replica (see fleet.Pace), at least SharedStoreTimeout
// and at most verdictLease.
func (s *sharedVerdicts) patience() time.Duration {
	return s.pace.Patience(s.store.Guard().Timeout, verdictLease)
}

// produced records how long asking the service and storing its verdict
// took this replica.
func (s *sharedVerdicts) produced(took time.Duration) {
	if s != nil {
		s.pace.Record(took)
	}
}

// slot returns the key the verdict on header, as spelled, lives under
// now: its slot (see fleet.Sealer.VerdictSlot), or the slot and the epoch
// Forget last set on the credential, whatever the spelling it was given.
func (s *sharedVerdicts) slot(ctx context.Context, header string) (string, error) {
	seal := s.store.Sealer()
	epoch, err := s.store.Get(ctx, seal.VerdictStem(header)+":epoch")
	slot := seal.VerdictSlot(header)
	switch {
	case err != nil:
		return "", err
	case epoch == nil:
		return slot, nil
	case len(epoch) != epochLen || strings.Trim(string(epoch), base64URLAlphabet) != "":
		if !s.foreign.Swap(true) {
			s.logger.LogAttrs(ctx, slog.LevelWarn, "management: a verdict epoch in the shared store that the SDK did not write; checks of that token go on without the store (logged once)")
		}
		return "", errForeignEpoch
	}
	return slot + ":e" + string(epoch), nil
}

// record returns the verdict on header stored in slot, expired or not (a
// record kept for a grace): found is false when there is none, or none
// that opens (forged, foreign, corrupt, sealed under a rotated secret or
// another epoch); a failing store is an error. Its grace ends at the
// latest 5s after the read (sharedFirstLevelTTL), as for any entry from
// the store, so that a Forget elsewhere holds within that long; only the
// check whose call read it may pass on it later (see verdictCache.adopt).
func (s *sharedVerdicts) record(ctx context.Context, slot, header string) (authVerdict, bool, error) {
	sv, found, err := s.open(ctx, slot)
	if !found {
		return authVerdict{}, false, err
	}
	v := s.cache.verdict(&sv.Auth, header, time.Now())
	v.expires = minTime(v.expires, sv.Expires)
	v.answered, v.graceUntil = sv.Answered, time.Time{}
	if v.err == nil && s.cache.grace > 0 && !sv.Answered.IsZero() {
		v.graceUntil = minTime(sv.Answered.Add(s.cache.grace), time.Now().Add(sharedFirstLevelTTL))
	}
	return v, true, nil
}

// open returns the verdict stored in slot as it was stored: found is false
// when there is none, or none that opens; a failing store is an error.
func (s *sharedVerdicts) open(ctx context.Context, slot string) (sv storedVerdict, found bool, err error) {
	plain, err := s.store.Open(ctx, slot)
	switch {
	case err != nil || plain == nil:
		return sv, false, err
	case json.Unmarshal(plain, &sv) != nil:
		return storedVerdict{}, false, nil
	}
	return sv, true, nil
}

// peek returns the verdict on header as the store holds it, expired or not,
// without a lease: what a check that could not ask the service may still
// use (see verdictCache.adopt). ctx bounds the reads, within one
// SharedStoreTimeout in all; found is false when the store has none or
// cannot answer.
func (s *sharedVerdicts) peek(ctx context.Context, header string) (v authVerdict, found bool) {
	ctx = fleet.WithBudget(ctx, s.store.Guard().Timeout, nil)
	slot, err := s.slot(ctx, header)
	if err != nil {
		return authVerdict{}, false
	}
	v, found, _ = s.record(ctx, slot, header)
	return v, found
}

// put stores v, the verdict the service's answer auth gave, in the turn's
// slot: until it expires, or as long as its grace could last if that is
// longer (an invalid answer too, so that it ends the grace on every
// replica).
func (s *sharedVerdicts) put(ctx context.Context, turn verdictTurn, auth *EndUserAuthentication, v authVerdict) {
	if s == nil || turn.slot == "" {
		return
	}
	slot := turn.slot
	until := v.expires
	if s.cache.grace > 0 {
		until = maxTime(until, v.answered.Add(s.cache.grace))
	}
	ttl := time.Until(until)
	if ttl <= 0 {
		return
	}
	plain, err := json.Marshal(storedVerdict{Auth: *auth, Expires: v.expires, Answered: v.answered, Leased: turn.leased})
	if err != nil {
		return
	}
	_ = s.store.Put(ctx, slot, plain, ttl)
}

// drop makes the fleet forget the verdicts on header's credential, every
// spelling of its scheme: a new epoch, so that no verdict stored under an
// earlier one is read again, even one written after this (see slot); and,
// should the store refuse it, the verdict on header as spelled without an
// epoch deleted. For replicas not yet upgraded, it sets the epoch of the
// layout before spellings for header as spelled (for a scheme in lower
// case, the same key) and deletes that layout's verdict, and the key of
// the layout before hash tags. The store is tried even while its breaker
// is open, within one SharedStoreTimeout in all (and ctx); the error is
// the epoch's: failing it, the fleet may go on accepting the token until
// the verdicts stored under the epoch expire.
func (s *sharedVerdicts) drop(ctx context.Context, header string) error {
	if s == nil {
		return nil
	}
	ctx = fleet.WithBudget(fleet.Forced(ctx), s.store.Guard().Timeout, nil)
	seal := s.store.Sealer()
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	epoch := base64.RawURLEncoding.AppendEncode(nil, b[:])
	stem := seal.VerdictStem(header)
	err := s.store.Set(ctx, stem+":epoch", epoch, s.epochTTL())
	_ = s.store.Delete(ctx, seal.VerdictSlot(header))
	if old := seal.UnfoldedVerdictStem(header); old != stem {
		_ = s.store.Set(ctx, old+":epoch", epoch, s.epochTTL())
	}
	_ = s.store.Delete(ctx, seal.UnfoldedVerdictStem(header))
	_ = s.store.Delete(ctx, seal.LegacyVerdictKey(header))
	return err
}

// epochTTL is how long an epoch set by Forget lives: longer than a check
// that read the previous epoch may still write under it (its call, bounded
// by Timeout) plus the life of what it writes (CacheTTL, or StaleIfError
// when longer, at most), with as much again to spare. Every replica must
// have the same CacheTTL and StaleIfError.
func (s *sharedVerdicts) epochTTL() time.Duration {
	return 2*max(s.cache.validTTL, s.cache.grace, 0) + s.timeout
}
