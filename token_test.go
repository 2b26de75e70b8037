package management

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// whoamiURL is what the token tests call: GET /users/me, answered (by
// echoToken or tokenIssuer.api) with the token it carried as the User's id.
const whoamiURL = mockPrefix + "/users/me"

// whoami returns the token that GET /users/me carried.
func whoami(ctx context.Context, c *Client) (string, error) {
	u, err := c.Users.Get(ctx, "me")
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// emptyPage answers an empty last page of Users.
var emptyPage = jsonResponder(200, map[string]any{"users": []any{}, "next_page": nil})

func TestTokenRequestIsExact(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "POST")
		testQuery(t, r, "")
		testHeader(t, r, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(mockID+":"+mockSecret)))
		testHeader(t, r, "Content-Type", "application/json")
		testJSONBody(t, r, `{"grant_type": "client_credentials"}`)
		return jsonResponder(200, map[string]any{"access_token": "tok-A", "token_type": "Bearer", "expires_in": 600})(r)
	})
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", emptyPage)

	if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 1})
}

func TestTokenReusedAndSentAsTypeAndToken(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL,
		jsonResponder(200, map[string]any{"access_token": "tok-A", "token_type": "MAC", "expires_in": 600}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "MAC tok-A") // the token type as returned, then the token
		return emptyPage(r)
	})
	for range 3 {
		if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + mockPrefix + "/users": 3})
}

func TestTokenEndpointErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		code     string
		sentinel error
	}{
		{"invalid client", 401, "invalid_client", ErrInvalidClient},
		{"unsupported grant", 400, "unsupported_grant_type", ErrUnsupportedGrantType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			mt.RegisterResponder(http.MethodPost, tokenURL,
				jsonResponder(tt.status, map[string]any{"error": tt.code, "error_description": "refused"}))
			_, err := c.Users.ListPage(context.Background(), nil)
			var te *TokenError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (%T), want *TokenError", err, err)
			}
			want := TokenError{StatusCode: tt.status, Code: tt.code, Description: "refused"}
			if diff := cmp.Diff(want, *te, ignoreAnswerMeta); diff != "" {
				t.Errorf("TokenError (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(err, %v) = false", tt.sentinel)
			}
			if want := fmt.Sprintf("management: POST /auth/token: %d %s: refused", tt.status, tt.code); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err, want)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1}) // never retried, and nothing else sent
		})
	}
}

// The token endpoint's 429 in its OAuth 2.0 shape stays a *TokenError,
// with its code and Retry-After, and matches ErrRateLimited as an
// *APIError 429 does; its 503 keeps its code, and matches neither.
func TestTokenEndpointOutageKeepsItsShape(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			c, mt := setup(t, Config{MaxRetries: -1})
			mt.RegisterResponder(http.MethodPost, tokenURL,
				jsonResponder(status, map[string]any{"error": "temporarily_unavailable", "error_description": "busy"}).
					HeaderSet(http.Header{"Retry-After": {"7"}}))
			_, err := c.Users.ListPage(context.Background(), nil)
			var te *TokenError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (%T), want *TokenError", err, err)
			}
			if te.StatusCode != status || te.Code != "temporarily_unavailable" || te.RetryAfter != 7*time.Second {
				t.Errorf("TokenError %d %q, Retry-After %v; want %d temporarily_unavailable, 7s", te.StatusCode, te.Code, te.RetryAfter, status)
			}
			if got, want := errors.Is(err, ErrRateLimited), status == http.StatusTooManyRequests; got != want {
				t.Errorf("errors.Is(err, ErrRateLimited) = %v; want %v", got, want)
			}
			if errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrInvalidClient) {
				t.Errorf("err = %v matches ErrMisconfigured or ErrInvalidClient", err)
			}
		})
	}
}

func TestTokenResponseWithoutLifetimeIsRefused(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(200, map[string]any{"access_token": "t", "token_type": "Bearer"}))
	_, err := c.Users.ListPage(context.Background(), nil)
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != "/auth/token" || de.StatusCode != 200 {
		t.Fatalf("err = %v, want *DecodeError for POST /auth/token", err)
	}
}

// tokenIssuer answers the token endpoint with tok-1, tok-2, ... each valid
// for lifetime, and remembers when each expires.
type tokenIssuer struct {
	mu       sync.Mutex
	lifetime time.Duration
	expiry   map[string]time.Time
	issued   int
	delay    time.Duration
}

