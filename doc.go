// Package management is a client for the Device and User Management API: it
// lists and reads Users and Things, updates Things, associates Things with
// Users, and validates End User access tokens.
//
// # Quick start
//
// Create one Client per service and share it; it is safe for concurrent use.
//
//	client, err := management.NewClient(management.Config{
//		BaseURL:      "https://api.example.com",
//		ClientID:     os.Getenv("MANAGEMENT_CLIENT_ID"),
//		ClientSecret: os.Getenv("MANAGEMENT_CLIENT_SECRET"),
//	})
//	if err != nil {
//		return err
//	}
//	user, err := client.Users.Get(ctx, "u-1")
//
// # Authentication
//
// The Client exchanges its client id and secret for a short-lived management
// token (the client-credentials flow), caches it, and refreshes it shortly
// before it expires. However many goroutines need a token at once, one token
// request is made, and while it is under way calls keep using the current,
// unexpired token. When the service answers 401 AUTH.UNAUTHORIZED the Client
// drops the token, fetches a new one and replays the request once. To manage
// tokens yourself, set Config.TokenSource.
//
// A failing refresh does not fail calls while the current token is valid; it
// is retried with a doubling wait from one second and logged once per run of
// failures. A token that cannot be sent in a header, from the token endpoint
// or from Config.TokenSource, is refused before any request carries it.
// Config, Token and Client redact the secret and tokens under every fmt verb
// and in slog and JSON.
//
// # Pagination
//
// List returns an iterator that follows next_page links until the last page:
//
//	for user, err := range client.Users.List(ctx, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(user.ID)
//	}
//
// ListPage returns one page and the link to the next, which
// ListOptions.NextPage resumes from, for example in a later request of your
// own API. A next_page link that is not a path on the base URL is never
// followed (ErrInvalidPageLink), so the management token cannot travel to
// another host.
//
// # Errors
//
// Answers of the service other than 2xx are *APIError ({reason,
// error_message}) or, from the token endpoint, *TokenError ({error,
// error_description}). Both answer errors.Is for the sentinel their reason
// stands for:
//
//	if errors.Is(err, management.ErrNotFound) { ... }
//
// A failure without an answer is a *TransportError; a 2xx answer that cannot
// be decoded is a *DecodeError. Arguments are checked before anything is
// sent: a bad one gives ErrInvalidArgument. No error text holds a token, the
// client secret or a query string.
//
// Redirects are never followed: a 3xx is an *APIError matching
// ErrMisconfigured, as is an answer of the token endpoint that is not the
// token endpoint's (a 404 or an HTML page: check Config.BaseURL and
// Config.PathPrefix). So credentials and request bodies go only to
// Config.BaseURL, and no write is turned into another request.
//
// # Retries and logging
//
// Connection failures and 429, 500, 502, 503 and 504 answers are retried
// (Config.MaxRetries, 4 by default) with exponential backoff and full jitter,
// honouring Retry-After; every operation of this API is safe to repeat. The
// caller's context bounds the whole call: a wait that would pass its deadline
// is not taken. Config.Logger receives a record per attempt and per retry
// decision, never headers, bodies, tokens or query strings.
//
// # Many replicas
//
// With Config.SharedStore and Authenticator.SharedStore (package redisstore
// implements SharedStore on Redis), the replicas of a service fetch one
// management token per token lifetime and ask the service once about each
// End User token. What is stored is sealed with keys derived from the client
// secret; a store that fails never fails a call.
//
// # Observability
//
// Config.Observer receives hooks, in the manner of net/http/httptrace, as
// each operation starts and ends (method, route template, ids apart, final
// status, attempts, retry wait), for each retry, and for each Authenticator
// check. Package github.com/serviceconnect/management/otel implements it
// with OpenTelemetry.
//
// # Testing
//
// Package managementtest is an in-memory fake of the whole API, in the manner
// of net/http/httptest: start one in a test, seed it, and use its Client.
//
// # End User tokens
//
// Client.Authenticate asks the service whether an End User access token is
// valid; errors it returns never quote the token. Authenticator puts that
// check in front of net/http handlers, failing closed, with a bounded cache,
// a bound on calls in flight (MaxConcurrentChecks), a bound on each check's
// time (Timeout), and Forget for sign-out; its refusals are listed on
// Authenticator.
package management
