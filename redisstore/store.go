package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
	logger *slog.Logger
	// cluster is rdb when it is a cluster client, asked to read the
	// cluster's map again after a failure; nil for a client of one server.
	// A pointer, not a func: a Store stays comparable, as it was in v0.1.0.
	cluster *redis.ClusterClient
}

var _ management.SharedStore = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger to which New reports a go-redis client set up
// in a way that defeats the SDK's time bounds (default, and when logger is
// nil, slog.Default()).
func WithLogger(logger *slog.Logger) Option {
	return func(s *Store) { s.logger = logger }
}

// WithPrefix sets the prefix of the Store's keys (default DefaultPrefix), to
// keep them apart from others in a shared Redis.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// New returns a Store that keeps its keys in rdb, any go-redis client (of
// one server, a Sentinel failover, a Cluster). The Store does not own rdb:
// closing rdb is the caller's business.
//
// What the Store needs from rdb is that it honours the deadline of each
// operation's context, which go-redis does on the socket only with
// ContextTimeoutEnabled set in its options. The SDK bounds each store
// operation by management.Config.SharedStoreTimeout and abandons one that
// overruns, so a call never waits on a hung Redis; but without the option,
// the abandoned operation keeps one of rdb's connections until rdb's own
// read timeout (3 s by default). New logs a Warn when it can tell the
// option is off (rdb a *redis.Client, *redis.ClusterClient or *redis.Ring).
//
// On a Cluster (rdb a *redis.ClusterClient), the Store asks rdb to reload
// the cluster's map of slots whenever an operation fails, so that after a
// failover the replicas reach the promoted master as soon as the cluster
// has promoted it, whatever rdb's ClusterStateReloadInterval (by default
// go-redis keeps its map for a minute, and a refused connection does not
// refresh it). go-redis runs one reload at a time, so a burst of failures
// costs a few CLUSTER SLOTS, not one each.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: DefaultPrefix, logger: slog.Default()}
	for _, opt := range opts {
		opt(s)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	var deadlines bool
	switch c := rdb.(type) {
	case *redis.Client:
		deadlines = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		deadlines = c.Options().ContextTimeoutEnabled
		s.cluster = c
	case *redis.Ring:
		deadlines = c.Options().ContextTimeoutEnabled
	default:
		deadlines = true // cannot tell
	}
	if !deadlines {
		s.logger.LogAttrs(context.Background(), slog.LevelWarn,
			"redisstore: the go-redis client ignores context deadlines (ContextTimeoutEnabled is off): when Redis hangs, operations the SDK abandoned hold connections until the read timeout",
			slog.String("client", fmt.Sprintf("%T", rdb)))
	}
	return s
}

// fail wraps the error of operation op, after asking a cluster client to
// reload its map: the error may come from a master that is gone.
func (s *Store) fail(op string, err error) error {
	if s.cluster != nil {
		s.cluster.ReloadState(context.Background())
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// Get returns the value under key, or nil and no error when there is none.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("get", err)
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
		return s.fail("set", err)
	}
	return nil
}

// Delete removes key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.rdb.Del(ctx, s.prefix+key).Err(); err != nil {
		return s.fail("delete", err)
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
		return nil, false, s.fail("lock", err)
	}
	if !ok {
		return nil, false, nil
	}
	unlock = func(ctx context.Context) error {
		if err := release.Run(ctx, s.rdb, []string{k}, holder).Err(); err != nil {
			return s.fail("unlock", err)
		}
		return nil
	}
	return unlock, true, nil
}
