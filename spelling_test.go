package management

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// An authorization scheme is case-insensitive (RFC 9110, 11.1): "bearer T"
// and "Bearer T" carry the same credential. Forget of either drops both, in
// ASCII case only; verdicts stay per spelling as received.

// checkHeader checks the Authorization value header as it stands.
func checkHeader(t *testing.T, a *Authenticator, header string) (*EndUser, error) {
	t.Helper()
	_, u, err := a.CheckAuthorization(context.Background(), []string{header})
	return u, err
}

// spellingService is an outageService that knows alice under the
// spellings given, each as the service judges it.
func spellingService(valid ...string) *outageService {
	svc := newOutageService()
	for _, h := range valid {
		svc.answer(h, jsonResponder(http.StatusOK, authnValid("u-alice", RoleAppUser)))
	}
	return svc
}

// After Forget of one spelling, no spelling of the credential passes from
// the cache: each asks the service again (here, which revoked it). A scheme
// that differs in more than ASCII case (a Kelvin sign for the K) is
// another credential, left alone. Verdicts stay per spelling: the service
// judging "BEARER" invalid and the others valid, each keeps its own.
func TestForgetReachesEverySpelling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spellings := []string{"Bearer eu-alice", "bearer eu-alice", "bEaReR eu-alice"}
		other := "To\u212Aen eu-alice" // not "Token" but for Unicode folding
		svc := spellingService(append(spellings, "Token eu-alice", other)...)
		a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: time.Minute, StaleIfError: 10 * time.Minute}
		for _, h := range append(spellings, "BEARER eu-alice", other) {
			_, _ = checkHeader(t, a, h)
		}
		calls := svc.callCount()
		for _, h := range spellings {
			if u, err := checkHeader(t, a, h); err != nil || *u != alice {
				t.Fatalf("%q: %+v, %v; want alice, cached", h, u, err)
			}
		}
		if _, err := checkHeader(t, a, "BEARER eu-alice"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("%q: %v; want its own verdict, invalid", "BEARER eu-alice", err)
		}
		if n := svc.callCount() - calls; n != 0 {
			t.Fatalf("%d calls for cached verdicts; want 0", n)
		}

		for _, h := range spellings {
			svc.answer(h, jsonResponder(http.StatusOK, authnInvalid())) // revoked
		}
		if err := a.Forget(context.Background(), "bEARER eu-alice"); err != nil { // a spelling never checked
			t.Fatal(err)
		}
		for _, h := range spellings {
			if u, err := checkHeader(t, a, h); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("%q after Forget: %+v, %v; want the service asked again (invalid)", h, u, err)
			}
		}
		if u, err := checkHeader(t, a, other); err != nil || *u != alice {
			t.Errorf("%q, another scheme: %+v, %v; want alice, cached still", other, u, err)
		}
	})
}

// After Forget of one spelling, no spelling passes stale during an outage:
// not on this replica's record, nor, past the in-process cache's 5 s, on
// another replica or one that never saw the token, whose stale pass rests
// on the store's record.
func TestForgetReachesEverySpellingStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spellings := []string{"Bearer eu-alice", "bearer eu-alice", "BEARER eu-alice"}
		svc, store := spellingService(spellings...), newMemStore()
		a, b := fleetReplica(t, svc, store, Config{}), fleetReplica(t, svc, store, Config{})
		for _, h := range spellings {
			if _, err := checkHeader(t, a, h); err != nil {
				t.Fatal(err)
			}
		}
		svc.set("503")
		time.Sleep(11 * time.Second) // past CacheTTL, within StaleIfError
		for _, h := range spellings {
			if u, err := checkHeader(t, b, h); err != nil || *u != stale(alice) {
				t.Fatalf("%q on another replica, before Forget: %+v, %v; want a stale pass on the store's record", h, u, err)
			}
		}
		if err := a.Forget(context.Background(), "bEaReR eu-alice"); err != nil {
			t.Fatal(err)
		}
		for _, h := range spellings {
			if u, err := checkHeader(t, a, h); !errors.Is(err, ErrAuthenticationUnavailable) {
				t.Errorf("%q after Forget, on its replica: %+v, %v; want ErrAuthenticationUnavailable", h, u, err)
			}
		}
		time.Sleep(sharedFirstLevelTTL + time.Nanosecond)
		c := fleetReplica(t, svc, store, Config{})
		for _, r := range []*Authenticator{b, c} {
			for _, h := range spellings {
				if u, err := checkHeader(t, r, h); !errors.Is(err, ErrAuthenticationUnavailable) {
					t.Errorf("%q after Forget, on another replica: %+v, %v; want ErrAuthenticationUnavailable", h, u, err)
				}
			}
		}
	})
}

// A stream opened with one spelling is re-checked once another spelling is
// forgotten: Recheck finds no verdict, and the service, asked again, has
// revoked the token.
func TestForgetOfAnotherSpellingReachesRecheck(t *testing.T) {
	svc := spellingService("bearer eu-alice")
	a := &Authenticator{Client: svc.replica(t, Config{MaxRetries: -1}), CacheTTL: time.Hour}
	ctx, _, err := a.CheckAuthorization(context.Background(), []string{"bearer eu-alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Recheck(ctx); err != nil {
		t.Fatalf("Recheck before Forget: %v", err)
	}
	svc.answer("bearer eu-alice", jsonResponder(http.StatusOK, authnInvalid()))
	if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
		t.Fatal(err)
	}
	if err := a.Recheck(ctx); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("Recheck after Forget of another spelling: %v; want ErrInvalidToken", err)
	}
}
