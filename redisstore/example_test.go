package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/redisstore"
)

// Example wires one replica of a service: its Client shares the management
// token, and its Authenticator the verdicts on End User tokens, with the
// other replicas, through one Redis. (Compiled, not run: it needs a Redis;
// the package's tests run the same wiring against a real redis-server.)
func Example() {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true, // honour the SDK's deadline on each operation
	})
	store := redisstore.New(rdb)
	cfg.SharedStore = store // one management token for the fleet
	client, err := management.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: store} // one check per End User token for the fleet
	api := http.NewServeMux()
	log.Fatal(http.ListenAndServe(":8080", auth.Handler(api)))
}

// Example_cluster wires a replica to a Redis Cluster: only the client
// changes. The Store asks the cluster client to reload its map of the slots
// when an operation fails, so that after a failover the fleet reaches the
// promoted master at once. (Compiled, not run: the package's tests run the
// same wiring on a Cluster of 3 masters and 3 replicas, and kill a master.)
func Example_cluster() {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	store := clusterStore("redis-1:6379", "redis-2:6379", "redis-3:6379")
	cfg.SharedStore = store
	client, err := management.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	auth := &management.Authenticator{Client: client, SharedStore: store}
	api := http.NewServeMux()
	log.Fatal(http.ListenAndServe(":8080", auth.Handler(api)))
}

// clusterStore returns a store on the Redis Cluster that addrs lead to.
func clusterStore(addrs ...string) *redisstore.Store {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true, // honour the SDK's deadline on each operation
	})
	return redisstore.New(rdb) // reloads the cluster's map when an operation fails
}

// goRedisLog is a go-redis logger (see redis.SetLogger) that writes each
// of go-redis's lines to a slog.Logger, at Debug: the SDK's own Warn, when
// its breaker on the store opens, stays the signal of a Redis outage, and
// go-redis's dial errors are there when the level shows them.
type goRedisLog struct{ logger *slog.Logger }

// Printf logs go-redis's line, formatted as go-redis formats it.
func (g goRedisLog) Printf(ctx context.Context, format string, v ...any) {
	g.logger.DebugContext(ctx, fmt.Sprintf(format, v...), "logger", "go-redis")
}

// Example_goRedisLogger routes go-redis's own log lines, which it writes
// to standard error by default, into the program's slog.Logger. go-redis
// has one logger for the whole process, which a library must leave alone:
// main sets it, once, before it makes a client. To drop the lines instead,
// main calls logging.Disable() (package github.com/redis/go-redis/v9/logging).
func Example_goRedisLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level:       slog.LevelDebug,
		ReplaceAttr: withoutTime, // the same output at each run, for the example
	}))
	redis.SetLogger(goRedisLog{logger}) // in main

	rdb := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true,
		Dialer:                down, // a Redis that is down, for the example
		DialerRetries:         1,
		MaxRetries:            -1,
	})
	defer rdb.Close()
	store := redisstore.New(rdb, redisstore.WithLogger(logger))
	_, err := store.Get(context.Background(), "key")
	fmt.Println(err)
	// Output:
	// level=DEBUG msg="redis: connection pool: failed to dial after 1 attempts: connection refused" logger=go-redis
	// redisstore: get: connection refused
}

// down is a go-redis Dialer whose server refuses every connection.
func down(context.Context, string, string) (net.Conn, error) {
	return nil, syscall.ECONNREFUSED
}

// withoutTime drops the time from slog's records.
func withoutTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
