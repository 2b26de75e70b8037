// Package redisstore implements management.SharedStore on Redis (6 or
// newer), Valkey, or a Redis Cluster, through go-redis, so that the replicas
// of a service share one management token and the verdicts on End User
// tokens. On one server:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "localhost:6379",
//		ContextTimeoutEnabled: true, // honour the SDK's deadline on each operation
//	})
//	store := redisstore.New(rdb)
//	client, err := management.NewClient(management.Config{
//		BaseURL: baseURL, ClientID: id, ClientSecret: secret,
//		SharedStore: store,
//	})
//	auth := &management.Authenticator{Client: client, SharedStore: store}
//
// On a Cluster, the same with a cluster client:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{
//		Addrs:                 []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"},
//		ContextTimeoutEnabled: true,
//	})
//	store := redisstore.New(rdb)
//
// ContextTimeoutEnabled lets go-redis end a socket read at the deadline the
// SDK sets on each operation (management.Config.SharedStoreTimeout). Without
// it the SDK still returns at that deadline, abandoning the operation, but a
// hung Redis then holds the abandoned operations and their connections for
// go-redis's read timeout (3 s): New logs a Warn when it can tell the option
// is off.
//
// After a failover, the Store asks the cluster client to reload its map of
// the slots as soon as an operation fails, rather than leaving it to
// ClusterOptions.ClusterStateReloadInterval. By default go-redis keeps its
// map for a minute and a refused connection does not refresh it, so the
// replicas would keep dialling the dead master (and fetch a token each) long
// after the cluster has promoted its replica; a reload on failure needs no
// setting from the user, costs nothing while the cluster is healthy, and
// starts with the first failed operation rather than up to an interval
// later (the package's tests kill a master of a fleet's cluster: the fleet
// makes one token request per refresh round again within a round of the
// promotion).
//
// What the SDK stores is sealed before it reaches Redis (see
// management.SharedStore); this package stores bytes under keys with a
// prefix of its own (WithPrefix), each with a time to live.
//
// Every operation touches one key, and the SDK gives each value and its
// lease one hash slot (a hash tag in the key), so it works unchanged on a
// Cluster, and a value and its lease are up or down together. A lease
// (TryLock) is a SET NX PX of a random value, released by a script that
// deletes the key only while it still holds that value.
//
// # go-redis's own log lines
//
// While Redis is down, go-redis writes lines of its own to standard error,
// one per attempt of each operation ("redis: connection pool: failed to
// dial after 5 attempts: ...", four for one Get with go-redis's default
// retries), beside the SDK's one Warn when its breaker on the store opens
// (on management.Config.Logger). go-redis's logger belongs to the process
// (redis.SetLogger), not to a client: a library must not set it, and this
// package does not. main does, once, before it makes a client. To route
// the lines into the program's log, main gives redis.SetLogger a value
// whose Printf(ctx, format, args...) logs fmt.Sprintf(format, args...),
// for example to a slog.Logger at Debug (see Example_goRedisLogger); to
// drop them, main calls logging.Disable() of package
// github.com/redis/go-redis/v9/logging.
package redisstore
