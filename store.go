package management

import (
	"context"
	"log/slog"
	"time"

	"github.com/serviceconnect/management/internal/fleet"
)

// SharedStore is a key-value store shared by the replicas of one service
// (Redis, Valkey, ...), so that a fleet fetches one management token per
// token lifetime and asks the service once about each End User token. The
// package redisstore implements it on Redis.
//
// Values are opaque bytes that the SDK seals before it stores them: a token
// is encrypted (AES-256-GCM) under a key derived from the client secret, and
// a verdict on an End User token is sealed and stored under an HMAC of the
// token, so that whoever can read or write the store can neither use a token
// nor forge a verdict. Keys are derived by the SDK and never contain a secret
// or a token. Each operation touches one key.
//
// Implementations must be safe for concurrent use. A store that fails, is
// slow or panics never fails a call of the SDK: the SDK falls back to what it does
// without a store, and logs. The SDK waits for each call at most
// Config.SharedStoreTimeout (or less: a call of the SDK waits for the store
// at most that long in all, whatever the number of operations), and
// abandons a call that outlives its wait, whether or not the store honours
// the context: the call goes on in the background, with a context that
// ends twice SharedStoreTimeout after its start, and a Client starts no
// store call while 128 of its calls (abandoned ones included) are running.
// A call answered within that context's time is the store answering,
// however late for its caller; calls that fail, or do not answer in that
// time, 3 in a row (see Config.SharedStoreTimeout), open the Client's
// breaker (see BreakerSharedStore): the Client leaves its stores alone for
// a cool-down, then sends one call at a time as a probe, and goes back to
// them when one succeeds. A store should still honour the context, so that
// abandoned calls end soon.
type SharedStore interface {
	// Get returns the value stored under key, or nil and no error when
	// there is none or it has expired.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key for ttl (always positive).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// TryLock takes a lease on key for at most ttl without waiting: ok is
	// false when another holder has it. unlock releases the lease if it is
	// still this holder's (a lease that expired and was taken by another
	// holder is left alone).
	TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context) error, ok bool, err error)
}

// defaultSharedStoreTimeout bounds one store call: 200 ms. On a busy
// 2-core host the store's operations, as a replica sees them, take up to
// its CPU's delays: beside four CPU-burning loops, a p99 of 116 to 190 ms
// and a p99.9 of 150 to 260 ms (scripts/bench-fleet.sh harness, LOAD=4, 32
// replicas), where 150 ms (two to five times the p99.9 of a GET on a host
// with two loops) timed out often enough that a fleet of 32 lost its
// sharing, and then its calls. A hung store costs the checks that meet it
// in its first SharedStoreTimeout that long: with 16 replicas under the
// harness's load, they are about 1% of the calls, and the p99 of a hang is
// about SharedStoreTimeout (201 ms measured), within the 250 ms it may
// cost. A lone timeout opens nothing (see storeFailures).
const defaultSharedStoreTimeout = 200 * time.Millisecond

// The shared store's breaker (see fleet.Breaker) judges the store, not the
// host: an operation fails when the store errs or does not answer within
// twice SharedStoreTimeout of its start (fleet.Guard.Judged), however long
// its caller waited (see fleet's do): on a loaded host an answer reaches
// the replica late, its reader waiting for the CPU, and is still the
// store's. storeFailures failures in a row open it, so that a failure now
// and then among answers leaves the store in use, while a hung store still
// opens it once the operations started in its first twice
// SharedStoreTimeout have failed (each of their callers waiting one
// SharedStoreTimeout); storeForgive answers take
// one failure off a run rather than end it, so that a store failing on
// part of its keys (a Cluster node down) opens it too. Its first cool-down
// is about one SharedStoreTimeout (jittered), doubling while probes fail,
// up to storeMaxCoolDown.
const (
	storeFailures    = 3
	storeForgive     = 8
	storeMaxCoolDown = 30 * time.Second
)

