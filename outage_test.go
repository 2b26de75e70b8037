package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// outageService is the authenticate endpoint of a service that goes down:
// while up it answers by token (invalid for a token it does not know);
// while down it hangs until the call's context ends ("hang") or answers
// 503 ("503"). It keeps when each call ran, to tell how many ran at once.
type outageService struct {
	mu      sync.Mutex
	answers map[string]httpmock.Responder
	down    string
	calls   []outageCall
}

// outageCall is one call to the service: when it started and ended (zero
// while it runs), and for which Authorization value.
type outageCall struct {
	header     string
	start, end time.Time
}

// newOutageService returns a service that is up, knowing alice and bob
// (valid End Users) and a service account.
func newOutageService() *outageService {
	return &outageService{answers: map[string]httpmock.Responder{
		"Bearer eu-alice": jsonResponder(http.StatusOK, authnValid("u-alice", RoleAppUser)),
		"Bearer eu-bob":   jsonResponder(http.StatusOK, authnValid("u-bob", RoleAppUser)),
		"Bearer eu-sa":    jsonResponder(http.StatusOK, authnValid("sa-1", RoleServiceAccount)),
	}}
}

// replica returns a Client whose authenticate endpoint is s, with the
// shared store of cfg if any (each replica of a fleet has its own Client).
func (s *outageService) replica(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, mt := setup(t, cfg)
	mt.RegisterResponder(http.MethodPost, authnEndpoint, s.respond)
	return c
}

func (s *outageService) respond(req *http.Request) (*http.Response, error) {
	var body authenticateRequest
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, outageCall{header: body.AccessToken, start: time.Now()})
	down, answer := s.down, s.answers[body.AccessToken]
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.calls[n].end = time.Now()
		s.mu.Unlock()
	}()
	switch down {
	case "hang":
		<-req.Context().Done()
		return nil, req.Context().Err()
	case "503":
		return jsonResponder(http.StatusServiceUnavailable, map[string]any{"reason": "SERVICE.UNAVAILABLE", "error_message": ""})(req)
	}
	if answer == nil {
		answer = jsonResponder(http.StatusOK, authnInvalid())
	}
	return answer(req)
}

// set takes the service down ("hang" or "503") or up ("").
func (s *outageService) set(down string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// answer makes the service answer header with r from now on.
func (s *outageService) answer(header string, r httpmock.Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[header] = r
}

// callCount is the number of calls made so far.
func (s *outageService) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// running is the number of calls running now.
func (s *outageService) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.end.IsZero() {
			n++
		}
	}
	return n
}

// mostAtOnce is the most calls that ran at once among those started at or
// after since.
func (s *outageService) mostAtOnce(since time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	most := 0
	for _, c := range s.calls {
		if c.start.Before(since) {
			continue
		}
		n := 0 // the calls running when c started, c among them
		for _, d := range s.calls {
			if !d.start.Before(since) && !d.start.After(c.start) && (d.end.IsZero() || d.end.After(c.start)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// alice is the End User of "Bearer eu-alice", as a fresh pass gives it.
var alice = EndUser{ID: "u-alice", Role: RoleAppUser}

// stale is u let through under StaleIfError.
func stale(u EndUser) EndUser {
	u.Stale = true
	return u
}

// wantPass fails the test unless the check of token let want through.
func wantPass(t *testing.T, a *Authenticator, token string, want EndUser) {
	t.Helper()
	u, err := checkToken(context.Background(), a, token)
	if err != nil || u == nil || *u != want {
		t.Fatalf("check of %s = %+v, %v; want %+v", token, u, err, want)
	}
}

// wantUnavailable fails the test unless the check of token was refused
// as the service being unavailable (never let through, never invalid).
func wantUnavailable(t *testing.T, a *Authenticator, token string) error {
	t.Helper()
	u, err := checkToken(context.Background(), a, token)
	if !errors.Is(err, ErrAuthenticationUnavailable) || errors.Is(err, ErrInvalidToken) || u != nil {
		t.Fatalf("check of %s = %+v, %v; want ErrAuthenticationUnavailable", token, u, err)
	}
	return err
}

// The grace counts from the service's last confirmation: a token passes
// stale exactly StaleIfError after it, and one tick later is refused;
// the stale passes in between (their calls failing, then the breaker
// open) never extend it.
func TestStaleIfErrorGraceEdge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		confirmed := time.Now()
		wantPass(t, a, "eu-alice", alice)
		svc.set("503")
		for _, at := range []time.Duration{11 * time.Second, 30 * time.Second, 59 * time.Second, time.Minute} {
			time.Sleep(time.Until(confirmed.Add(at)))
			wantPass(t, a, "eu-alice", stale(alice))
		}
		time.Sleep(time.Nanosecond)
		wantUnavailable(t, a, "eu-alice")
		res := authnServe(t, context.Background(), a, "Bearer eu-alice")
		if res.status != http.StatusServiceUnavailable || res.nextRan {
			t.Errorf("past the grace the Handler answered %d (next ran %t); want 503", res.status, res.nextRan)
		}
	})
}

// The handler reads Stale from EndUserFromContext; a fresh pass has it
// false, so that EndUser values compare as before.
func TestStaleReadInTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		res := authnServe(t, context.Background(), a, "Bearer eu-alice")
		if !res.nextRan || res.user == nil || *res.user != alice {
			t.Fatalf("fresh: next ran %t with %+v; want %+v", res.nextRan, res.user, alice)
		}
		svc.set("hang")
		time.Sleep(11 * time.Second)
		res = authnServe(t, context.Background(), a, "Bearer eu-alice")
		if !res.nextRan || res.user == nil || *res.user != stale(alice) {
			t.Fatalf("service hung: next ran %t with %+v; want %+v", res.nextRan, res.user, stale(alice))
		}
	})
}

