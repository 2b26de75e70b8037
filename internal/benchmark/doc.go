// Package benchmark measures what the management SDK costs over the wire it
// speaks. It holds only tests and benchmarks; nothing imports it.
//
// Every benchmark runs the SDK (impl=sdk) and a hand-written baseline
// (impl=baseline: net/http and encoding/json, the same requests and headers,
// one token fetched up front, bodies decoded into equivalent structs with
// time.Time timestamps and json.Number custom settings) against the same
// loopback server (httptest, 127.0.0.1) in the same process. The server
// answers from pre-encoded bodies, so its own cost is small and the same for
// both sides; allocs/op counts the server's allocations too, equally.
// The sub-benchmark names pair under benchstat -col /impl. The loopback
// benchmarks warm their server first (warmBenchServer), and runImpls runs
// the baseline first when BENCH_BASELINE_FIRST=1, which scripts/bench.sh
// sets every other round: whichever implementation ran first used to pay
// for warming the server and the heap, a few per cent on Users.Get.
//
//   - BenchmarkUsersGet: one GET /users/{id} round trip, a SingleUser of
//     about 1.5 KB with consents, custom settings and associated Things.
//   - BenchmarkUsersGetInProcess: the same call through a transport that
//     answers in the process from the same bytes, without a connection:
//     the client's own cost, without the network's and the server's noise.
//     TestUsersGetAllocs holds Users.Get to at most usersGetExtraAllocs
//     allocations more than the baseline on that path, in every `go test`
//     run without -race (.ci/run runs it so, under both Go releases).
//   - BenchmarkUsersList: ranging over every User of a generated data set
//     in pages of 100, following next_page links; ns/user is the time per
//     User. users=10000 always; users=100000 only with BENCH_LARGE=1 or a
//     -bench pattern that names it (for example
//     -bench 'UsersList/users=100000').
//   - BenchmarkTokenStorm: 1 000 goroutines calling Users.Get at once on a
//     cold client (token=cold) and on a client whose 1 s token has just
//     expired (token=expired). token-reqs/op must be 1 and failures/op 0 for
//     the SDK; the baseline never fetches a token. Expired clients are warmed
//     32 at a time and their lifetime slept out once per batch, outside the
//     timer. TestTokenStorm asserts the counts in every `go test` run.
//   - BenchmarkAuthenticatorCheck: Authenticator.Check of one End User token
//     with the cache on (warm; calls/op must be 0) and off (one POST
//     /authenticate per check). The baseline's cache is a map under a mutex.
//   - BenchmarkCheckFloor: the header's SHA-256 and one map lookup, the
//     floor a cached Check is held to (at most 2x; scripts/bench.sh prints
//     the ratio).
//   - BenchmarkListHeap: heap-bytes is the most heap a range over every User
//     holds: HeapInuse after runtime.GC at each page boundary, less HeapInuse
//     after runtime.GC before the range (the server's pre-encoded pages are
//     left out); live-bytes likewise from the live heap, which counts objects
//     rather than spans. Neither may grow with the number of pages;
//     TestListHeapFlat asserts that 100 000 Users hold less than twice the
//     HeapInuse of 10 000, and at most 24 KiB more live heap (the
//     repeated-link guard's 8 bytes per page). The time of this benchmark
//     is the GCs' and means nothing.
//
// scripts/bench.sh runs them all with -count 6 and prints SDK against
// baseline with benchstat. internal/benchmark/peers, a module of its own,
// compares the SDK with what users would pick instead (a client generated
// by oapi-codegen with x/oauth2, and a hand-written one);
// scripts/bench-peers.sh runs it.
package benchmark
