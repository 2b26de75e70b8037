package management

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// authnScript answers the authenticate endpoint by the access_token it is
// sent (an invalid answer for tokens it does not know) and counts the calls.
// When gate is set, every call waits for it to be closed first.
type authnScript struct {
	t       testing.TB
	mu      sync.Mutex
	answers map[string]httpmock.Responder
	calls   map[string]int
	gate    chan struct{}
}

func (s *authnScript) respond(req *http.Request) (*http.Response, error) {
	testMethod(s.t, req, "POST")
	testAPIHeaders(s.t, req)
	var body authenticateRequest
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.calls[body.AccessToken]++
	answer, gate := s.answers[body.AccessToken], s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if answer == nil {
		answer = jsonResponder(http.StatusOK, authnInvalid())
	}
	return answer(req)
}

// callsFor is the number of calls made for token; "" sums them all.
func (s *authnScript) callsFor(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != "" {
		return s.calls[token]
	}
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// authnSetup returns setup's client, its authenticate endpoint answered by
// a script of answers.
func authnSetup(t testing.TB, cfg Config, answers map[string]httpmock.Responder) (*Client, *authnScript) {
	t.Helper()
	c, mt := setup(t, cfg)
	s := &authnScript{t: t, answers: answers, calls: map[string]int{}}
	mt.RegisterResponder(http.MethodPost, authnEndpoint, s.respond)
	return c, s
}

// authnAnswers is the script of the usual cases.
func authnAnswers() map[string]httpmock.Responder {
	return map[string]httpmock.Responder{
		"Bearer eu-alice":   jsonResponder(http.StatusOK, authnValid("u-alice", RoleAppUser)),
		"Bearer eu-bob":     jsonResponder(http.StatusOK, authnValid("u-bob", RoleAppUser)),
		"Bearer mgmt-token": jsonResponder(http.StatusOK, authnValid("sa-1", RoleServiceAccount)),
	}
}

// authnResult is what a request through Authenticator.Handler came to.
type authnResult struct {
	status  int
	header  http.Header
	body    any // decoded JSON, or the text "next" when next ran
	nextRan bool
	user    *EndUser
}

// authnServe sends one request with the given Authorization header ("" for
// none) through a.Handler.
func authnServe(t testing.TB, ctx context.Context, a *Authenticator, authorization string) authnResult {
	t.Helper()
	var res authnResult
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res.nextRan = true
		res.user, _ = EndUserFromContext(r.Context())
		_, _ = w.Write([]byte("next"))
	})
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/things", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	a.Handler(next).ServeHTTP(w, r)
	res.status, res.header = w.Code, w.Header()
	if res.nextRan || w.Body.Len() == 0 {
		res.body = w.Body.String()
		return res
	}
	if err := json.Unmarshal(w.Body.Bytes(), &res.body); err != nil {
		t.Fatalf("refusal body %q is not JSON: %v", w.Body.String(), err)
	}
	return res
}

// authnBody is a refusal body as decoded JSON.
func authnBody(code int, reason, message string) map[string]any {
	return map[string]any{"error_code": float64(code), "reason": reason, "error_message": message}
}

var (
	authnMissingBody     = authnBody(401, "auth.unauthorized", "An access token must be provided in the Authorization header.")
	authnForbiddenBody   = authnBody(403, "auth.forbidden", "This access token is not allowed here.")
	authnUnavailableBody = authnBody(503, "auth.unavailable", "The access token could not be checked; try again later.")
	authnServiceBody     = authnBody(401, "auth.unauthorized", "Invalid access token")
)

// authnInvalidWith is an invalid answer whose to_client_response has the given code.
func authnInvalidWith(code int, body map[string]any) map[string]any {
	return map[string]any{"is_token_valid": false, "to_client_response": map[string]any{"http_code": code, "http_body": body}}
}