// An invalid answer ends the grace: once the service said the token is
// invalid, it is refused while the service is down, though a valid answer
// came within StaleIfError.
func TestInvalidAnswerEndsTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		wantPass(t, a, "eu-alice", alice)
		time.Sleep(11 * time.Second)
		svc.answer("Bearer eu-alice", jsonResponder(http.StatusOK, authnInvalid()))
		if _, err := checkToken(context.Background(), a, "eu-alice"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("check after the revocation = %v; want ErrInvalidToken", err)
		}
		svc.set("503")
		time.Sleep(11 * time.Second) // the invalid verdict has expired
		wantUnavailable(t, a, "eu-alice")
	})
}

// fleetReplica is a replica of a fleet sharing store: its own Client, on
// svc, and Authenticator.
func fleetReplica(t *testing.T, svc *outageService, store SharedStore, cfg Config) *Authenticator {
	cfg.SharedStore = store
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	return &Authenticator{Client: svc.replica(t, cfg), SharedStore: store, CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
}

// An invalid answer on one replica ends the grace on every replica: one
// that had the valid verdict from the store refuses the token once its
// in-process copy is older than 5s, and so does one that never saw it.
func TestInvalidAnswerEndsTheGraceOnEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		a, b := fleetReplica(t, svc, store, Config{}), fleetReplica(t, svc, store, Config{})
		wantPass(t, a, "eu-alice", alice)
		wantPass(t, b, "eu-alice", alice) // the verdict A stored
		if n := svc.callCount(); n != 1 {
			t.Fatalf("%d calls; want 1 (B reads A's verdict)", n)
		}
		time.Sleep(11 * time.Second)
		svc.answer("Bearer eu-alice", jsonResponder(http.StatusOK, authnInvalid()))
		if _, err := checkToken(context.Background(), a, "eu-alice"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("check on A after the revocation = %v; want ErrInvalidToken", err)
		}
		svc.set("503")
		time.Sleep(11 * time.Second) // the invalid verdict has expired
		wantUnavailable(t, b, "eu-alice")
		c := fleetReplica(t, svc, store, Config{})
		wantUnavailable(t, c, "eu-alice")
		wantUnavailable(t, a, "eu-alice")
	})
}

// A token the service never confirmed, or whose End User is not an
// APPUSER, is refused with ErrAuthenticationUnavailable while the service
// cannot answer, with or without StaleIfError.
func TestNeverConfirmedTokenRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		if _, err := checkToken(context.Background(), a, "eu-sa"); !errors.Is(err, ErrForbiddenRole) {
			t.Fatalf("service account: %v; want ErrForbiddenRole", err)
		}
		svc.set("503")
		time.Sleep(11 * time.Second)
		wantUnavailable(t, a, "eu-new")
		wantUnavailable(t, a, "eu-sa")
	})
}

// Forget ends the grace at once on its replica, even while the service is
// down and the token was let through stale a moment before.
func TestForgetDuringAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		wantPass(t, a, "eu-alice", alice)
		svc.set("hang")
		time.Sleep(11 * time.Second)
		wantPass(t, a, "eu-alice", stale(alice))
		if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
			t.Fatal(err)
		}
		wantUnavailable(t, a, "eu-alice")
		time.Sleep(10 * time.Second)
		wantUnavailable(t, a, "eu-alice")
	})
}

// Forget on one replica during an outage ends the grace on every replica:
// at once on its own, and on another once that one's in-process copy of
// the store's record is 5s old; a replica that never saw the token never
// lets it through.
func TestForgetDuringAnOutageOnEveryReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		a, b := fleetReplica(t, svc, store, Config{}), fleetReplica(t, svc, store, Config{})
		wantPass(t, a, "eu-alice", alice)
		svc.set("503")
		time.Sleep(11 * time.Second)
		wantPass(t, b, "eu-alice", stale(alice)) // on the store's record
		if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
			t.Fatal(err)
		}
		wantUnavailable(t, a, "eu-alice")
		time.Sleep(sharedFirstLevelTTL + time.Nanosecond)
		wantUnavailable(t, b, "eu-alice")
		wantUnavailable(t, fleetReplica(t, svc, store, Config{}), "eu-alice")
	})
}

// A Forget of another token while a check reads the store's record of its
// own does not void that record: the token is let through stale, not
// refused (every Forget voided every such read, a spurious 503 for a busy
// service's users whenever any of them signed out). A Forget of the
// token itself still does; so does one past what the replica remembers.
func TestForgetOfAnotherTokenKeepsTheRecord(t *testing.T) {
	for _, tt := range []struct {
		name    string
		forget  []string
		refused bool
	}{
		{"another token", []string{"Bearer eu-bob"}, false},
		{"the token", []string{"Bearer eu-alice"}, true},
		{"more than are remembered", slices.Repeat([]string{"Bearer eu-bob"}, 65), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, store := newOutageService(), newMemStore()
				wantPass(t, fleetReplica(t, svc, store, Config{}), "eu-alice", alice)
				svc.set("503")
				time.Sleep(11 * time.Second)
				b := fleetReplica(t, svc, store, Config{})
				var busy atomic.Bool
				store.setHook(func(_ context.Context, op, _ string) error {
					if op != "get" || !busy.CompareAndSwap(false, true) {
						return nil
					}
					defer busy.Store(false)
					for _, header := range tt.forget { // on every read: at least one comes after the check's generation
						if err := b.Forget(context.Background(), header); err != nil {
							t.Error(err)
						}
					}
					return nil
				})
				if tt.refused {
					wantUnavailable(t, b, "eu-alice")
				} else {
					wantPass(t, b, "eu-alice", stale(alice))
				}
			})
		})
	}
}

