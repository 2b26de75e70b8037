// Package peers measures the management SDK against what a Go team would
// use instead, in one process against one loopback server: the client
// oapi-codegen v2 generates from the API's OpenAPI document (package
// peerapi, authorised by golang.org/x/oauth2's client credentials flow
// through a one-request shim that sends the grant as JSON), and a
// hand-written client on net/http and encoding/json. It holds only that
// generated package, benchmarks and tests, in a module of its own that is
// never released.
//
// The benchmarks (client=sdk, client=generated, client=raw):
//
//   - BenchmarkUsersGet: one GET /users/{id}, a SingleUser of about 1.5 KB,
//     through a plain http.Client and through one with a Timeout.
//   - BenchmarkUsersList: ranging over 100 000 Users (10 000 with -short)
//     in pages of 100 with default options; client=sdk-prefetch sets
//     ListOptions.Prefetch. ns/user and B/user are per User.
//   - BenchmarkColdStorm: 1 000 goroutines calling Users.Get at once on a
//     client without a token; each storm must make exactly one token request.
//   - BenchmarkAuthenticate: one POST /authenticate of an End User token.
//
// The probes (probes_test.go) record how the three clients behave where
// they differ: a 404, a token refused with 401, a 503, a 307 to another
// port, a null body, an integer above 2^53 in custom settings, a timestamp
// sent, the client printed with %v, and the lines of code each task takes.
//
// scripts/bench-peers.sh runs the benchmarks in interleaved rounds and
// prints the ratios between the columns.
package peers