func (ti *tokenIssuer) respond(req *http.Request) (*http.Response, error) {
	if ti.delay > 0 {
		time.Sleep(ti.delay)
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.issued++
	tok := fmt.Sprintf("tok-%d", ti.issued)
	if ti.expiry == nil {
		ti.expiry = map[string]time.Time{}
	}
	ti.expiry[tok] = time.Now().Add(ti.lifetime)
	return httpmock.NewJsonResponse(200, map[string]any{
		"access_token": tok, "token_type": "Bearer", "expires_in": int(ti.lifetime / time.Second),
	})
}

// api answers whoami: 200 to a valid token (a User whose id is the token)
// and 401 AUTH.UNAUTHORIZED otherwise, counting the expired tokens it saw.
func (ti *tokenIssuer) api(expiredSeen *atomic.Int32) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		tok := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		ti.mu.Lock()
		exp, ok := ti.expiry[tok]
		ti.mu.Unlock()
		if !ok || !time.Now().Before(exp) {
			expiredSeen.Add(1)
			return httpmock.NewJsonResponse(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})
		}
		return httpmock.NewJsonResponse(200, map[string]any{"id": tok})
	}
}

func TestTokenRefreshedBeforeExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		ti := &tokenIssuer{lifetime: 600 * time.Second}
		var expired atomic.Int32
		mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, ti.api(&expired))

		var seen []string
		for range 40 { // 40 calls 59 s apart: 39 min, about four lifetimes
			tok, err := whoami(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, tok)
			time.Sleep(59 * time.Second)
		}
		if expired.Load() != 0 {
			t.Errorf("server saw %d expired tokens, want 0", expired.Load())
		}
		// Default margin is a tenth of the lifetime: the first call 540 s or
		// more after a token was issued starts a refresh (at 0, 590, 1180,
		// 1770 s) and still carries the current token, which has not expired.
		if ti.issued != 4 {
			t.Errorf("tokens issued = %d, want 4", ti.issued)
		}
		if seen[10] != "tok-1" || seen[11] != "tok-2" {
			t.Errorf("token at 590 s = %s, at 649 s = %s; want tok-1 while refreshing, then tok-2", seen[10], seen[11])
		}
	})
}

func TestRefreshDoesNotDelayCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		ti := &tokenIssuer{lifetime: 600 * time.Second, delay: 5 * time.Second}
		var expired atomic.Int32
		mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, ti.api(&expired))

		if _, err := whoami(context.Background(), c); err != nil { // cold: waits 5 s
			t.Fatal(err)
		}
		time.Sleep(560 * time.Second) // due for refresh (at 545 s), valid until 605 s
		short, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		tok, err := whoami(short, c)
		if err != nil || tok != "tok-1" || time.Since(start) != 0 {
			t.Fatalf("during a slow refresh: %v, %v after %v; want tok-1 at once", tok, err, time.Since(start))
		}
		time.Sleep(6 * time.Second) // the refresh has completed
		tok, err = whoami(context.Background(), c)
		ti.mu.Lock()
		issued := ti.issued
		ti.mu.Unlock()
		if err != nil || tok != "tok-2" || issued != 2 {
			t.Fatalf("after the refresh: %v, %v, %d tokens; want tok-2 of 2", tok, err, issued)
		}
	})
}

func TestRefreshMargin(t *testing.T) {
	tests := []struct {
		configured, lifetime, want time.Duration
	}{
		{0, 600 * time.Second, 60 * time.Second},
		{2 * time.Minute, 600 * time.Second, 2 * time.Minute},
		{10 * time.Minute, 600 * time.Second, 300 * time.Second}, // never more than half
		{-1, 600 * time.Second, 0},
		{0, 10 * time.Second, time.Second},
	}
	for _, tt := range tests {
		if got := refreshMargin(tt.configured, tt.lifetime); got != tt.want {
			t.Errorf("refreshMargin(%v, %v) = %v, want %v", tt.configured, tt.lifetime, got, tt.want)
		}
	}
}

func TestColdClientFetchesOneToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		ti := &tokenIssuer{lifetime: 600 * time.Second, delay: 200 * time.Millisecond}
		var expired atomic.Int32
		mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, ti.api(&expired))

		var wg sync.WaitGroup
		var failures atomic.Int32
		for range 200 {
			wg.Go(func() {
				if _, err := whoami(context.Background(), c); err != nil {
					failures.Add(1)
				}
			})
		}
		wg.Wait()
		if failures.Load() != 0 {
			t.Errorf("failures = %d, want 0", failures.Load())
		}
		testCalls(t, mt, map[string]int{"POST " + tokenURL: 1, "GET " + whoamiURL: 200})
	})
}