// A replica that never saw the token lets it through stale on the store's
// record of the service's answer, kept past the verdict's expiry; when the
// store cannot answer either, the check fails closed.
func TestReplicaThatNeverSawTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		wantPass(t, fleetReplica(t, svc, store, Config{}), "eu-alice", alice)
		svc.set("hang")
		time.Sleep(50 * time.Second) // past CacheTTL, within StaleIfError
		wantPass(t, fleetReplica(t, svc, store, Config{}), "eu-alice", stale(alice))

		store.setHook(func(context.Context, string, string) error { return errStoreDown })
		wantUnavailable(t, fleetReplica(t, svc, store, Config{}), "eu-alice")
	})
}

// Answers of the service are never a reason to let a token through stale:
// a 4xx other than 429 (the management token refused, say), a redirect or
// a page that is not the API's (ErrMisconfigured), a malformed 200. Nor do
// they count as failures towards the breaker.
func TestAnswersNeverServeStale(t *testing.T) {
	tests := []struct {
		name   string
		answer httpmock.Responder
	}{
		{"401", jsonResponder(http.StatusUnauthorized, map[string]any{"reason": ReasonUnauthorized, "error_message": ""})},
		{"403", jsonResponder(http.StatusForbidden, map[string]any{"reason": "auth.forbidden", "error_message": ""})},
		{"404", jsonResponder(http.StatusNotFound, map[string]any{"reason": ReasonEntityNotFound, "error_message": ""})},
		{"redirect", rawResponder(http.StatusFound, "text/plain", "").HeaderSet(http.Header{"Location": {"https://elsewhere.example/"}})},
		{"HTML page", rawResponder(http.StatusOK, "text/html", "<html>Sign in</html>")},
		{"malformed 200", rawResponder(http.StatusOK, "application/json", `{"is_token_valid":"yes"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newOutageService()
				a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
				wantPass(t, a, "eu-alice", alice)
				time.Sleep(11 * time.Second)
				svc.answer("Bearer eu-alice", tt.answer)
				for range authBreakerThreshold + 1 {
					u, err := checkToken(context.Background(), a, "eu-alice")
					var held *AuthenticationUnavailableError
					if err == nil || u != nil || errors.As(err, &held) {
						t.Fatalf("check = %+v, %v; want a refusal, not a stale pass nor the breaker's", u, err)
					}
				}
				if a.breaker.IsOpen() {
					t.Error("the breaker opened on answers")
				}
			})
		})
	}
}

// heldError returns the *AuthenticationUnavailableError of a check
// refused while the breaker is open, which must answer at once.
func heldError(t *testing.T, a *Authenticator, token string) *AuthenticationUnavailableError {
	t.Helper()
	start := time.Now()
	err := wantUnavailable(t, a, token)
	if took := time.Since(start); took != 0 {
		t.Errorf("a check while the breaker is open took %v; want an answer at once", took)
	}
	var held *AuthenticationUnavailableError
	if !errors.As(err, &held) || held.RetryAfter < time.Second {
		t.Fatalf("check = %v; want an *AuthenticationUnavailableError with RetryAfter at least 1s", err)
	}
	return held
}

// The breaker opens after authBreakerThreshold calls in a row got no
// answer, for a cool-down of about 1s (±20%) that doubles with each
// failed probe up to 30s, jittered; a check refused meanwhile carries the
// rest of it. StaleIfError plays no part.
func TestAuthBreakerCoolDownGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		var seen breakerLog
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1, Observer: seen.observer()})}
		svc.set("503")
		for i := range authBreakerThreshold {
			err := wantUnavailable(t, a, fmt.Sprint("eu-", i))
			// The breaker opens once the failing call's checks are answered
			// (the Observer is hosted code): the check whose call opened it
			// may or may not carry RetryAfter.
			var held *AuthenticationUnavailableError
			if errors.As(err, &held) && i < authBreakerThreshold-1 {
				t.Fatalf("failure %d: %v; want no *AuthenticationUnavailableError before the breaker opened", i+1, err)
			}
			synctest.Wait()
		}
		if got := seen.all(); len(got) != 1 || got[0].Breaker != BreakerAuthenticate || !got[0].Open {
			t.Fatalf("the Observer was told %+v; want the authenticate breaker opening", got)
		}
		calls := svc.callCount()
		exact := 0
		want := time.Second
		for probe := range 7 {
			held := heldError(t, a, "eu-next")
			// RetryAfter is the rest of the cool-down, at least 1s (a
			// Retry-After header counts whole seconds): the first
			// cool-down, jittered below 1s, ends before it.
			rest := a.breaker.Remaining()
			if held.RetryAfter != max(rest, time.Second) {
				t.Fatalf("cool-down %d: RetryAfter %v; want the rest of it, %v, or 1s", probe, held.RetryAfter, rest)
			}
			if rest < want*8/10 || rest > want*12/10 {
				t.Fatalf("cool-down %d is %v; want %v ±20%%", probe, rest, want)
			}
			if rest == want {
				exact++
			}
			time.Sleep(rest - time.Nanosecond)
			heldError(t, a, "eu-next") // not yet
			synctest.Wait()            // a call it started would have reached the service
			if n := svc.callCount(); n != calls {
				t.Fatalf("%d calls during the cool-down", n-calls)
			}
			time.Sleep(time.Nanosecond)
			heldError(t, a, "eu-probe") // starts the probe, not waiting for it
			synctest.Wait()
			calls++
			if n := svc.callCount(); n != calls {
				t.Fatalf("%d calls after the cool-down; want one probe", n-calls+1)
			}
			want = min(2*want, authMaxCoolDown)
		}
		if exact == 7 {
			t.Error("no cool-down was jittered")
		}
	})
}

// While the breaker is open, a check answers at once, the Handler with
// 503 and Retry-After (the rest of the cool-down, in seconds rounded up);
// once the cool-down is over, one probe at a time calls the service, and
// no check waits for it. The onset costs each of the first
// authBreakerThreshold checks its Timeout.
func TestAuthBreakerOneProbeNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		a := &Authenticator{Client: svc.replica(t, Config{})}
		svc.set("hang")
		for i := range authBreakerThreshold {
			start := time.Now()
			wantUnavailable(t, a, fmt.Sprint("eu-", i))
			if took := time.Since(start); took != defaultAuthTimeout {
				t.Errorf("check %d before the breaker opened took %v; want the Timeout", i, took)
			}
			synctest.Wait() // the failure reported to the breaker
		}
		opened := time.Now()
		held := heldError(t, a, "eu-x")
		res := authnServe(t, context.Background(), a, "Bearer eu-y")
		secs := strconv.Itoa(int((held.RetryAfter + time.Second - 1) / time.Second))
		if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != secs {
			t.Errorf("the Handler answered %d, Retry-After %q; want 503, %s", res.status, res.header.Get("Retry-After"), secs)
		}
		time.Sleep(held.RetryAfter)
		for round := range 3 {
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() { heldError(t, a, fmt.Sprint("eu-round-", round, "-", i)) })
			}
			wg.Wait()
			for i := range 20 { // one of them is the probe's token: not joined
				wg.Go(func() { heldError(t, a, fmt.Sprint("eu-round-", round, "-", i)) })
			}
			wg.Wait()
			time.Sleep(time.Second)
		}
		if n := svc.running(); n != 1 {
			t.Errorf("%d calls running; want the probe alone", n)
		}
		if n := svc.mostAtOnce(opened); n != 1 {
			t.Errorf("%d calls at once since the breaker opened; want 1", n)
		}
		time.Sleep(defaultAuthTimeout) // the probe fails
	})
}

// Once the service answers again, checks call it within one cool-down,
// the breaker closes and passes are fresh again. StaleIfError 0 refuses a
// confirmed token past CacheTTL during the outage, as always.
func TestAuthBreakerRecovers(t *testing.T) {
	for _, grace := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint("StaleIfError ", grace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newOutageService()
				var seen breakerLog
				a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1, Observer: seen.observer()}), CacheTTL: 10 * time.Second, StaleIfError: grace}
				wantPass(t, a, "eu-alice", alice)
				svc.set("503")
				time.Sleep(11 * time.Second)
				for i := range authBreakerThreshold {
					if grace > 0 {
						wantPass(t, a, "eu-alice", stale(alice))
					} else {
						wantUnavailable(t, a, fmt.Sprint("eu-", i))
					}
					synctest.Wait() // the failure reported to the breaker
				}
				if !a.breaker.IsOpen() {
					t.Fatal("the breaker did not open")
				}
				held := heldError(t, a, "eu-new")
				if grace == 0 {
					wantUnavailable(t, a, "eu-alice")
				}
				svc.set("")
				back, calls := time.Now(), svc.callCount()
				time.Sleep(held.RetryAfter - time.Nanosecond)
				if svc.callCount() != calls {
					t.Fatal("the service was called during the cool-down")
				}
				time.Sleep(time.Nanosecond)
				_, _ = checkToken(context.Background(), a, "eu-alice") // the probe
				synctest.Wait()
				if a.breaker.IsOpen() {
					t.Fatalf("the breaker is open %v after the service answered again; want it closed within the cool-down, %v", time.Since(back), held.RetryAfter)
				}
				wantPass(t, a, "eu-alice", alice)
				time.Sleep(11 * time.Second)
				wantPass(t, a, "eu-alice", alice)
				if got := seen.all(); len(got) != 2 || got[1].Breaker != BreakerAuthenticate || got[1].Open {
					t.Errorf("the Observer was told %+v; want the authenticate breaker opening and closing", got)
				}
			})
		})
	}
}

// logRecords is a slog.Handler that keeps the records it is given.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// find returns the records at level whose message is msg.
func (h *logRecords) find(level slog.Level, msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []slog.Record
	for _, r := range h.records {
		if r.Level == level && r.Message == msg {
			found = append(found, r)
		}
	}
	return found
}

// attr returns r's attribute key.
func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

const (
	logGraceUseless = "management: Authenticator.StaleIfError is not longer than CacheTTL, so it lets no token through: its grace counts from the service's last confirmation, and the verdict is cached that long anyway"
	logStaleStarts  = "management: the service cannot check End User tokens; letting through, marked Stale, those it confirmed within StaleIfError"
	logStaleEnds    = "management: the service checks End User tokens again; tokens let through stale meanwhile counted"
)

// A StaleIfError above 0 and no longer than CacheTTL, which lets nothing
// through, is logged once.
func TestUselessGraceLoggedOnce(t *testing.T) {
	for _, tt := range []struct {
		ttl, grace time.Duration
		want       int
	}{
		{0, defaultAuthCacheTTL, 1},
		{time.Minute, time.Second, 1},
		{time.Minute, time.Minute + 1, 0},
		{time.Minute, 0, 0},
		{time.Minute, -time.Second, 0},
	} {
		var logs logRecords
		c, _ := setup(t, Config{Logger: slog.New(&logs)})
		a := &Authenticator{Client: c, CacheTTL: tt.ttl, StaleIfError: tt.grace}
		for range 3 {
			_, _ = a.Check(authnRequest(context.Background(), ""))
		}
		if got := logs.find(slog.LevelWarn, logGraceUseless); len(got) != tt.want {
			t.Errorf("CacheTTL %v, StaleIfError %v: logged %d times; want %d", tt.ttl, tt.grace, len(got), tt.want)
		}
	}
}

// One Warn when stale serving starts, one Info when the service answers
// again, with the number of stale passes; the Observer tells stale passes
// from fresh ones, and sees the breaker open and close.
func TestStaleServingSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		var logs logRecords
		var mu sync.Mutex
		outcomes := map[AuthOutcome]int{}
		var seen breakerLog
		obs := seen.observer()
		obs.AuthCheck = func(_ context.Context, o AuthOutcome) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[o]++
		}
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1, Logger: slog.New(&logs), Observer: obs}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		wantPass(t, a, "eu-alice", alice)
		wantPass(t, a, "eu-bob", EndUser{ID: "u-bob", Role: RoleAppUser})
		svc.set("503")
		time.Sleep(11 * time.Second)
		for _, token := range []string{"eu-alice", "eu-bob", "eu-alice", "eu-bob"} {
			_, _ = checkToken(context.Background(), a, token)
		}
		synctest.Wait() // the failures reported to the breaker
		if got := logs.find(slog.LevelWarn, logStaleStarts); len(got) != 1 {
			t.Errorf("%d Warn records of stale serving; want 1", len(got))
		}
		svc.set("")
		held := heldError(t, a, "eu-new")
		time.Sleep(held.RetryAfter)
		heldError(t, a, "eu-new") // the probe
		synctest.Wait()
		wantPass(t, a, "eu-bob", EndUser{ID: "u-bob", Role: RoleAppUser})
		ends := logs.find(slog.LevelInfo, logStaleEnds)
		if len(ends) != 1 || attr(ends[0], "stale_passes").Int64() != 4 {
			t.Errorf("Info records of the service back: %v; want one, with stale_passes=4", ends)
		}
		if got := logs.find(slog.LevelWarn, logStaleStarts); len(got) != 1 {
			t.Errorf("%d Warn records of stale serving; want 1", len(got))
		}
		mu.Lock()
		want := map[AuthOutcome]int{AuthMiss: 3, AuthStale: 4, AuthRefused: 2}
		if fmt.Sprint(outcomes) != fmt.Sprint(want) {
			t.Errorf("the Observer was told %v; want %v", outcomes, want)
		}
		mu.Unlock()
		if got := seen.all(); len(got) != 2 || got[0].Breaker != BreakerAuthenticate || !got[0].Open || got[1].Open {
			t.Errorf("breaker changes %+v; want the authenticate breaker opening, then closing", got)
		}
	})
}

// A check the breaker held, whose probe (the call it started) has
// answered by the time the check looks for a way through, ends with that
// answer, not with a stale pass after the service came back: the -outage
// demo logged "letting through" a second time, and a run of one stale
// pass, whenever the probe won that race.
func TestHeldCheckTakesTheProbesAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := newOutageService()
		var logs logRecords
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1, Logger: slog.New(&logs)}), CacheTTL: 10 * time.Second, StaleIfError: time.Minute}
		wantPass(t, a, "eu-alice", alice) // the probe's answer, cached as it settled
		const header = "Bearer eu-alice"
		v, outcome, err := a.unanswered(context.Background(), headerDigest(header), header, AuthRefused, errHeld, nil)
		if err != nil || v.err != nil || v.user != alice || outcome != AuthMiss {
			t.Errorf("the held check ended with %+v (outcome %v), %v; want the probe's fresh answer, %+v", v.user, outcome, err, alice)
		}
		if n := a.stalePasses.Load(); n != 0 {
			t.Errorf("%d stale passes counted; want none", n)
		}
		if got := logs.find(slog.LevelWarn, logStaleStarts); len(got) != 0 {
			t.Errorf("%d Warn records of stale serving; want none", len(got))
		}
	})
}

// An invalid answer whose write to the store failed still ends the grace
// on its replica: the older valid record the store keeps does not undo
// it.
func TestInvalidAnswerNotUndoneByAnOlderRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		a := fleetReplica(t, svc, store, Config{})
		wantPass(t, a, "eu-alice", alice)
		time.Sleep(11 * time.Second)
		svc.answer("Bearer eu-alice", jsonResponder(http.StatusOK, authnInvalid()))
		store.setHook(func(_ context.Context, op, _ string) error {
			if op == "set" {
				return errStoreDown
			}
			return nil
		})
		if _, err := checkToken(context.Background(), a, "eu-alice"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("check after the revocation = %v; want ErrInvalidToken", err)
		}
		store.setHook(nil)
		svc.set("503")
		time.Sleep(11 * time.Second) // the invalid verdict has expired; the store's breaker is closed again
		wantUnavailable(t, a, "eu-alice")
	})
}

// The target: with StaleIfError 60s, the service down (hung, or
// 503) for 20s after every End User was confirmed, no confirmed End User
// is refused; a token never confirmed is refused with 503 and Retry-After
// at once once the breaker is open; at most one probe runs at a time;
// after the service is back, checks call it again within one cool-down
// and Stale is false.
func TestOutageTarget(t *testing.T) {
	for _, down := range []string{"hang", "503"} {
		t.Run(down, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newOutageService()
				var seen breakerLog
				obs := seen.observer()
				var openedMu sync.Mutex
				var openedAt time.Time
				tell := obs.BreakerChange
				obs.BreakerChange = func(ctx context.Context, b BreakerInfo) {
					openedMu.Lock()
					if b.Open && openedAt.IsZero() {
						openedAt = time.Now()
					}
					openedMu.Unlock()
					tell(ctx, b)
				}
				a := &Authenticator{Client: svc.replica(t, Config{Observer: obs}), CacheTTL: 2 * time.Second, StaleIfError: time.Minute}
				const users = 20
				for i := range users {
					svc.answer(fmt.Sprint("Bearer eu-", i), jsonResponder(http.StatusOK, authnValid(fmt.Sprint("u-", i), RoleAppUser)))
					wantPass(t, a, fmt.Sprint("eu-", i), EndUser{ID: fmt.Sprint("u-", i), Role: RoleAppUser})
				}
				svc.set(down)
				start := time.Now()
				var mu sync.Mutex
				var refused, stalePasses int
				var wg sync.WaitGroup
				tick := 0
				for time.Since(start) < 20*time.Second {
					i := tick % users
					wg.Go(func() { // a confirmed End User: may wait while the breaker is closed
						u, err := checkToken(context.Background(), a, fmt.Sprint("eu-", i))
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err != nil:
							refused++
							t.Errorf("confirmed End User u-%d refused: %v", i, err)
						case u.Stale:
							stalePasses++
						}
					})
					open := a.breaker.IsOpen() // the probe's turn too: the probe runs on its own
					began := time.Now()
					res := authnServe(t, context.Background(), a, fmt.Sprint("Bearer never-", tick))
					if open && (res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" || time.Since(began) != 0) {
						t.Errorf("a token never confirmed, breaker open: %d, Retry-After %q after %v; want 503 with Retry-After, at once",
							res.status, res.header.Get("Retry-After"), time.Since(began))
					}
					tick++
					time.Sleep(100 * time.Millisecond)
				}
				wg.Wait()
				got := seen.all()
				if len(got) != 1 || !got[0].Open {
					t.Fatalf("breaker changes during the outage %+v; want it opened", got)
				}
				openedMu.Lock()
				since := openedAt
				openedMu.Unlock()
				if n := svc.mostAtOnce(since); n > 1 {
					t.Errorf("%d calls at once since the breaker opened; want one probe at a time", n)
				}
				if refused > 0 || stalePasses == 0 {
					t.Errorf("%d confirmed End Users refused, %d stale passes; want 0 refused", refused, stalePasses)
				}

				svc.set("")
				synctest.Wait()
				for svc.running() > 0 { // a hung probe ends at its Timeout
					time.Sleep(100 * time.Millisecond)
				}
				synctest.Wait()
				back := time.Now()
				coolDown := time.Duration(0)
				if a.breaker.IsOpen() {
					coolDown = a.breaker.Remaining()
				}
				for {
					u, err := checkToken(context.Background(), a, "eu-0")
					if err != nil {
						t.Fatalf("after recovery: %v", err)
					}
					if !u.Stale {
						break
					}
					if time.Since(back) > coolDown+100*time.Millisecond {
						t.Fatalf("still stale %v after the service answered again; want fresh within the cool-down, %v", time.Since(back), coolDown)
					}
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
				}
				if a.breaker.IsOpen() {
					t.Error("the breaker is still open after a fresh pass")
				}
			})
		})
	}
}

// An Authenticator prints StaleIfError when it is set, and only then (it
// is off by default).
func TestAuthenticatorPrintsStaleIfError(t *testing.T) {
	set, unset := &Authenticator{StaleIfError: time.Minute}, &Authenticator{}
	if s := set.String(); !strings.Contains(s, ", StaleIfError:1m0s,") {
		t.Errorf("String() = %s; want StaleIfError:1m0s", s)
	}
	if s := unset.String(); strings.Contains(s, "StaleIfError") {
		t.Errorf("String() = %s; want no StaleIfError", s)
	}
	if v := set.LogValue().String(); !strings.Contains(v, "stale_if_error=1m0s") {
		t.Errorf("LogValue() = %s; want stale_if_error=1m0s", v)
	}
	if v := unset.LogValue().String(); strings.Contains(v, "stale_if_error") {
		t.Errorf("LogValue() = %s; want no stale_if_error", v)
	}
}

// The epoch Forget sets lives 2·max(CacheTTL, StaleIfError) + Timeout:
// longer than any record a check in flight may still write under the
// epoch before it, kept for its grace.
func TestForgetEpochOutlivesTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		a := fleetReplica(t, newOutageService(), store, Config{})
		a.Timeout = 3 * time.Second
		if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		found := false
		for key, e := range store.entries {
			if strings.HasSuffix(key, ":epoch") {
				found = true
				if life := time.Until(e.expires); life != 2*time.Minute+3*time.Second {
					t.Errorf("the epoch lives %v; want 2·StaleIfError + Timeout, 2m3s", life)
				}
			}
		}
		if !found {
			t.Fatal("Forget set no epoch")
		}
	})
}

// cutResponder answers status with a JSON body of which the connection
// delivers only the start, then fails: io.ErrUnexpectedEOF, as net/http
// reports a body shorter than its Content-Length.
func cutResponder(status int, start string) httpmock.Responder {
	return func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			ContentLength: int64(len(start)) + 100, Request: r,
			Body: io.NopCloser(io.MultiReader(strings.NewReader(start), iotest.ErrReader(io.ErrUnexpectedEOF)))}, nil
	}
}

// "Cannot answer" is judged by what happened, not by the error's type:
// once the management token has expired, the token endpoint's 503 and 429
// in its OAuth 2.0 shape ({"error": "temporarily_unavailable"}), and a 200
// whose body the connection cut, from the token endpoint or the
// authenticate endpoint, are outages: a confirmed End User passes stale,
// and calls that end so open the breaker.
func TestOutagesOfEveryShape(t *testing.T) {
	oauth := func(status int) httpmock.Responder {
		return jsonResponder(status, map[string]any{"error": "temporarily_unavailable", "error_description": "down for maintenance"}).
			HeaderSet(http.Header{"Retry-After": {"1"}})
	}
	for _, tc := range []struct {
		name         string
		token, authn httpmock.Responder // nil: as when up
	}{
		{name: "token endpoint 503 in the OAuth shape", token: oauth(http.StatusServiceUnavailable)},
		{name: "token endpoint 429 in the OAuth shape", token: oauth(http.StatusTooManyRequests)},
		{name: "token endpoint 200 cut", token: cutResponder(http.StatusOK, `{"access_token":"mgmt-tok`)},
		{name: "authenticate 200 cut", authn: cutResponder(http.StatusOK, `{"is_token_valid":tr`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newOutageService()
				c, mt := setup(t, Config{MaxRetries: -1})
				var down atomic.Bool
				tokens := jsonResponder(http.StatusOK, map[string]any{"access_token": mockToken, "token_type": "Bearer", "expires_in": 60})
				mt.RegisterResponder(http.MethodPost, tokenURL, func(r *http.Request) (*http.Response, error) {
					if down.Load() && tc.token != nil {
						return tc.token(r)
					}
					return tokens(r)
				})
				mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
					if down.Load() && tc.authn != nil {
						return tc.authn(r)
					}
					return svc.respond(r)
				})
				a := &Authenticator{Client: c, CacheTTL: 10 * time.Second, StaleIfError: 5 * time.Minute}
				wantPass(t, a, "eu-alice", alice)
				time.Sleep(2 * time.Minute) // the verdict and the management token have expired
				down.Store(true)
				wantPass(t, a, "eu-alice", stale(alice))
				for i := range authBreakerThreshold - 1 { // with alice's, calls that got no answer
					wantUnavailable(t, a, fmt.Sprint("eu-", i))
				}
				synctest.Wait()
				if !a.breaker.IsOpen() {
					t.Errorf("the breaker is closed after %d calls that got no answer; want it open", authBreakerThreshold)
				}
			})
		})
	}
}