func TestAuthenticatorCases(t *testing.T) {
	serviceBody := map[string]any{"error_code": 401, "reason": "auth.unauthorized", "error_message": "Invalid access token"}
	tests := []struct {
		name       string
		header     string
		answer     httpmock.Responder // nil: the endpoint must not be called
		wantStatus int
		wantBody   any
		wantUser   *EndUser // non-nil: next runs with this End User
		wantCalls  int
	}{
		{name: "no header", header: "", wantStatus: 401, wantBody: authnMissingBody},
		{name: "blank header", header: "  \t ", wantStatus: 401, wantBody: authnMissingBody},
		{name: "not UTF-8", header: "Bearer eu-\xff", wantStatus: 401,
			wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid.")},
		// Not "<type> <token>": Authenticate would refuse to send it, and
		// no service takes it; an invalid token, not an outage.
		{name: "no type", header: "eu-token-1", wantStatus: 401,
			wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid.")},
		{name: "type alone", header: "Bearer", wantStatus: 401,
			wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid.")},
		{name: "nothing after the type", header: "Bearer  ", wantStatus: 401,
			wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid.")},
		{name: "empty type", header: " eu-token-1", wantStatus: 401,
			wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid.")},
		{name: "valid APPUSER", header: "Bearer eu-1", answer: jsonResponder(200, authnValid("u-1", RoleAppUser)),
			wantStatus: 200, wantBody: "next", wantUser: &EndUser{ID: "u-1", Role: RoleAppUser}, wantCalls: 1},
		{name: "SERVICE_ACCOUNT", header: "Bearer mgmt-token", answer: jsonResponder(200, authnValid("sa-1", RoleServiceAccount)),
			wantStatus: 403, wantBody: authnForbiddenBody, wantCalls: 1},
		{name: "SERVICE_ACCOUNT without user_id", header: "Bearer mgmt-token",
			answer:     rawResponder(200, "application/json", `{"is_token_valid":true,"user_id":null,"user_role":"SERVICE_ACCOUNT"}`),
			wantStatus: 403, wantBody: authnForbiddenBody, wantCalls: 1},
		{name: "other role", header: "Bearer eu-1", answer: jsonResponder(200, authnValid("u-1", "ADMIN")),
			wantStatus: 403, wantBody: authnForbiddenBody, wantCalls: 1},
		{name: "valid without role", header: "Bearer eu-1", answer: rawResponder(200, "application/json", `{"is_token_valid":true,"user_id":"u-1"}`),
			wantStatus: 403, wantBody: authnForbiddenBody, wantCalls: 1},
		{name: "role in other case", header: "Bearer eu-1", answer: jsonResponder(200, authnValid("u-1", "appuser")),
			wantStatus: 403, wantBody: authnForbiddenBody, wantCalls: 1},
		{name: "invalid relayed", header: "Bearer eu-relayed-1", answer: jsonResponder(200, authnInvalid()),
			wantStatus: 401, wantBody: authnServiceBody, wantCalls: 1},
		{name: "invalid with a 4xx relayed", header: "Bearer eu-relayed-1",
			answer:     jsonResponder(200, authnInvalidWith(419, map[string]any{"error_code": 419, "reason": "auth.session_expired", "error_message": "Session expired"})),
			wantStatus: 419, wantBody: authnBody(419, "auth.session_expired", "Session expired"), wantCalls: 1},
		{name: "invalid with a 500 code", header: "Bearer eu-relayed-1", answer: jsonResponder(200, authnInvalidWith(500, serviceBody)),
			wantStatus: 401, wantBody: authnServiceBody, wantCalls: 1},
		{name: "invalid with a 200 code", header: "Bearer eu-relayed-1", answer: jsonResponder(200, authnInvalidWith(200, serviceBody)),
			wantStatus: 401, wantBody: authnServiceBody, wantCalls: 1},
		// A short token: the service's texts are relayed all the same.
		{name: "invalid, short token relayed", header: "Bearer eu-1", answer: jsonResponder(200, authnInvalid()),
			wantStatus: 401, wantBody: authnServiceBody, wantCalls: 1},
		{name: "invalid without to_client_response", header: "Bearer eu-1", answer: rawResponder(200, "application/json", `{"is_token_valid":false}`),
			wantStatus: 401, wantBody: authnBody(401, "auth.unauthorized", "The access token is invalid."), wantCalls: 1},
		{name: "service failing after retries", header: "Bearer eu-1",
			answer:     jsonResponder(503, map[string]any{"reason": "SERVICE.UNAVAILABLE", "error_message": ""}),
			wantStatus: 503, wantBody: authnUnavailableBody, wantCalls: 5},
		{name: "service unreachable", header: "Bearer eu-1", answer: httpmock.NewErrorResponder(errors.New("connection refused")),
			wantStatus: 503, wantBody: authnUnavailableBody, wantCalls: 5},
		{name: "management token refused", header: "Bearer eu-1",
			answer:     jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""}),
			wantStatus: 503, wantBody: authnUnavailableBody, wantCalls: 2},
		{name: "service says 400", header: "Bearer eu-1",
			answer:     jsonResponder(400, map[string]any{"reason": ReasonRequestValidation, "error_message": "no token"}),
			wantStatus: 503, wantBody: authnUnavailableBody, wantCalls: 1},
		{name: "valid without user_id", header: "Bearer eu-1", answer: rawResponder(200, "application/json", `{"is_token_valid":true,"user_role":"APPUSER"}`),
			wantStatus: 503, wantBody: authnUnavailableBody, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := map[string]httpmock.Responder{}
			if tt.answer != nil {
				answers[tt.header] = tt.answer
			}
			c, script := authnSetup(t, Config{}, answers)
			a := &Authenticator{Client: c}
			got := authnServe(t, context.Background(), a, tt.header)

			if got.status != tt.wantStatus {
				t.Errorf("status = %d, want %d", got.status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, got.body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got.nextRan != (tt.wantUser != nil) {
				t.Errorf("next ran = %t, want %t", got.nextRan, tt.wantUser != nil)
			}
			if diff := cmp.Diff(tt.wantUser, got.user); diff != "" {
				t.Errorf("EndUserFromContext (-want +got):\n%s", diff)
			}
			if n := script.callsFor(""); n != tt.wantCalls {
				t.Errorf("%d authenticate calls, want %d", n, tt.wantCalls)
			}
			if !got.nextRan {
				if ct := got.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if wa := got.header.Get("WWW-Authenticate"); (got.status == 401) != (wa == "Bearer") {
					t.Errorf("status %d with WWW-Authenticate %q", got.status, wa)
				}
				if ra := got.header.Get("Retry-After"); ra != "" {
					t.Errorf("status %d with Retry-After %q, want none (only a refusal over MaxConcurrentChecks has one)", got.status, ra)
				}
			}
		})
	}
}

// TestAuthenticatorErrors checks that Check and ErrorHandler tell the cases
// apart with errors.Is and errors.As, and that ErrorHandler replaces the
// default answers.
func TestAuthenticatorErrors(t *testing.T) {
	answers := authnAnswers()
	answers["Bearer eu-down"] = jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})
	c, _ := authnSetup(t, Config{}, answers)

	var handled error
	a := &Authenticator{Client: c, ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
		handled = err
		w.WriteHeader(http.StatusTeapot)
	}}
	type verdict struct {
		Missing, Invalid, Forbidden, Unavailable, APIError bool
		Relay                                              *ClientResponse
	}
	classify := func(err error) verdict {
		var ite *InvalidTokenError
		var ae *APIError
		v := verdict{
			Missing:     errors.Is(err, ErrMissingToken),
			Invalid:     errors.Is(err, ErrInvalidToken) && errors.As(err, &ite),
			Forbidden:   errors.Is(err, ErrForbiddenRole),
			Unavailable: errors.Is(err, ErrAuthenticationUnavailable),
			APIError:    errors.As(err, &ae) && ae.StatusCode == 401,
		}
		if ite != nil {
			v.Relay = ite.Response
		}
		return v
	}
	tests := []struct {
		header string
		want   verdict
	}{
		{"", verdict{Missing: true}},
		{"Bearer eu-unknown", verdict{Invalid: true, Relay: &ClientResponse{HTTPCode: 401,
			HTTPBody: ClientErrorBody{ErrorCode: 401, Reason: "auth.unauthorized", ErrorMessage: "Invalid access token"}}}},
		{"Bearer mgmt-token", verdict{Forbidden: true}},
		{"Bearer eu-down", verdict{Unavailable: true, APIError: true}},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		user, err := a.Check(r)
		if user != nil {
			t.Errorf("Check(%q) let %+v through", tt.header, user)
		}
		if diff := cmp.Diff(tt.want, classify(err)); diff != "" {
			t.Errorf("Check(%q) error %v (-want +got):\n%s", tt.header, err, diff)
		}

		handled = nil
		res := authnServe(t, context.Background(), a, tt.header)
		if res.status != http.StatusTeapot || res.nextRan {
			t.Errorf("Handler(%q): status %d, next ran %t; want ErrorHandler's 418", tt.header, res.status, res.nextRan)
		}
		if diff := cmp.Diff(tt.want, classify(handled)); diff != "" {
			t.Errorf("ErrorHandler(%q) got %v (-want +got):\n%s", tt.header, handled, diff)
		}
	}

	user, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice"))
	if err != nil || !cmp.Equal(user, &EndUser{ID: "u-alice", Role: RoleAppUser}) {
		t.Errorf("Check(alice) = %+v, %v", user, err)
	}
}

func authnRequest(ctx context.Context, authorization string) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.Header.Set("Authorization", authorization)
	return r
}

