package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
)

// DefaultPrefix is the prefix of every key the Store writes, unless
// WithPrefix sets another.
const DefaultPrefix = "management:"

// Store is a management.SharedStore on Redis. It is safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ management.SharedStore = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of the Store's keys (default DefaultPrefix), to
// keep them apart from others in a shared Redis.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// New returns a Store that keeps its keys in rdb. The Store does not own
// rdb: closing rdb is the caller's business.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: DefaultPrefix}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Get returns the value under key, or nil and no error when there is none.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: get: %w", err)
	}
	return v, nil
}

// Set stores value under key for ttl, which must be positive: every entry
// of the SDK expires.
func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redisstore: set: the time to live %v is not positive", ttl)
	}
	if err := s.rdb.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redisstore: set: %w", err)
	}
	return nil
}

// Delete removes key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.rdb.Del(ctx, s.prefix+key).Err(); err != nil {
		return fmt.Errorf("redisstore: delete: %w", err)
	}
	return nil
}

// release deletes a lease's key only while it still holds the holder's
// value, so that a holder whose lease expired never frees another's.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// TryLock takes a lease on key for ttl (SET NX PX with a random value) and
// reports whether it got it; it never waits for another holder.
func (s *Store) TryLock(ctx context.Context, key string, ttl time.Duration) (unlock func(context.Context) error, ok bool, err error) {
	if ttl <= 0 {
		return nil, false, fmt.Errorf("redisstore: lock: the lease time %v is not positive", ttl)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	holder := hex.EncodeToString(b[:])
	k := s.prefix + key
	ok, err = s.rdb.SetNX(ctx, k, holder, ttl).Result()
	if err != nil {
		return nil, false, fmt.Errorf("redisstore: lock: %w", err)
	}
	if !ok {
		return nil, false, nil
	}
	unlock = func(ctx context.Context) error {
		if err := release.Run(ctx, s.rdb, []string{k}, holder).Err(); err != nil {
			return fmt.Errorf("redisstore: unlock: %w", err)
		}
		return nil
	}
	return unlock, true, nil
}