// A check waits for the store once, within one SharedStoreTimeout, its
// fallback included: the record its call read at the start serves the
// stale pass, rather than a second read with a budget of its own (a check
// waited 2 s against a SharedStoreTimeout of 1 s). With a store too slow
// for that read, the check fails closed after one SharedStoreTimeout.
func TestOneStoreBudgetPerCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   time.Duration // what each store operation takes
	}{{"store answering", 0}, {"store slow", 600 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := newOutageService()
				store := newMemStore()
				cfg := Config{SharedStoreTimeout: time.Second}
				wantPass(t, fleetReplica(t, svc, store, cfg), "eu-alice", alice) // the record
				time.Sleep(11 * time.Second)                                     // the verdict has expired, within the grace
				svc.set("503")
				a := fleetReplica(t, svc, store, cfg)
				store.setHook(func(context.Context, string, string) error {
					time.Sleep(tc.op) // ignoring its context, as a busy network client
					return nil
				})
				store.resetCalls()
				start := time.Now()
				u, err := checkToken(context.Background(), a, "eu-alice")
				if took := time.Since(start); took > time.Second {
					t.Errorf("the check took %v; want at most one SharedStoreTimeout, 1s", took)
				}
				switch {
				case tc.op == 0 && (err != nil || *u != stale(alice)):
					t.Errorf("check = %+v, %v; want alice let through stale", u, err)
				case tc.op > 0 && !errors.Is(err, ErrAuthenticationUnavailable):
					t.Errorf("check = %+v, %v; want ErrAuthenticationUnavailable (the store could not be read in time)", u, err)
				}
				if n := store.callsTo(":epoch"); n != 1 {
					t.Errorf("the token's epoch was read %d times; want once", n)
				}
				time.Sleep(time.Second) // the operations left running
			})
		})
	}
}

