// Package managementtest provides an in-memory implementation of the
// management API, for tests of code that uses package management, in the
// manner of net/http/httptest.
//
// NewServer starts a fake service on a loopback address; NewInMemoryServer
// makes one that listens nowhere and is reached through Server.Transport,
// which is what a testing/synctest bubble needs. Either way, seed it,
// point a client at it and inspect it afterwards:
//
//	srv := managementtest.NewServer()
//	defer srv.Close()
//	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1", Email: management.Ptr("ada@example.com")}})
//	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1", Name: "Kitchen sensor"}})
//
//	client := srv.Client() // or management.NewClient(srv.Config()) after changing the Config
//	// ... run the code under test with client ...
//
//	thing, _ := srv.Thing("t-1") // read back what the code changed
//	n := srv.Requests(managementtest.RouteUpdateThing)
//
// # What it implements
//
// Every endpoint and rule of the service's specification:
//
//   - The token endpoint takes Basic credentials (Server.ClientID and
//     Server.ClientSecret) and the JSON grant {"grant_type":
//     "client_credentials"}, answers 401 invalid_client and 400
//     unsupported_grant_type in the {error, error_description} shape, and
//     issues Bearer tokens that expire after the token lifetime
//     (WithTokenLifetime, ExpireTokens). Every other endpoint requires a live
//     token and answers 401 AUTH.UNAUTHORIZED with an empty message
//     otherwise.
//   - Every endpoint but the token one also requires Content-Type
//     application/json, bodiless GET and DELETE requests included (400
//     COMMON.REQUEST_VALIDATION otherwise), as the spec asks; the token
//     endpoint reads a JSON body whatever its Content-Type.
//   - The Users and Things lists are ordered by creation time, descending,
//     or by order_by=updatedAt, with order_direction asc or desc; items
//     created in the same millisecond keep their order of creation. Pages
//     hold WithPageSize items and link to the next one with an opaque page
//     token. An unsupported order_by or order_direction, an invalid page and
//     page combined with order parameters are answered 400
//     COMMON.REQUEST_VALIDATION. A listing is a snapshot taken by its first
//     page: items added later are not shown midway and an updated item keeps
//     its place, so no item is skipped or repeated. Pages show each item's
//     current fields. The links of the 1000 most recent listings longer
//     than a page stay valid; older ones, and every link after ForgetPages,
//     are invalid pages. A query string that cannot be parsed is answered
//     as an invalid page.
//   - Single reads answer every field, or 404 COMMON.ENTITY_NOT_FOUND
//     "User <id> was not found" / "Thing <id> was not found".
//   - PATCH merges statuses by name and custom settings by key; the unset
//     marker (WithUnsetMarker) removes a key. updated_at moves forward on
//     every update, by at least a millisecond, even on a frozen clock.
//   - Associate answers 201 with a Thing it creates (with an empty name) and
//     200 with an existing one, whose model and firmware version take the
//     values sent; the association shows on both the User and the Thing.
//     All three body fields are required (400 otherwise); an unknown User
//     is 404. Disassociate answers 200 with an empty body, or 404 for an
//     unknown User, Thing or association.
//   - Authenticate validates "Bearer <token>" for tokens from
//     IssueEndUserToken (role APPUSER) and for live management tokens (role
//     SERVICE_ACCOUNT, user_id the client id); any other value is answered 200 with
//     is_token_valid false and a to_client_response of 401
//     auth.unauthorized. A body without access_token is 400.
//
// Every JSON answer has Content-Type application/json and timestamps in
// the wire format. Behaviour the specification leaves open (the name of a
// Thing created by associate, errors of update, associate and disassociate
// beyond the above) is documented where it is chosen.
//
// # Seeding and inspection
//
// AddUser and AddThing seed; User, Thing and Requests inspect;
// IssueEndUserToken and RevokeEndUserToken manage End User tokens. Seeding
// methods panic on misuse (an empty or duplicate id, an unknown associated
// User or Thing), as test helpers do.
//
// The tokens the server issues are random unless WithManagementToken and
// WithEndUserTokens choose them: a test of what the service's messages
// show can then use tokens of a few bytes (the SDK redacts a credential
// under 8 bytes only where it stands alone, and keeps the rest of every
// text):
//
//	srv := managementtest.NewServer(
//		managementtest.WithManagementToken("qzx7k"),
//		managementtest.WithEndUserTokens("vbn4w", "plm9r"))
//	tok := srv.IssueEndUserToken("u-1") // "vbn4w"
//
// # Faults
//
// FailNext answers the next requests of a Route with an error status in
// the route's error shape and an optional Retry-After; DelayNext delays
// them. FailNextWith answers with any Response: any status, headers and
// raw body (an HTML page, broken JSON, a 3xx redirect with a Location), or
// an answer cut off by a closed connection, before any answer or midway
// through the body (Response.Cut). FailNextFor does the same for the
// requests of one id only. The Route constants name the endpoints; they
// are the net/http.ServeMux patterns the fake routes with. A path that is
// no endpoint is answered 404, another method on an endpoint's path 405
// with an Allow header; paths are never redirected.
//
// # Inspection
//
// Log returns the requests received, decoded (route, path values, query,
// header, JSON body), with credentials redacted. Reset empties the server
// between tests that share it.
//
// # Recording a service, and the fake's fidelity
//
// A test can also run against a recording of the real service: a
// cassette, made once against a sandbox and committed, that CI replays
// with no network. UseCassette does either, as the MANAGEMENTTEST_RECORD
// environment variable says (EnvRecord): replay only by default, record
// the missing cassettes with "once".
//
//	cfg := managementtest.UseCassette(t, "testdata/cassettes/sync.json", managementtest.RecordOptions{
//		AllowedBaseURLs: []string{"https://sandbox.example.com"},
//	})
//	client, err := management.NewClient(cfg)
//
// NewRecorder and NewReplayer are the two transports underneath. A
// Recorder refuses a base URL not named in RecordOptions.AllowedBaseURLs,
// and the requests that change data unless RecordOptions.AllowWrites; the
// cassette holds no credential (see Cassette), and RecordOptions.Scrub
// may replace personal data. A Replayer answers a request it does not
// hold with a 501 that names it and the nearest one it does.
//
// CheckFidelity (and VerifyFidelity in a test) seeds a fake with what a
// cassette's answers show, sends it the cassette's requests, and reports
// where the fake answers otherwise than the service did, as a table to
// paste into an issue.
//
// # Time
//
// The server reads time.Now, so inside a testing/synctest bubble token
// expiry and injected latency follow the bubble's fake clock. Use
// NewInMemoryServer there: the client then calls the handler directly and
// no goroutine waits on the network.
//
// A Server is safe for concurrent use by multiple goroutines.
package managementtest
