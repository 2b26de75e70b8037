package management

import (
	"context"
	"encoding/json"
	"time"
)

// The Authenticator's second level: verdicts shared by the replicas of a
// service in Authenticator.SharedStore, sealed (see sealer).

// sharedFirstLevelTTL bounds how long a verdict stays in the in-process
// cache when there is a shared store: the longest another replica may still
// accept a token that Forget dropped.
const sharedFirstLevelTTL = 5 * time.Second

// storedVerdict is a verdict as sealed in the shared store: the service's
// answer, and when the verdict expires.
type storedVerdict struct {
	Auth    EndUserAuthentication `json:"auth"`
	Expires time.Time             `json:"expires"`
}

// checkSetup refuses an Authenticator that cannot work, rather than
// answering 503 to every request.
func (a *Authenticator) checkSetup() error {
	switch {
	case a.Client == nil:
		return errNoClient
	case a.SharedStore != nil && a.Client.seal == nil:
		return errorf("%w: Authenticator.SharedStore needs a key to seal verdicts: set Config.SharedStoreKey of its Client (which has no client secret)", ErrInvalidArgument)
	}
	return nil
}

// firstLevel is v as the in-process cache keeps it: with a shared store,
// for at most sharedFirstLevelTTL.
func (a *Authenticator) firstLevel(v authVerdict) authVerdict {
	if a.SharedStore != nil {
		v.expires = minTime(v.expires, time.Now().Add(sharedFirstLevelTTL))
	}
	return v
}

func minTime(x, y time.Time) time.Time {
	if x.Before(y) {
		return x
	}
	return y
}

// loadShared reads the verdict on header from the shared store. A value
// that does not open (forged, foreign, corrupt, sealed under a rotated
// secret) or has expired reads as absent; so does a failing store.
func (a *Authenticator) loadShared(ctx context.Context, header string) (authVerdict, bool) {
	if a.SharedStore == nil {
		return authVerdict{}, false
	}
	key := a.Client.seal.verdictKey(header)
	sctx, cancel := context.WithTimeout(ctx, a.Client.storeTimeout)
	defer cancel()
	sealed, err := a.SharedStore.Get(sctx, key)
	a.noteStore(ctx, err)
	if err != nil || sealed == nil {
		return authVerdict{}, false
	}
	plain, ok := a.Client.seal.open(key, sealed)
	var sv storedVerdict
	if !ok || json.Unmarshal(plain, &sv) != nil {
		return authVerdict{}, false
	}
	now := time.Now()
	if !now.Before(sv.Expires) {
		return authVerdict{}, false
	}
	v := a.verdictFor(&sv.Auth, header, now)
	v.expires = minTime(v.expires, sv.Expires)
	return v, true
}

// How a replica waits for the verdict another replica is asking the
// service for: it reads the store every verdictPoll, for at most
// verdictLease (also the lease's lifetime), then asks the service itself:
// a lease left by a replica that died, or written by whoever can write the
// store, delays a check by at most that long.
const (
	verdictPoll  = 10 * time.Millisecond
	verdictLease = time.Second
)

// awaitShared returns the verdict on header from the shared store, waiting
// while another replica holds the token's lease and asks the service (see
// lease). It returns false when this replica must ask the service itself;
// a lease it took is released when ctx ends (judge's call is bounded by
// Authenticator.Timeout), or lapses by itself.
func (a *Authenticator) awaitShared(ctx context.Context, header string) (authVerdict, bool) {
	if a.SharedStore == nil {
		return authVerdict{}, false
	}
	l := lease{store: a.SharedStore, key: a.Client.seal.verdictKey(header) + ":lease", ttl: verdictLease, poll: verdictPoll,
		timeout: a.Client.storeTimeout, note: func(err error) { a.noteStore(ctx, err) }}
	v, found, unlock := awaitLease(ctx, l, func() (authVerdict, bool) { return a.loadShared(ctx, header) })
	if unlock != nil {
		context.AfterFunc(ctx, unlock)
	}
	return v, found
}

// storeShared stores the verdict on header until expires.
func (a *Authenticator) storeShared(ctx context.Context, header string, auth *EndUserAuthentication, expires time.Time) {
	ttl := time.Until(expires)
	if a.SharedStore == nil || ttl <= 0 {
		return
	}
	plain, err := json.Marshal(storedVerdict{Auth: *auth, Expires: expires})
	if err != nil {
		return
	}
	key := a.Client.seal.verdictKey(header)
	sctx, cancel := context.WithTimeout(ctx, a.Client.storeTimeout)
	defer cancel()
	a.noteStore(ctx, a.SharedStore.Set(sctx, key, a.Client.seal.seal(key, plain), ttl))
}

// dropShared deletes the verdict on header from the shared store.
func (a *Authenticator) dropShared(ctx context.Context, header string) {
	if a.SharedStore == nil || a.Client == nil || a.Client.seal == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, a.Client.storeTimeout)
	defer cancel()
	a.noteStore(ctx, a.SharedStore.Delete(sctx, a.Client.seal.verdictKey(header)))
}

func (a *Authenticator) noteStore(ctx context.Context, err error) {
	noteStore(ctx, a.Client.logger, &a.failing, "End User verdicts", err)
}