// An Authenticator's call stops retrying once it cannot help the check:
// the breaker's probe, run while the breaker is open, tries once (it made
// the Client's 5 attempts, 4 "retrying" lines, each probe); and a call
// whose next attempt, as long as the last, would end past Timeout does
// not start it, and fails at once rather than at Timeout.
func TestCheckRetriesStopWhenTheyCannotHelp(t *testing.T) {
	t.Run("the probe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			svc := newOutageService()
			a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: 4})}
			svc.set("503")
			for i := range authBreakerThreshold {
				wantUnavailable(t, a, fmt.Sprint("eu-", i))
			}
			synctest.Wait()
			if !a.breaker.IsOpen() {
				t.Fatal("the breaker did not open")
			}
			time.Sleep(a.breaker.Remaining())
			before := svc.callCount()
			heldError(t, a, "eu-probe") // starts the probe
			time.Sleep(a.timeout)       // the probe and any retries have ended
			if n := svc.callCount() - before; n != 1 {
				t.Errorf("the probe made %d attempts; want 1", n)
			}
		})
	})
	t.Run("Timeout cannot fit another try", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, mt := setup(t, Config{MaxRetries: 4, RetryWaitMin: 250 * time.Millisecond, RetryWaitMax: time.Second})
			attempts := 0
			mt.RegisterResponder(http.MethodPost, authnEndpoint, func(r *http.Request) (*http.Response, error) {
				attempts++
				time.Sleep(2 * time.Second) // a 503 that takes 2 s
				return jsonResponder(http.StatusServiceUnavailable, map[string]any{"reason": "SERVICE.UNAVAILABLE", "error_message": ""})(r)
			})
			a := &Authenticator{Client: c} // Timeout 5s
			start := time.Now()
			err := wantUnavailable(t, a, "eu-alice")
			// 2 s, 250 ms, 2 s: a third attempt would end past 5 s.
			if took := time.Since(start); took != 4250*time.Millisecond || attempts != 2 {
				t.Errorf("the check failed after %v and %d attempts; want 4.25s and 2", took, attempts)
			}
			var api *APIError
			if !errors.As(err, &api) || api.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("err = %v; want the last answer, 503", err)
			}
		})
	})
}