// setSharedStore sets up the Guard of every call to a shared store and
// derives the sealer of what the Client stores there, and with
// Config.SharedStore shares the management token. cfg has its defaults
// (Config.withDefaults).
func (c *Client) setSharedStore(cfg Config) error {
	if cfg.SharedStoreTimeout < 0 {
		return errorf("%w: Config.SharedStoreTimeout must not be negative", ErrInvalidArgument)
	}
	host := flightHost{what: "shared store call", logger: c.logger,
		redactor: func() *redactor { return newRedactor(c.knownCredentials()...) }}
	c.stores = fleet.Guard{
		Timeout: cfg.SharedStoreTimeout,
		Breaker: &fleet.Breaker{Threshold: storeFailures, Forgive: storeForgive, CoolDown: cfg.SharedStoreTimeout, MaxCoolDown: storeMaxCoolDown,
			OnChange: c.breakerChanged(BreakerSharedStore)},
		Leases: &fleet.Breaker{Threshold: fleet.LeaseWaitsOut, CoolDown: fleet.LeaseCoolDown, MaxCoolDown: fleet.LeaseMaxCoolDown,
			OnChange: c.breakerChanged(BreakerLeaseWaits)},
		Panicked: host.panicked,
		LogPanic: func(ctx context.Context, p any, callerFailed bool) {
			msg := panicContained
			if callerFailed {
				msg = panicFailed
			}
			host.logPanic(ctx, p, msg)
		},
	}
	master := cfg.SharedStoreKey
	switch {
	case len(master) > 0 && len(master) < minSharedStoreKey:
		return errorf("%w: Config.SharedStoreKey must be at least %d bytes", ErrInvalidArgument, minSharedStoreKey)
	case len(master) == 0 && cfg.TokenSource == nil:
		master = []byte(cfg.ClientSecret)
	case len(master) == 0 && cfg.SharedStore != nil:
		return errorf("%w: Config.SharedStore needs Config.SharedStoreKey when Config.TokenSource replaces the client credentials", ErrInvalidArgument)
	case len(master) == 0:
		return nil
	}
	seal, err := fleet.NewSealer(master, c.baseURL, c.prefix, cfg.ClientID)
	if err != nil {
		return errorf("deriving the shared store's keys: %w", err)
	}
	c.seal = seal
	if cache, ok := c.tokens.(*tokenCache); ok && cfg.SharedStore != nil {
		cache.shared = &sharedTokens{store: c.stores.Share(cfg.SharedStore, seal), cache: cache}
	}
	return nil
}

// The records of a breaker opening and closing.
var breakerRecords = map[BreakerName][2]string{
	BreakerSharedStore: {
		"management: shared store failing, going on without it for a cool-down, then probing it",
		"management: shared store answering again",
	},
	BreakerLeaseWaits: {
		"management: leases on the shared store waited out in a row (a replica died holding them, or they are held on purpose); waiting on none for a cool-down",
		"management: a lease on the shared store was released in time again; waiting on leases again",
	},
	BreakerAuthenticate: {
		"management: End User token checks got no answer from the service in a row; not calling it for a cool-down, then probing it",
		"management: the service answers End User token checks again",
	},
}

// breakerChanged returns the OnChange of the breaker name: one Warn when
// it opens, one Info when it closes (with what went without it meanwhile),
// and the Observer's BreakerChange.
func (c *Client) breakerChanged(name BreakerName) func(context.Context, fleet.Change) {
	return func(ctx context.Context, ch fleet.Change) {
		info := BreakerInfo{Breaker: name, Open: ch.Open, CoolDown: ch.CoolDown, Skipped: ch.Skipped, OpenFor: ch.OpenFor}
		if ch.Open {
			info.Err = newRedactor(c.knownCredentials()...).error(ch.Err)
			c.logger.LogAttrs(ctx, slog.LevelWarn, breakerRecords[name][0],
				slog.String("error", escape(info.Err.Error())), slog.Duration("cool_down", ch.CoolDown))
		} else {
			attrs := []slog.Attr{slog.Duration("open_for", ch.OpenFor), slog.Int64("skipped", ch.Skipped)}
			if name != BreakerAuthenticate {
				attrs = append(attrs, slog.Int64("abandoned_calls", c.stores.Abandoned()))
			}
			c.logger.LogAttrs(ctx, slog.LevelInfo, breakerRecords[name][1], attrs...)
		}
		if obs := c.observer; obs != nil && obs.BreakerChange != nil {
			obs.BreakerChange(ctx, info)
		}
	}
}
