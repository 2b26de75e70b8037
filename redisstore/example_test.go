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
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
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