// The record a check's call read as it started serves that check's stale
// pass however late the call fails: with the service hanging and a
// Timeout of 8 s, the record is 8 s old when the call fails, past the 5 s
// any replica keeps a record for later checks, and the confirmed End User
// passes stale rather than being refused (on a busy host, a call that
// failed at its Timeout found the record it read expired by a few
// milliseconds).
func TestOwnRecordServesALateFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		wantPass(t, fleetReplica(t, svc, store, Config{}), "eu-alice", alice) // the record
		time.Sleep(11 * time.Second)                                          // past CacheTTL
		svc.set("hang")
		a := fleetReplica(t, svc, store, Config{})
		a.Timeout = 8 * time.Second
		start := time.Now()
		wantPass(t, a, "eu-alice", stale(alice))
		if took := time.Since(start); took != 8*time.Second {
			t.Errorf("the check took %v; want Timeout, 8s", took)
		}
	})
}

// A replica whose own latest answer on a token is newer than the store's
// record (its write was lost, or an older answer overwrote it) lets the
// token through stale on the record its check read, the grace counting
// from its own answer: at the onset of an outage, checks of tokens a
// replica had confirmed itself were refused, as if that newer answer voided
// the record.
func TestNewerConfirmationHereKeepsTheRecordUsable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		wantPass(t, fleetReplica(t, svc, store, Config{}), "eu-alice", alice) // the store's record, answered now
		time.Sleep(11 * time.Second)
		a := fleetReplica(t, svc, store, Config{})
		store.setHook(failingOn("set"))
		wantPass(t, a, "eu-alice", alice) // a asks itself; its newer answer is not stored
		store.setHook(nil)
		time.Sleep(11 * time.Second) // past CacheTTL and a's 5 s grace cap, within StaleIfError
		svc.set("503")
		wantPass(t, a, "eu-alice", stale(alice))
	})
}

