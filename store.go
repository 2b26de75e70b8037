package management

import (
	"context"
	"time"
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
// Implementations must be safe for concurrent use. A store that fails or is
// slow never fails a call of the SDK: the SDK falls back to what it does
// without a store, and logs.
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