func TestCallerGivingUpDoesNotFailSharedFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		ti := &tokenIssuer{lifetime: 600 * time.Second, delay: 5 * time.Second}
		var expired atomic.Int32
		mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, ti.api(&expired))

		impatient, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var impatientErr, patientErr error
		var wg sync.WaitGroup
		start := time.Now()
		wg.Go(func() { _, impatientErr = whoami(impatient, c) })
		wg.Go(func() { _, patientErr = whoami(context.Background(), c) })
		wg.Wait()

		if !errors.Is(impatientErr, context.DeadlineExceeded) {
			t.Errorf("impatient caller err = %v, want context.DeadlineExceeded", impatientErr)
		}
		if patientErr != nil {
			t.Errorf("patient caller err = %v, want the token", patientErr)
		}
		if elapsed := time.Since(start); elapsed != 5*time.Second {
			t.Errorf("patient caller waited %v, want the 5 s fetch", elapsed)
		}
		if ti.issued != 1 {
			t.Errorf("tokens issued = %d, want 1", ti.issued)
		}
	})
}

func TestRefreshFailureKeepsValidToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t, Config{MaxRetries: -1})
		ti := &tokenIssuer{lifetime: 600 * time.Second}
		var expired atomic.Int32
		mt.RegisterResponder(http.MethodPost, tokenURL, httpmock.Responder(ti.respond).Once().
			Then(httpmock.NewStringResponder(503, "down")))
		mt.RegisterResponder(http.MethodGet, whoamiURL, ti.api(&expired))

		if _, err := whoami(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(570 * time.Second) // inside the refresh margin, before expiry
		tok, err := whoami(context.Background(), c)
		if err != nil || tok != "tok-1" {
			t.Fatalf("during a failed refresh: %v, %v; want tok-1 still used", tok, err)
		}
		time.Sleep(31 * time.Second) // now expired, and the refresh still fails
		_, err = whoami(context.Background(), c)
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Path != "/auth/token" {
			t.Fatalf("after expiry err = %v, want the token endpoint's 503", err)
		}
		if expired.Load() != 0 {
			t.Errorf("server saw %d expired tokens", expired.Load())
		}
	})
}

func TestUnauthorizedRefreshesAndReplaysOnce(t *testing.T) {
	c, mt := setup(t)
	ti := &tokenIssuer{lifetime: 600 * time.Second}
	mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
	attempt := 0
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", fmt.Sprintf("Bearer tok-%d", attempt+1)) // a fresh token for the replay
		attempt++
		if attempt == 1 {
			return jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})(r)
		}
		return jsonResponder(200, map[string]any{"id": "u-1"})(r)
	})

	u, err := c.Users.Get(context.Background(), "u-1")
	if err != nil || u.ID != "u-1" {
		t.Fatalf("Users.Get = %v, %v; want the replay's answer", u, err)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 2, "GET " + mockPrefix + "/users/u-1": 2})
}

func TestPersistentUnauthorized(t *testing.T) {
	c, mt := setup(t)
	ti := &tokenIssuer{lifetime: 600 * time.Second}
	mt.RegisterResponder(http.MethodPost, tokenURL, ti.respond)
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1",
		jsonResponder(401, map[string]any{"reason": ReasonUnauthorized, "error_message": ""}))

	_, err := c.Users.Get(context.Background(), "u-1")
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if got, want := err.Error(), "management: GET /users/u-1: 401 AUTH.UNAUTHORIZED"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	testCalls(t, mt, map[string]int{"POST " + tokenURL: 2, "GET " + mockPrefix + "/users/u-1": 2}) // exactly 2 attempts, 2 tokens
}

func TestInvalidateOnlyDropsTheStaleToken(t *testing.T) {
	s := &tokenCache{}
	current, stale := &Token{AccessToken: "new"}, &Token{AccessToken: "old"}
	s.tok = current
	s.Invalidate(stale)
	if s.tok != current {
		t.Fatalf("Invalidate(stale) dropped a token a concurrent refresh had stored")
	}
	s.Invalidate(current)
	if s.tok != nil {
		t.Fatalf("Invalidate(current) kept it")
	}
}