// Once the breaker is open only its probe calls the service: a check's
// call that started before it opened, and was still waiting on another
// replica's lease when it did, does not call the service then (two calls
// ran at once on one replica while its breaker was open, in the fleet
// harness); the check ends as the breaker holds it.
func TestCallStartedBeforeTheBreakerOpenedDoesNotCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, store := newOutageService(), newMemStore()
		a := fleetReplica(t, svc, store, Config{})
		wantPass(t, a, "eu-bob", EndUser{ID: "u-bob", Role: RoleAppUser}) // a is set up
		svc.set("503")
		store.squat(a.Client.seal.VerdictSlot("Bearer eu-alice")+":lease", time.Minute) // another replica asks about alice
		done := make(chan error, 1)
		go func() {
			_, err := checkToken(context.Background(), a, "eu-alice") // waits on the lease, up to 1 s
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		for i := range authBreakerThreshold {
			wantUnavailable(t, a, fmt.Sprint("eu-", i))
		}
		synctest.Wait()
		if !a.breaker.IsOpen() {
			t.Fatal("the breaker did not open")
		}
		err := <-done
		var held *AuthenticationUnavailableError
		if !errors.As(err, &held) {
			t.Errorf("the check waiting on the lease: %v; want the breaker's refusal", err)
		}
		svc.mu.Lock()
		defer svc.mu.Unlock()
		for _, c := range svc.calls {
			if c.header == "Bearer eu-alice" {
				t.Errorf("a call about alice at %v, the breaker open", c.start)
			}
		}
	})
}