func TestAuthenticatorServiceAccountNeverReachesNext(t *testing.T) {
	c, script := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c}
	for range 3 { // uncached, then cached
		res := authnServe(t, context.Background(), a, "Bearer mgmt-token")
		if res.nextRan || res.status != http.StatusForbidden {
			t.Fatalf("SERVICE_ACCOUNT: status %d, next ran %t", res.status, res.nextRan)
		}
	}
	if n := script.callsFor("Bearer mgmt-token"); n != 1 {
		t.Errorf("%d calls, want 1 (the refusal is cached)", n)
	}
}

// authnCheckAll runs n concurrent checks of header and returns their results.
func authnCheckAll(a *Authenticator, header string, n int) ([]*EndUser, []error) {
	users, errs := make([]*EndUser, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { users[i], errs[i] = a.Check(authnRequest(context.Background(), header)) })
	}
	wg.Wait()
	return users, errs
}

func TestAuthenticatorOneCallThenCached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		script.gate = make(chan struct{})
		a := &Authenticator{Client: c, CacheTTL: 10 * time.Second}

		var users []*EndUser
		var errs []error
		done := make(chan struct{})
		go func() {
			users, errs = authnCheckAll(a, "Bearer eu-alice", 50)
			close(done)
		}()
		synctest.Wait() // all 50 wait, one call is at the gate
		if n := script.callsFor(""); n != 1 {
			t.Fatalf("%d calls while 50 checks wait, want 1", n)
		}
		close(script.gate)
		<-done
		want := &EndUser{ID: "u-alice", Role: RoleAppUser}
		for i := range users {
			if errs[i] != nil || !cmp.Equal(users[i], want) {
				t.Fatalf("check %d = %+v, %v; want %+v", i, users[i], errs[i], want)
			}
		}
		users[0].ID = "changed by a handler" // each caller has its own copy

		time.Sleep(10*time.Second - time.Nanosecond)
		users, errs = authnCheckAll(a, "Bearer eu-alice", 50)
		if n := script.callsFor(""); n != 1 {
			t.Errorf("%d calls within the TTL, want 1", n)
		}
		if errs[0] != nil || !cmp.Equal(users[0], want) {
			t.Errorf("cached check = %+v, %v; want %+v", users[0], errs[0], want)
		}

		time.Sleep(time.Nanosecond)
		authnCheckAll(a, "Bearer eu-alice", 50)
		if n := script.callsFor(""); n != 2 {
			t.Errorf("%d calls after the TTL, want 2", n)
		}
	})
}

func TestAuthenticatorDefaultTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		a := &Authenticator{Client: c}
		check := func() {
			if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice")); err != nil {
				t.Fatalf("Check: %v", err)
			}
		}
		check()
		time.Sleep(30*time.Second - time.Nanosecond)
		check()
		if n := script.callsFor(""); n != 1 {
			t.Errorf("%d calls within 30 s, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		check()
		if n := script.callsFor(""); n != 2 {
			t.Errorf("%d calls after 30 s, want 2", n)
		}
	})
}