// invalidatingSource is a TokenSource with Invalidate, as users may write.
type invalidatingSource struct {
	mu          sync.Mutex
	n           int
	invalidated []string
}

func (s *invalidatingSource) Token(context.Context) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Token{AccessToken: fmt.Sprintf("own-%d", s.n), TokenType: "Bearer"}, nil
}

func (s *invalidatingSource) Invalidate(t *Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalidated = append(s.invalidated, t.AccessToken)
	s.n++
}

func TestUserTokenSourceInvalidatedOn401(t *testing.T) {
	src := &invalidatingSource{}
	c, mt := setup(t, Config{TokenSource: src})
	attempt := 0
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", fmt.Sprintf("Bearer own-%d", attempt)) // the replay's from the source, once invalidated
		attempt++
		if attempt == 1 {
			return jsonResponder(401, map[string]any{"reason": ReasonUnauthorized})(r)
		}
		return emptyPage(r)
	})
	if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"own-0"}, src.invalidated); diff != "" {
		t.Errorf("invalidated (-want +got):\n%s", diff)
	}
	testCalls(t, mt, map[string]int{"GET " + mockPrefix + "/users": 2})
}

func TestAbsurdLifetimeCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		mt.RegisterResponder(http.MethodPost, tokenURL,
			jsonResponder(200, map[string]any{"access_token": "t", "token_type": "Bearer", "expires_in": int64(1) << 60}))
		// Internal: a token's Expiry is not visible through the public API.
		tok, err := c.tokens.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Now().Add(24 * time.Hour); !tok.Expiry.Equal(want) {
			t.Errorf("Expiry = %v, want a day from now (%v)", tok.Expiry, want)
		}
	})
}

