package redisstore_test

import (
	"log"
	"net/http"

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