func TestAuthenticatorInvalidExpiresSooner(t *testing.T) {
	tests := []struct {
		ttl, invalidTTL time.Duration
	}{
		{30 * time.Second, 5 * time.Second},
		{2 * time.Second, 2 * time.Second}, // never longer than CacheTTL
	}
	for _, tt := range tests {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, script := authnSetup(t, Config{}, authnAnswers())
				a := &Authenticator{Client: c, CacheTTL: tt.ttl}
				checkBoth := func() {
					if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice")); err != nil {
						t.Fatalf("Check(valid): %v", err)
					}
					if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-bad")); !errors.Is(err, ErrInvalidToken) {
						t.Fatalf("Check(invalid) = %v, want ErrInvalidToken", err)
					}
				}
				checkBoth()
				time.Sleep(tt.invalidTTL - time.Nanosecond)
				checkBoth()
				if got := [2]int{script.callsFor("Bearer eu-alice"), script.callsFor("Bearer eu-bad")}; got != [2]int{1, 1} {
					t.Errorf("calls (valid, invalid) before the invalid TTL = %v, want [1 1]", got)
				}
				time.Sleep(time.Nanosecond)
				checkBoth()
				wantValid := 1
				if tt.invalidTTL == tt.ttl {
					wantValid = 2
				}
				if got := [2]int{script.callsFor("Bearer eu-alice"), script.callsFor("Bearer eu-bad")}; got != [2]int{wantValid, 2} {
					t.Errorf("calls (valid, invalid) after the invalid TTL = %v, want [%d 2]", got, wantValid)
				}
			})
		})
	}
}

func TestAuthenticatorNoCache(t *testing.T) {
	c, script := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c, CacheTTL: -1}
	for range 3 {
		if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice")); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-bad")); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Check(invalid) = %v", err)
		}
	}
	if n := script.callsFor(""); n != 6 {
		t.Errorf("%d calls, want 6 (nothing cached)", n)
	}
}

func TestAuthenticatorFailuresNotCached(t *testing.T) {
	c, script := authnSetup(t, Config{MaxRetries: -1}, nil)
	failing := true
	script.answers = map[string]httpmock.Responder{"Bearer eu-alice": func(req *http.Request) (*http.Response, error) {
		if failing {
			return nil, errors.New("connection reset")
		}
		return jsonResponder(http.StatusOK, authnValid("u-alice", RoleAppUser))(req)
	}}
	a := &Authenticator{Client: c}
	res := authnServe(t, context.Background(), a, "Bearer eu-alice")
	if res.status != http.StatusServiceUnavailable || res.nextRan {
		t.Fatalf("while failing: status %d, next ran %t; want 503", res.status, res.nextRan)
	}
	failing = false
	res = authnServe(t, context.Background(), a, "Bearer eu-alice")
	if res.status != http.StatusOK || !res.nextRan {
		t.Fatalf("after recovery: status %d, next ran %t; want 200", res.status, res.nextRan)
	}
	if n := script.callsFor(""); n != 2 {
		t.Errorf("%d calls, want 2 (the failure was not cached)", n)
	}
}

func TestAuthenticatorCacheBounded(t *testing.T) {
	const size, tokens = 100, 10_000
	c, script := authnSetup(t, Config{}, nil)
	a := &Authenticator{Client: c, CacheSize: size}
	for i := range tokens {
		if _, err := a.Check(authnRequest(context.Background(), fmt.Sprintf("Bearer random-%d", i))); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Check %d = %v, want ErrInvalidToken", i, err)
		}
	}
	a.mu.Lock()
	n, inflight := a.cache.Len(), len(a.inflight)
	newest, _ := a.get(headerDigest(fmt.Sprintf("Bearer random-%d", tokens-1)))
	a.mu.Unlock()
	if n != size || inflight != 0 {
		t.Errorf("cache holds %d entries and %d calls in flight, want %d and 0", n, inflight, size)
	}
	if !errors.Is(newest.err, ErrInvalidToken) {
		t.Errorf("the newest token's verdict = %v, want it cached by its digest", newest.err)
	}
	if calls := script.callsFor(""); calls != tokens {
		t.Errorf("%d calls, want %d", calls, tokens)
	}

	d := &Authenticator{Client: c}
	_, _ = d.Check(authnRequest(context.Background(), "Bearer x"))
	// The default bound: one more entry than it holds evicts one.
	d.mu.Lock()
	for i := range defaultAuthCacheSize + 1 {
		d.cache.Add([sha256.Size]byte{byte(i), byte(i >> 8), 1}, spellings{{}})
	}
	n = d.cache.Len()
	d.mu.Unlock()
	if n != defaultAuthCacheSize {
		t.Errorf("default CacheSize holds %d entries, want %d", n, defaultAuthCacheSize)
	}
}

func TestAuthenticatorUsersNeverMixed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		script.gate = make(chan struct{})
		a := &Authenticator{Client: c}

		type result struct {
			header string
			user   *EndUser
			err    error
		}
		results := make(chan result, 100)
		var wg sync.WaitGroup
		for i := range 100 {
			header := []string{"Bearer eu-alice", "Bearer eu-bob"}[i%2]
			wg.Go(func() {
				u, err := a.Check(authnRequest(context.Background(), header))
				results <- result{header, u, err}
			})
		}
		synctest.Wait()
		if got := [2]int{script.callsFor("Bearer eu-alice"), script.callsFor("Bearer eu-bob")}; got != [2]int{1, 1} {
			t.Errorf("calls in flight (alice, bob) = %v, want one each", got)
		}
		close(script.gate)
		wg.Wait()
		close(results)
		want := map[string]string{"Bearer eu-alice": "u-alice", "Bearer eu-bob": "u-bob"}
		for r := range results {
			if r.err != nil || r.user == nil || r.user.ID != want[r.header] {
				t.Errorf("Check(%q) = %+v, %v; want %s", r.header, r.user, r.err, want[r.header])
			}
		}
		for header, id := range want { // and from the cache
			u, err := a.Check(authnRequest(context.Background(), header))
			if err != nil || u.ID != id {
				t.Errorf("cached Check(%q) = %+v, %v; want %s", header, u, err, id)
			}
		}
	})
}

func TestAuthenticatorContextEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		script.gate = make(chan struct{})
		a := &Authenticator{Client: c}

		ctx, cancel := context.WithCancel(context.Background())
		canceled := make(chan error, 1)
		go func() {
			_, err := a.Check(authnRequest(ctx, "Bearer eu-alice"))
			canceled <- err
		}()
		timedOut := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := a.Check(authnRequest(ctx, "Bearer eu-alice"))
			timedOut <- err
		}()
		patient := make(chan *EndUser, 1)
		go func() {
			u, _ := a.Check(authnRequest(context.Background(), "Bearer eu-alice"))
			patient <- u
		}()
		synctest.Wait()
		cancel()
		if err := <-canceled; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled Check = %v, want context.Canceled", err)
		}
		if err := <-timedOut; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timed out Check = %v, want context.DeadlineExceeded", err)
		}
		close(script.gate) // the call outlives the requests that gave up
		if u := <-patient; u == nil || u.ID != "u-alice" {
			t.Errorf("patient Check = %+v, want u-alice", u)
		}
		if n := script.callsFor(""); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}

func TestAuthenticatorCanceledRequestAnswers503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		script.gate = make(chan struct{})
		defer close(script.gate)
		a := &Authenticator{Client: c}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res := authnServe(t, ctx, a, "Bearer eu-alice")
		if res.status != http.StatusServiceUnavailable || res.nextRan {
			t.Errorf("status %d, next ran %t; want 503", res.status, res.nextRan)
		}
	})
}

func TestAuthenticatorNeverLogsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { testAuthenticatorNeverLogsTokens(t) })
}

// testAuthenticatorNeverLogsTokens runs in a bubble, so that it reads the
// log once every call has ended: a call logs on its own goroutine after its
// waiters are woken (the authenticate breaker opening, here).
func testAuthenticatorNeverLogsTokens(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const secret = "eu-s3cret-token-value"
	answers := map[string]httpmock.Responder{
		"Bearer " + secret + "-valid": jsonResponder(200, authnValid("u-1", RoleAppUser)),
		"Bearer " + secret + "-sa":    jsonResponder(200, authnValid("sa-1", RoleServiceAccount)),
		"Bearer " + secret + "-quoted": jsonResponder(200, authnInvalidWith(401, map[string]any{
			"error_code": 401, "reason": "auth.unauthorized", "error_message": "token " + secret + " is invalid"})),
		"Bearer " + secret + "-503":  jsonResponder(503, map[string]any{"reason": "X", "error_message": ""}),
		"Bearer " + secret + "-401":  jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""}),
		"Bearer " + secret + "-down": httpmock.NewErrorResponder(errors.New("dial tcp: connection refused")),
		"Bearer " + secret + "-bad":  rawResponder(200, "application/json", `{"is_token_valid":true}`),
		// The service's own answers quote the token.
		"Bearer " + secret + "-echo": jsonResponder(400, map[string]any{"reason": ReasonRequestValidation,
			"error_message": "Bearer " + secret + "-echo is malformed"}),
		"Bearer " + secret + "-echo401": jsonResponder(401, map[string]any{"reason": ReasonUnauthorized,
			"error_message": "session of " + secret + "-echo401 expired"}),
		"Bearer " + secret + "-html": httpmock.NewStringResponder(502, "<p>upstream refused Bearer "+secret+"-html</p>"),
		"Bearer " + secret + "-role": jsonResponder(200, authnValid("u-1", Role("Bearer "+secret+"-role"))),
	}
	c, _ := authnSetup(t, Config{Logger: logger}, answers)
	a := &Authenticator{Client: c}
	// In a fixed order, in which no three calls in a row go unanswered
	// (the 503, the refused connection and the 502): the breaker would
	// open and hold the checks that follow.
	for _, header := range slices.Sorted(maps.Keys(answers)) {
		_, err := a.Check(authnRequest(context.Background(), header))
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds the token", err)
		}
		if err != nil && strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
			t.Errorf("formatted error holds the token")
		}
	}
	synctest.Wait()
	out := logs.String()
	for _, s := range []string{secret, mockToken, mockSecret} {
		if strings.Contains(out, s) {
			t.Errorf("logs hold %q:\n%s", s, out)
		}
	}
	if got := strings.Count(out, "End User token check failed"); got != 7 {
		t.Errorf("%d failure records, want 7 (503, 401 twice, unreachable, malformed, 400, 502):\n%s", got, out)
	}
}

func TestAuthenticatorWithoutClient(t *testing.T) {
	var a Authenticator
	_, err := a.Check(authnRequest(context.Background(), "Bearer eu-1"))
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Authenticator.Client") {
		t.Errorf("Check without Client = %v, want ErrInvalidArgument naming Authenticator.Client", err)
	}
	if got := strings.Count(err.Error(), "management: "); got != 1 {
		t.Errorf("Check without Client = %q, want the package prefix once", err)
	}

	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "Authenticator.Client") {
			t.Errorf("Handler without Client panicked with %q, want a message naming Authenticator.Client", msg)
		}
	}()
	a.Handler(http.NotFoundHandler()) // at setup, before any request
	t.Error("Handler without Client did not panic")
}

func TestEndUserFromContextEmpty(t *testing.T) {
	if u, ok := EndUserFromContext(context.Background()); ok || u != nil {
		t.Errorf("EndUserFromContext(Background) = %+v, %t", u, ok)
	}
}