func TestTokenEndpointAnswerNotSendableIsRefused(t *testing.T) {
	const secret = "SECRETPART"
	tests := []struct {
		name  string
		body  string
		field string // named in the error
	}{
		{"CR in access_token", `{"access_token":"` + secret + `\r","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"LF in access_token", `{"access_token":"` + secret + `\nX-Evil: 1","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"NUL in access_token", `{"access_token":"` + secret + `\u0000","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"tab in access_token", `{"access_token":"` + secret + `\t","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"ESC in access_token", `{"access_token":"` + secret + `\u001b","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"DEL in access_token", `{"access_token":"` + secret + `\u007f","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"space in access_token", `{"access_token":"` + secret + ` x","token_type":"Bearer","expires_in":600}`, "access_token"},
		{"LF in token_type", `{"access_token":"` + secret + `","token_type":"Bearer\n","expires_in":600}`, "token_type"},
		{"space in token_type", `{"access_token":"` + secret + `","token_type":"Bearer x","expires_in":600}`, "token_type"},
		{"no access_token", `{"token_type":"Bearer","expires_in":600}`, "access_token is empty"},
		{"zero expires_in", `{"access_token":"` + secret + `","token_type":"Bearer","expires_in":0}`, "expires_in"},
		{"negative expires_in", `{"access_token":"` + secret + `","token_type":"Bearer","expires_in":-5}`, "expires_in"},
		{"null", `null`, "null"},
		{"error shape", `{"error":"invalid_client","error_description":"no"}`, `an error, "invalid_client"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setup(t)
			answers := httpmock.NewStringResponder(200, tt.body).Once().
				Then(jsonResponder(200, map[string]any{"access_token": "good", "token_type": "Bearer", "expires_in": 600}))
			mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "POST")
				testHeader(t, r, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(mockID+":"+mockSecret)))
				testBody(t, r, grantBody)
				return answers(r)
			})
			mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
				testMethod(t, r, "GET")
				testHeader(t, r, "Authorization", "Bearer good")
				return emptyPage(r)
			})

			_, err := c.Users.ListPage(context.Background(), nil)
			var de *DecodeError
			if !errors.As(err, &de) || de.Method != "POST" || de.Path != "/auth/token" || de.StatusCode != 200 {
				t.Fatalf("err = %v (%T), want a *DecodeError of POST /auth/token", err, err)
			}
			if !strings.Contains(err.Error(), tt.field) || strings.Contains(err.Error(), secret) {
				t.Errorf("err = %q, want it to name %q and not hold the token", err, tt.field)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 1}) // no request carried the refused token
			// Never cached: the next call asks the token endpoint again.
			if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
				t.Fatalf("next call: %v, want a fresh token", err)
			}
			testCalls(t, mt, map[string]int{"POST " + tokenURL: 2, "GET " + mockPrefix + "/users": 1})
		})
	}
}

func TestTokenEndpointEmptyTypeIsBearer(t *testing.T) {
	c, mt := setup(t)
	mt.RegisterResponder(http.MethodPost, tokenURL, jsonResponder(200, map[string]any{"access_token": "t-1", "expires_in": 600}))
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users", func(r *http.Request) (*http.Response, error) {
		testMethod(t, r, "GET")
		testHeader(t, r, "Authorization", "Bearer t-1")
		return emptyPage(r)
	})
	if _, err := c.Users.ListPage(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// funcSource is a TokenSource made of a function.
type funcSource func(context.Context) (*Token, error)

func (f funcSource) Token(ctx context.Context) (*Token, error) { return f(ctx) }

func TestTokenSourceMistakesRefusedBeforeSending(t *testing.T) {
	const secret = "SECRETPART"
	tests := []struct {
		name  string
		tok   *Token
		field string // named in the error
	}{
		{"nil token, nil error", nil, "neither a token nor an error"},
		{"empty access token", &Token{TokenType: "Bearer"}, "AccessToken is empty"},
		{"LF in access token", &Token{AccessToken: secret + "\nX-Evil: 1"}, "AccessToken holds a control character"},
		{"NUL in access token", &Token{AccessToken: secret + "\x00"}, "AccessToken holds a control character"},
		{"DEL in access token", &Token{AccessToken: secret + "\x7f"}, "AccessToken holds a control character"},
		{"space in access token", &Token{AccessToken: secret + " x"}, "AccessToken holds a space"},
		{"CR in token type", &Token{AccessToken: secret, TokenType: "Bearer\r"}, "TokenType holds a control character"},
		{"space in token type", &Token{AccessToken: secret, TokenType: "Be arer"}, "TokenType holds a space"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := funcSource(func(context.Context) (*Token, error) { return tt.tok, nil })
			c, mt := setup(t, Config{TokenSource: src})
			_, err := c.Users.ListPage(context.Background(), nil)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "management: invalid argument: Config.TokenSource returned ") ||
				strings.Count(msg, "management: ") != 1 || !strings.Contains(msg, tt.field) || strings.Contains(msg, secret) {
				t.Errorf("err = %q, want it to name Config.TokenSource and %q once prefixed, never the token", msg, tt.field)
			}
			testCalls(t, mt, nil)
		})
	}
}

func TestTokenSourceErrorPassesUnchanged(t *testing.T) {
	boom := errors.New("vault unreachable")
	c, mt := setup(t, Config{TokenSource: funcSource(func(context.Context) (*Token, error) { return nil, boom })})
	if _, err := c.Users.ListPage(context.Background(), nil); err != boom {
		t.Errorf("err = %v, want the source's own error", err)
	}
	testCalls(t, mt, nil)
}

// flakyIssuer answers the token endpoint: the first request with tok-1,
// the next `fail` with 503 (all when fail < 0), then tok-2, tok-3, ...
// every token valid for 600 s. It records when each request came.
type flakyIssuer struct {
	fail  int
	start time.Time

	mu    sync.Mutex
	times []time.Duration // since start
}

func (fi *flakyIssuer) respond(*http.Request) (*http.Response, error) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	n := len(fi.times)
	fi.times = append(fi.times, time.Since(fi.start))
	issued := 1
	if n > 0 {
		if fi.fail < 0 || n <= fi.fail {
			return httpmock.NewStringResponse(503, "down"), nil
		}
		issued = n - fi.fail + 1
	}
	return httpmock.NewJsonResponse(200, map[string]any{
		"access_token": fmt.Sprintf("tok-%d", issued), "token_type": "Bearer", "expires_in": 600,
	})
}

func (fi *flakyIssuer) requestTimes() []time.Duration {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return append([]time.Duration(nil), fi.times...)
}

// echoToken answers whoami with the token the request carried.
func echoToken(r *http.Request) (*http.Response, error) {
	return httpmock.NewJsonResponse(200, map[string]any{"id": strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")})
}

// countLogs counts the JSON records in logs whose level is level and whose
// message contains msg.
func countLogs(t *testing.T, logs *logBuffer, level, msg string) int {
	t.Helper()
	n := 0
	for line := range strings.Lines(logs.String()) {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log record %q: %v", line, err)
		}
		if rec.Level == level && strings.Contains(rec.Msg, msg) {
			n++
		}
	}
	return n
}

func seconds(s ...float64) []time.Duration {
	d := make([]time.Duration, len(s))
	for i, v := range s {
		d[i] = time.Duration(v * float64(time.Second))
	}
	return d
}

func TestFailingRefreshBacksOffAndLogsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer // the refreshes log on their own goroutine
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c, mt := setup(t, Config{MaxRetries: -1, Logger: logger})
		fi := &flakyIssuer{fail: 5, start: time.Now()}
		mt.RegisterResponder(http.MethodPost, tokenURL, fi.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, echoToken)

		if _, err := whoami(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(530 * time.Second)
		// A call every 250 ms from 530 s to 580 s. Due for refresh at 540 s;
		// the refreshes fail 5 times, 1, 2, 4 and 8 s apart, then succeed.
		for time.Since(fi.start) < 580*time.Second {
			tok, err := whoami(context.Background(), c)
			want := "tok-1"
			if time.Since(fi.start) > 571*time.Second {
				want = "tok-2"
			}
			if err != nil || tok != want {
				t.Fatalf("at %v: %v, %v; want %s", time.Since(fi.start), tok, err, want)
			}
			time.Sleep(250 * time.Millisecond)
		}
		synctest.Wait() // the last refresh has logged
		if diff := cmp.Diff(seconds(0, 540, 541, 543, 547, 555, 571), fi.requestTimes()); diff != "" {
			t.Errorf("token requests at (-want +got):\n%s", diff)
		}
		if n := countLogs(t, &logs, "WARN", "token refresh failed"); n != 1 {
			t.Errorf("%d Warn records of the failures, want 1:\n%s", n, logs.String())
		}
		if n := countLogs(t, &logs, "INFO", "token refresh succeeded again"); n != 1 || !strings.Contains(logs.String(), `"failures":5`) {
			t.Errorf("%d Info records of the recovery, want 1 saying 5 failures:\n%s", n, logs.String())
		}
	})
}

func TestFailingRefreshNeverDelaysCallersWithoutAToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer // the refreshes log on their own goroutine
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c, mt := setup(t, Config{MaxRetries: -1, Logger: logger})
		fi := &flakyIssuer{fail: -1, start: time.Now()}
		mt.RegisterResponder(http.MethodPost, tokenURL, fi.respond)
		mt.RegisterResponder(http.MethodGet, whoamiURL, echoToken)

		if _, err := whoami(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(530 * time.Second)
		// A call a second from 530 s to 605 s. The token expires at 600 s:
		// from then on there is no token to keep, and every call asks for
		// one at once and gets the token endpoint's failure.
		for time.Since(fi.start) <= 605*time.Second {
			at := time.Since(fi.start)
			tok, err := whoami(context.Background(), c)
			var ae *APIError
			switch {
			case at < 600*time.Second && (err != nil || tok != "tok-1"):
				t.Fatalf("at %v: %v, %v; want tok-1 until it expires", at, tok, err)
			case at >= 600*time.Second && (!errors.As(err, &ae) || ae.StatusCode != 503 || time.Since(fi.start) != at):
				t.Fatalf("at %v: %v, after %v; want the token endpoint's 503 at once", at, err, time.Since(fi.start)-at)
			}
			time.Sleep(time.Second)
		}
		synctest.Wait() // the last refresh has logged
		want := seconds(0, 540, 541, 543, 547, 555, 571, 600, 601, 602, 603, 604, 605)
		if diff := cmp.Diff(want, fi.requestTimes()); diff != "" {
			t.Errorf("token requests at (-want +got):\n%s", diff)
		}
		if n := countLogs(t, &logs, "WARN", "token refresh failed"); n != 1 {
			t.Errorf("%d Warn records of the failures, want 1:\n%s", n, logs.String())
		}
	})
}

// A call whose context ends while it waits for the management token fails
// with a *TransportError naming the call, as the error table of
// docs/errors.md says of a context that ended, and the deadline still
// matches through it.
func TestTokenWaitDeadlineIsATransportError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := setup(t)
		release := make(chan struct{})
		defer close(release)
		mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return nil, r.Context().Err()
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Users.Get(ctx, "u-1")
		var te *TransportError
		if !errors.As(err, &te) || te.Method != http.MethodGet || te.Path != "/users/u-1" || te.Attempts != 0 {
			t.Fatalf("err = %#v (%v); want a *TransportError for GET /users/u-1, not sent", err, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v; want it to match context.DeadlineExceeded", err)
		}
	})
}
