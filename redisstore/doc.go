// Package redisstore implements management.SharedStore on Redis (6 or
// newer), Valkey, or a Redis Cluster, through go-redis, so that the replicas
// of a service share one management token and the verdicts on End User
// tokens:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	store := redisstore.New(rdb)
//	client, err := management.NewClient(management.Config{
//		BaseURL: baseURL, ClientID: id, ClientSecret: secret,
//		SharedStore: store,
//	})
//	auth := &management.Authenticator{Client: client, SharedStore: store}
//
// What the SDK stores is sealed before it reaches Redis (see
// management.SharedStore); this package stores bytes under keys with a
// prefix of its own (WithPrefix), each with a time to live.
//
// Every operation touches one key, so it works unchanged on a Cluster. A
// lease (TryLock) is a SET NX PX of a random value, released by a script
// that deletes the key only while it still holds that value.
package redisstore
