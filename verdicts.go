package management

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// The Authenticator's second level: verdicts shared by the replicas of a
// service in Authenticator.SharedStore, sealed (see sealer).

// storedVerdict is a verdict as sealed in the shared store: the service's
// answer, and when the verdict expires.
type storedVerdict struct {
	Auth    EndUserAuthentication `json:"auth"`
	Expires time.Time             `json:"expires"`
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

// errForeignEpoch is a token's epoch in the store that this SDK did not
// write: the check goes on without the store rather than trust it.
var errForeignEpoch = errors.New("shared store: a verdict epoch of a foreign shape")

// verdictSlot returns the key the verdict on header lives under now: the
// stem (see sealer.verdictKey), or the stem and the epoch Forget set.
func (a *Authenticator) verdictSlot(ctx context.Context, store guarded, stem string) (string, error) {
	epoch, err := store.Get(ctx, stem+":epoch")
	switch {
	case err != nil:
		return "", err
	case epoch == nil:
		return stem, nil
	case len(epoch) != epochLen || strings.Trim(string(epoch), base64URLAlphabet) != "":
		return "", errForeignEpoch
	}
	return stem + ":e" + string(epoch), nil
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// epochTTL is how long an epoch set by Forget lives: longer than a check
// that read the previous epoch may still write under it (its call, bounded
// by Timeout) plus the life of what it writes (CacheTTL at most), with as
// much again to spare. Every replica must have the same CacheTTL.
func (a *Authenticator) epochTTL() time.Duration {
	return 2*max(a.validTTL, 0) + a.timeout
}

// loadShared reads the verdict on header stored under key. A value that
// does not open (forged, foreign, corrupt, sealed under a rotated secret or
// another epoch) or has expired reads as absent; a failing store is an
// error.
func (a *Authenticator) loadShared(ctx context.Context, store guarded, key, header string) (authVerdict, bool, error) {
	sealed, err := store.Get(ctx, key)
	a.noteStore(ctx, err)
	if err != nil || sealed == nil {
		return authVerdict{}, false, err
	}
	plain, ok := a.Client.seal.open(key, sealed)
	var sv storedVerdict
	if !ok || json.Unmarshal(plain, &sv) != nil {
		return authVerdict{}, false, nil
	}
	now := time.Now()
	if !now.Before(sv.Expires) {
		return authVerdict{}, false, nil
	}
	v := a.verdict(&sv.Auth, header, now)
	v.expires = minTime(v.expires, sv.Expires)
	return v, true, nil
}

// awaitShared returns the verdict on header from the shared store, waiting
// while another replica holds the token's lease and asks the service (see
// lease). It returns found false when this replica must ask the service
// itself, with the key to store its verdict under ("" when the store
// failed: the verdict is then not stored). A lease it took is released
// when ctx ends (judge's call is bounded by Authenticator.Timeout), or
// lapses by itself.
func (a *Authenticator) awaitShared(ctx context.Context, header string) (v authVerdict, key string, found bool) {
	if a.SharedStore == nil {
		return authVerdict{}, "", false
	}
	store := a.Client.stores.guard(a.SharedStore)
	stem := a.Client.seal.verdictKey(header)
	key, err := a.verdictSlot(ctx, store, stem)
	a.noteStore(ctx, err)
	if err != nil {
		return authVerdict{}, "", false
	}
	l := lease{store: store, key: key + ":lease", ttl: verdictLease, patience: callerPatience(ctx, verdictLease),
		note: func(err error) { a.noteStore(ctx, err) }}
	v, found, unlock := awaitLease(ctx, l, func() (authVerdict, bool, error) { return a.loadShared(ctx, store, key, header) })
	if unlock != nil {
		context.AfterFunc(ctx, unlock)
	}
	return v, key, found
}

// storeShared stores the verdict under key until expires.
func (a *Authenticator) storeShared(ctx context.Context, key string, auth *EndUserAuthentication, expires time.Time) {
	ttl := time.Until(expires)
	if a.SharedStore == nil || key == "" || ttl <= 0 {
		return
	}
	plain, err := json.Marshal(storedVerdict{Auth: *auth, Expires: expires})
	if err != nil {
		return
	}
	store := a.Client.stores.guard(a.SharedStore)
	a.noteStore(ctx, store.Set(ctx, key, a.Client.seal.seal(key, plain), ttl))
}

// dropShared makes the fleet forget the verdict on header: a new epoch, so
// that no verdict stored under an earlier one is read again, even one
// written after this (see verdictSlot); and, should the store refuse it,
// the verdict without an epoch deleted. The key of the layout before hash
// tags is deleted too, for replicas not yet upgraded.
func (a *Authenticator) dropShared(ctx context.Context, header string) {
	if a.SharedStore == nil || a.Client == nil || a.Client.seal == nil {
		return
	}
	store := a.Client.stores.guard(a.SharedStore)
	stem := a.Client.seal.verdictKey(header)
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	epoch := base64.RawURLEncoding.AppendEncode(nil, b[:])
	a.noteStore(ctx, store.Set(ctx, stem+":epoch", epoch, a.epochTTL()))
	a.noteStore(ctx, store.Delete(ctx, stem))
	a.noteStore(ctx, store.Delete(ctx, a.Client.seal.legacyVerdictKey(header)))
}

func (a *Authenticator) noteStore(ctx context.Context, err error) {
	noteStore(ctx, a.Client.logger, &a.failing, &a.Client.stores, "End User verdicts", err)
}