func TestInvalidTokenErrorText(t *testing.T) {
	err := &InvalidTokenError{Response: &ClientResponse{HTTPCode: 401, HTTPBody: ClientErrorBody{
		ErrorCode: 401, Reason: "auth.unauthorized", ErrorMessage: "Bearer eu-123 expired"}}}
	if got, want := err.Error(), "management: invalid End User access token: 401 auth.unauthorized"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := (&InvalidTokenError{}).Error(); got != ErrInvalidToken.Error() {
		t.Errorf("Error() without Response = %q", got)
	}
}

// authnBenchRequest is a request with a realistic End User token.
func authnBenchRequest() *http.Request {
	return authnRequest(context.Background(), "Bearer eyJhbGciOiJSUzI1NiJ9."+strings.Repeat("x", 300)+".sig")
}

func BenchmarkAuthenticatorCheckCached(b *testing.B) {
	r := authnBenchRequest()
	c, _ := authnSetup(b, Config{}, map[string]httpmock.Responder{
		r.Header.Get("Authorization"): jsonResponder(200, authnValid("u-1", RoleAppUser)),
	})
	a := &Authenticator{Client: c, CacheTTL: time.Hour}
	if _, err := a.Check(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Check(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAuthenticatorCheckUncached(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case defaultPathPrefix + "/auth/token":
			_, _ = w.Write([]byte(`{"access_token":"mgmt-token-1","token_type":"Bearer","expires_in":600}`))
		case defaultPathPrefix + "/authenticate":
			_, _ = w.Write([]byte(`{"is_token_valid":true,"user_id":"u-1","user_role":"APPUSER","to_client_response":null}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewClient(Config{BaseURL: srv.URL, ClientID: mockID, ClientSecret: mockSecret})
	if err != nil {
		b.Fatal(err)
	}
	a := &Authenticator{Client: c, CacheTTL: -1}
	r := authnBenchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Check(r); err != nil {
			b.Fatal(err)
		}
	}
}

// authnGate makes every later authenticate call of script wait until the
// returned function is called.
func authnGate(script *authnScript) (release func()) {
	gate := make(chan struct{})
	script.mu.Lock()
	script.gate = gate
	script.mu.Unlock()
	return func() { close(gate) }
}

func TestAuthenticatorMaxConcurrentChecks(t *testing.T) {
	for _, tt := range []struct {
		max, want int
	}{{0, 64}, {-1, 64}, {3, 3}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				c, script := authnSetup(t, Config{}, authnAnswers())
				a := &Authenticator{Client: c, MaxConcurrentChecks: tt.max}
				if _, err := a.Check(authnRequest(ctx, "Bearer eu-alice")); err != nil { // cached from now on
					t.Fatalf("Check(eu-alice): %v", err)
				}
				// Its call holds a slot until its goroutine returns, which
				// may be after the check has its verdict.
				synctest.Wait()
				release := authnGate(script)

				errs := make([]error, tt.want+1)
				var wg sync.WaitGroup
				for i := range tt.want {
					wg.Go(func() { _, errs[i] = a.Check(authnRequest(ctx, fmt.Sprintf("Bearer random-%d", i))) })
				}
				wg.Go(func() { _, errs[tt.want] = a.Check(authnRequest(ctx, "Bearer random-0")) }) // joins a call
				synctest.Wait()
				if n := script.callsFor(""); n != 1+tt.want {
					t.Fatalf("%d calls started, want %d", n-1, tt.want)
				}

				start := time.Now()
				_, err := a.Check(authnRequest(ctx, "Bearer random-over"))
				if !errors.Is(err, ErrTooManyChecks) || !errors.Is(err, ErrAuthenticationUnavailable) {
					t.Errorf("Check beyond the bound = %v, want ErrTooManyChecks and ErrAuthenticationUnavailable", err)
				}
				if waited := time.Since(start); waited != 0 {
					t.Errorf("Check beyond the bound waited %v, want a refusal at once", waited)
				}
				res := authnServe(t, ctx, a, "Bearer random-over")
				if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "1" || res.nextRan {
					t.Errorf("Handler beyond the bound: status %d, Retry-After %q, next ran %t; want 503, 1",
						res.status, res.header.Get("Retry-After"), res.nextRan)
				}
				if diff := cmp.Diff(authnUnavailableBody, res.body); diff != "" {
					t.Errorf("body beyond the bound (-want +got):\n%s", diff)
				}
				if u, err := a.Check(authnRequest(ctx, "Bearer eu-alice")); err != nil || u.ID != "u-alice" {
					t.Errorf("cached Check during the flood = %+v, %v; want u-alice", u, err)
				}
				a.mu.Lock()
				inflight := len(a.inflight)
				a.mu.Unlock()
				if inflight != tt.want || script.callsFor("Bearer random-over") != 0 {
					t.Errorf("%d calls in flight, %d for the refused token; want %d and 0",
						inflight, script.callsFor("Bearer random-over"), tt.want)
				}

				release()
				wg.Wait()
				for i, err := range errs {
					if !errors.Is(err, ErrInvalidToken) {
						t.Errorf("check %d = %v, want the service's verdict ErrInvalidToken", i, err)
					}
				}
				if _, err := a.Check(authnRequest(ctx, "Bearer random-over")); !errors.Is(err, ErrInvalidToken) {
					t.Errorf("Check once the calls ended = %v, want a call and ErrInvalidToken", err)
				}
			})
		})
	}
}

func TestAuthenticatorEndedRequestStartsNoCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, script := authnSetup(t, Config{}, authnAnswers())
		a := &Authenticator{Client: c}
		if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice")); err != nil {
			t.Fatalf("Check(eu-alice): %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := a.Check(authnRequest(ctx, "Bearer eu-bob")); !errors.Is(err, context.Canceled) {
			t.Errorf("Check of an ended request = %v, want context.Canceled", err)
		}
		synctest.Wait() // a call started anyway would have been made by now
		if n := script.callsFor("Bearer eu-bob"); n != 0 {
			t.Errorf("%d calls for an ended request, want 0", n)
		}
		if u, err := a.Check(authnRequest(ctx, "Bearer eu-alice")); err != nil || u.ID != "u-alice" {
			t.Errorf("cached Check of an ended request = %+v, %v; want u-alice", u, err)
		}
	})
}

func TestAuthenticatorTimeout(t *testing.T) {
	hang := func(req *http.Request) (*http.Response, error) {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	retryAfter := func(secs string) httpmock.Responder {
		return jsonResponder(503, map[string]any{"reason": "SERVICE.UNAVAILABLE", "error_message": ""}).
			HeaderSet(http.Header{"Retry-After": {secs}})
	}
	tests := []struct {
		name      string
		timeout   time.Duration
		answer    httpmock.Responder
		wantTime  time.Duration
		wantCalls int
		wantErr   error
	}{
		// The Retry-After wait (capped at RetryWaitMax, 15 s) would pass the bound: not taken.
		{"503 Retry-After 30", 0, retryAfter("30"), 0, 1, nil},
		{"503 Retry-After 1", 2 * time.Second, retryAfter("1"), time.Second, 2, nil},
		{"service hangs", 0, hang, 5 * time.Second, 1, context.DeadlineExceeded},
		{"service hangs, Timeout 2s", 2 * time.Second, hang, 2 * time.Second, 1, context.DeadlineExceeded},
		{"negative Timeout", -time.Second, hang, 5 * time.Second, 1, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The Client's defaults, which the mock fixture shortens.
				cfg := Config{RetryWaitMin: 250 * time.Millisecond, RetryWaitMax: 15 * time.Second}
				c, script := authnSetup(t, cfg, map[string]httpmock.Responder{"Bearer eu-1": tt.answer})
				a := &Authenticator{Client: c, Timeout: tt.timeout}
				start := time.Now()
				res := authnServe(t, context.Background(), a, "Bearer eu-1")
				if took := time.Since(start); took != tt.wantTime {
					t.Errorf("the check took %v, want %v", took, tt.wantTime)
				}
				if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "" {
					t.Errorf("status %d, Retry-After %q; want 503 without Retry-After", res.status, res.header.Get("Retry-After"))
				}
				if n := script.callsFor(""); n != tt.wantCalls {
					t.Errorf("%d calls, want %d", n, tt.wantCalls)
				}
				if tt.wantErr == nil {
					return
				}
				_, err := a.Check(authnRequest(context.Background(), "Bearer eu-1"))
				if !errors.Is(err, ErrAuthenticationUnavailable) || !errors.Is(err, tt.wantErr) {
					t.Errorf("Check = %v, want ErrAuthenticationUnavailable and %v", err, tt.wantErr)
				}
			})
		})
	}
}

func TestAuthenticatorMultipleAuthorizationHeaders(t *testing.T) {
	for _, values := range [][]string{
		{"Bearer eu-alice", "Bearer eu-bob"},
		{"Bearer eu-alice", "Bearer eu-alice"},
		{"Bearer eu-alice", ""},
	} {
		c, script := authnSetup(t, Config{}, authnAnswers())
		a := &Authenticator{Client: c}
		r := httptest.NewRequest(http.MethodGet, "/api/things", nil)
		r.Header["Authorization"] = values
		w := httptest.NewRecorder()
		nextRan := false
		a.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { nextRan = true })).ServeHTTP(w, r)

		if w.Code != http.StatusUnauthorized || nextRan || w.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%q: status %d, next ran %t, WWW-Authenticate %q; want 401, Bearer",
				values, w.Code, nextRan, w.Header().Get("WWW-Authenticate"))
		}
		var body any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if diff := cmp.Diff(authnBody(401, "auth.unauthorized", "The access token is invalid."), body); diff != "" {
			t.Errorf("%q: body (-want +got):\n%s", values, diff)
		}
		var invalid *InvalidTokenError
		if _, err := a.Check(r); !errors.As(err, &invalid) {
			t.Errorf("%q: Check = %v, want an *InvalidTokenError", values, err)
		}
		if n := script.callsFor(""); n != 0 {
			t.Errorf("%q: %d calls, want 0", values, n)
		}
	}
}

func TestAuthenticatorForget(t *testing.T) {
	c, script := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c}
	ctx := context.Background()
	for _, header := range []string{"Bearer eu-alice", "Bearer eu-unknown"} { // a valid and an invalid verdict
		for range 2 {
			_, _ = a.Check(authnRequest(ctx, header))
		}
		if err := a.Forget(ctx, header); err != nil {
			t.Fatalf("Forget(%q): %v", header, err)
		}
		_, _ = a.Check(authnRequest(ctx, header))
		if n := script.callsFor(header); n != 2 {
			t.Errorf("%q: %d calls, want 2 (one before and one after Forget)", header, n)
		}
	}
	if u, err := a.Check(authnRequest(ctx, "Bearer eu-alice")); err != nil || u.ID != "u-alice" {
		t.Errorf("Check after Forget = %+v, %v; want u-alice", u, err)
	}

	for _, blank := range []string{"", " \t"} {
		if err := a.Forget(ctx, blank); !errors.Is(err, ErrInvalidArgument) || strings.Count(err.Error(), "management: ") != 1 {
			t.Errorf("Forget(%q) = %v, want ErrInvalidArgument", blank, err)
		}
	}
	if err := a.Forget(ctx, "Bearer never-seen"); err != nil {
		t.Errorf("Forget of an unknown token = %v, want nil", err)
	}
	if err := (&Authenticator{Client: c}).Forget(ctx, "Bearer eu-alice"); err != nil {
		t.Errorf("Forget before any Check = %v, want nil", err)
	}
	if err := (&Authenticator{Client: c, CacheTTL: -1}).Forget(ctx, "Bearer eu-alice"); err != nil {
		t.Errorf("Forget without a cache = %v, want nil", err)
	}
}

// TestAuthenticatorForgetInFlight revokes a token while a check of it is in
// flight: the service's first answer (valid) comes from before the revocation.
func TestAuthenticatorForgetInFlight(t *testing.T) {
	revoked := func() map[string]httpmock.Responder {
		return map[string]httpmock.Responder{"Bearer eu-alice": jsonResponder(200, authnValid("u-alice", RoleAppUser)).
			Once().Then(jsonResponder(200, authnInvalid()))}
	}
	check := func(a *Authenticator, into chan<- error) {
		_, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice"))
		into <- err
	}

	t.Run("its verdict is not cached", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, script := authnSetup(t, Config{}, revoked())
			a := &Authenticator{Client: c}
			release := authnGate(script)
			before := make(chan error, 1)
			go check(a, before)
			synctest.Wait()
			if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
				t.Fatalf("Forget: %v", err)
			}
			release()
			if err := <-before; err != nil {
				t.Errorf("the check that was waiting = %v, want the answer of its call", err)
			}
			if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-alice")); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Check after Forget = %v, want a new call and ErrInvalidToken", err)
			}
			if n := script.callsFor(""); n != 2 {
				t.Errorf("%d calls, want 2", n)
			}
		})
	})

	t.Run("later checks make their own call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, script := authnSetup(t, Config{}, authnAnswers())
			a := &Authenticator{Client: c, MaxConcurrentChecks: 2}
			release := authnGate(script)
			before, after := make(chan error, 1), make(chan error, 1)
			go check(a, before)
			synctest.Wait()
			if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
				t.Fatalf("Forget: %v", err)
			}
			go check(a, after)
			synctest.Wait()
			if n := script.callsFor(""); n != 2 {
				t.Errorf("%d calls in flight, want 2 (the check after Forget did not join the earlier call)", n)
			}
			// The forgotten call still counts against the bound.
			if _, err := a.Check(authnRequest(context.Background(), "Bearer eu-bob")); !errors.Is(err, ErrTooManyChecks) {
				t.Errorf("third call = %v, want ErrTooManyChecks", err)
			}
			release()
			for _, ch := range []chan error{before, after} {
				if err := <-ch; err != nil {
					t.Errorf("Check = %v, want nil", err)
				}
			}
		})
	})
}

// Forget refuses an Authenticator that Check and Handler refuse, so that a
// sign-out on a misconfigured one never seems done.
func TestForgetRefusesWithoutClient(t *testing.T) {
	for name, a := range map[string]*Authenticator{
		"no Client":     {},
		"a zero Client": {Client: &Client{}},
	} {
		if err := a.Forget(context.Background(), "Bearer eu-123456789"); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: Forget = %v; want ErrInvalidArgument", name, err)
		}
	}
}

// An Authenticator prints and logs as a description of its settings, the
// defaults applied, without credentials, whatever the verb; printing one
// that is serving reads nothing its checks write (go test -race).
func TestAuthenticatorPrintsRedacted(t *testing.T) {
	c, _ := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c, CacheTTL: time.Minute, MaxConcurrentChecks: 8, MissBudget: MissBudget{PerSecond: 5, Burst: 2},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusTeapot) }}
	const want = `management.Authenticator{Client:management.Client{BaseURL:"https://api.example.test"}, CacheTTL:1m0s, CacheSize:10000, ` +
		`MaxConcurrentChecks:8, MissBudget:{PerSecond:5, Burst:2}, Timeout:5s, ErrorHandler:true, SharedStore:false}`
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, header := range []string{"Bearer eu-alice", "Bearer eu-bob", "Bearer eu-unknown-1"} {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					authnServe(t, context.Background(), a, header)
				}
			}
		})
	}
	var printed []string
	for _, format := range allFormats() {
		got := fmt.Sprintf(format, a)
		printed = append(printed, got)
		switch verb := format[len(format)-1]; {
		case verb == 'q' && got != strconv.Quote(want), verb != 'q' && verb != 'p' && got != want:
			t.Errorf("formatted with %s: %q, want %q", format, got, want)
		}
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "auth", a)
	close(done)
	wg.Wait()

	var rec struct{ Auth map[string]any }
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	wantLog := map[string]any{"client": map[string]any{"base_url": mockBaseURL}, "cache_ttl": float64(time.Minute), "cache_size": 10000.0,
		"max_concurrent_checks": 8.0, "miss_budget": map[string]any{"per_second": 5.0, "burst": 2.0}, "timeout": float64(5 * time.Second),
		"error_handler": true, "shared_store": false}
	if diff := cmp.Diff(wantLog, rec.Auth); diff != "" {
		t.Errorf("LogValue (-want +got):\n%s", diff)
	}
	assertNoSecrets(t, "a printed Authenticator", strings.Join(printed, "\n")+logs.String(), append(encodings(mockSecret, mockToken, mockID), "eu-alice"))

	zero := &Authenticator{CacheTTL: -1}
	if got, want := zero.String(), `management.Authenticator{Client:nil, CacheTTL:off, CacheSize:10000, MaxConcurrentChecks:64, MissBudget:none, Timeout:5s, ErrorHandler:false, SharedStore:false}`; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
