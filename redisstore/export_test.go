package redisstore

import "testing"

// StartRedis starts a redis-server on a free loopback port for the examples
// of package redisstore_test, stopped when t ends, and returns its address.
// Without redis-server, t is skipped (or fails under
// MANAGEMENT_REQUIRE_SERVERS), as the package's own tests are.
func StartRedis(t testing.TB) string {
	return startRedis(t).Addr
}
