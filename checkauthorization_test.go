package management

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

// CheckAuthorization refuses what Check refuses, the same way and without
// a call, and then returns the context it was given.
func TestCheckAuthorizationRefusesAsCheck(t *testing.T) {
	c, script := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c}
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller's")
	for name, values := range map[string][]string{
		"none":                nil,
		"empty":               {},
		"blank":               {" \t"},
		"not UTF-8":           {"Bearer eu-\xff"},
		"no type":             {"eu-alice"},
		"type alone":          {"Bearer"},
		"several":             {"Bearer eu-alice", "Bearer eu-bob"},
		"the same one twice":  {"Bearer eu-alice", "Bearer eu-alice"},
		"one and a blank one": {"Bearer eu-alice", ""},
		"unknown to the fake": {"Bearer eu-unknown"},
		"a management token":  {"Bearer mgmt-token"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if values != nil {
			r.Header["Authorization"] = values
		}
		_, checkErr := a.Check(r)
		got, user, err := a.CheckAuthorization(ctx, values)
		if err == nil || checkErr == nil {
			t.Errorf("%s: CheckAuthorization = %v, Check = %v; want both refused", name, err, checkErr)
			continue
		}
		if err.Error() != checkErr.Error() || errors.Is(err, ErrMissingToken) != errors.Is(checkErr, ErrMissingToken) {
			t.Errorf("%s: CheckAuthorization = %v; Check = %v", name, err, checkErr)
		}
		var invalid, checkInvalid *InvalidTokenError
		if errors.As(err, &invalid) != errors.As(checkErr, &checkInvalid) || !cmp.Equal(invalid, checkInvalid) {
			t.Errorf("%s: CheckAuthorization's %#v, Check's %#v", name, invalid, checkInvalid)
		}
		if user != nil || got != ctx {
			t.Errorf("%s: CheckAuthorization returned %+v and a context of its own; want nil and the one it was given", name, user)
		}
	}
	if n := script.callsFor(""); n != 2 {
		t.Errorf("%d calls, want 2 (one per token of the service's shape: its verdict is then cached)", n)
	}
}

// The context CheckAuthorization returns carries the End User it returns,
// for EndUserFromContext, through the contexts derived from it.
func TestCheckAuthorizationCarriesEndUser(t *testing.T) {
	c, script := authnSetup(t, Config{}, authnAnswers())
	a := &Authenticator{Client: c}
	type ctxKey struct{}
	parent := context.WithValue(context.Background(), ctxKey{}, "caller's")
	ctx, user, err := a.CheckAuthorization(parent, []string{"Bearer eu-alice"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (&EndUser{ID: "u-alice", Role: RoleAppUser}); !cmp.Equal(user, want) {
		t.Errorf("CheckAuthorization = %+v; want %+v", user, want)
	}
	if ctx.Value(ctxKey{}) != "caller's" {
		t.Error("the returned context does not derive from the one given")
	}
	derived, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, ctx := range []context.Context{ctx, derived} {
		if got, ok := EndUserFromContext(ctx); !ok || got != user {
			t.Errorf("EndUserFromContext = %p, %t; want %p, the End User CheckAuthorization returned", got, ok, user)
		}
	}
	if _, _, err := a.CheckAuthorization(parent, []string{"Bearer eu-alice"}); err != nil || script.callsFor("") != 1 {
		t.Errorf("second CheckAuthorization = %v after %d calls; want nil from the cache", err, script.callsFor(""))
	}
	if _, ok := EndUserFromContext(parent); ok {
		t.Error("the context given carries an End User")
	}
}

func TestCheckAuthorizationWithoutClient(t *testing.T) {
	for name, a := range map[string]*Authenticator{"no Client": {}, "a zero Client": {Client: &Client{}}} {
		ctx, user, err := a.CheckAuthorization(context.Background(), []string{"Bearer eu-alice"})
		if !errors.Is(err, ErrInvalidArgument) || user != nil || ctx != context.Background() {
			t.Errorf("%s: CheckAuthorization = %v, %+v, %v; want ErrInvalidArgument", name, ctx, user, err)
		}
	}
}

// Recheck reads the cached verdict under the key CheckAuthorization
// computed, telling the Observer nothing, and checks again once it has
// expired or been forgotten.
func TestRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &obsRecorder{}
		answers := authnAnswers()
		c, script := authnSetup(t, Config{Observer: rec.observer()}, answers)
		a := &Authenticator{Client: c, CacheTTL: time.Minute}
		ctx, _, err := a.CheckAuthorization(context.Background(), []string{"Bearer eu-alice"})
		if err != nil {
			t.Fatal(err)
		}
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		for range 3 {
			if err := a.Recheck(derived); err != nil {
				t.Fatalf("Recheck = %v", err)
			}
		}
		checks := func() int {
			n := 0
			for _, e := range rec.recorded() {
				if e.Hook == "check" {
					n++
				}
			}
			return n
		}
		if n, m := script.callsFor(""), checks(); n != 1 || m != 1 {
			t.Errorf("%d calls, %d checks observed; want 1 and 1 (Recheck read the cache)", n, m)
		}

		if err := a.Forget(context.Background(), "Bearer eu-alice"); err != nil {
			t.Fatal(err)
		}
		if err := a.Recheck(ctx); err != nil || script.callsFor("") != 2 || checks() != 2 {
			t.Errorf("Recheck after Forget = %v after %d calls, %d checks; want nil after a second call, observed", err, script.callsFor(""), checks())
		}

		// Revoked on the service: refused once the verdict has expired.
		script.mu.Lock()
		script.answers["Bearer eu-alice"] = jsonResponder(http.StatusOK, authnInvalid())
		script.mu.Unlock()
		time.Sleep(time.Minute - time.Nanosecond)
		if err := a.Recheck(ctx); err != nil {
			t.Errorf("Recheck within CacheTTL = %v; want nil", err)
		}
		time.Sleep(time.Nanosecond)
		var invalid *InvalidTokenError
		if err := a.Recheck(ctx); !errors.As(err, &invalid) || script.callsFor("") != 3 {
			t.Errorf("Recheck after CacheTTL = %v after %d calls; want an *InvalidTokenError from a third call", err, script.callsFor(""))
		}
		if err := a.Recheck(ctx); !errors.Is(err, ErrInvalidToken) || script.callsFor("") != 3 {
			t.Errorf("Recheck of the cached refusal = %v after %d calls; want ErrInvalidToken from the cache", err, script.callsFor(""))
		}
		if _, ok := EndUserFromContext(ctx); !ok {
			t.Error("a refused Recheck took the End User out of the context") // the caller ends the request
		}
	})
}

// Recheck refuses a misconfigured Authenticator first, then a context
// without a check, doing nothing else: no report to the Observer.
func TestRecheckMisuse(t *testing.T) {
	rec := &obsRecorder{}
	c, _ := authnSetup(t, Config{Observer: rec.observer()}, authnAnswers())
	a := &Authenticator{Client: c}
	if err := a.Recheck(context.Background()); !errors.Is(err, ErrMissingToken) {
		t.Errorf("Recheck of a context without a check = %v; want ErrMissingToken", err)
	}
	if got := rec.recorded(); len(got) != 0 {
		t.Errorf("Recheck of a context without a check reported %+v", got)
	}
	if err := (&Authenticator{Client: &Client{}}).Recheck(context.Background()); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NewClient") {
		t.Errorf("Recheck of a context without a check, with a zero Client = %v; want ErrInvalidArgument naming NewClient (the Authenticator is refused first)", err)
	}
	ctx, _, err := a.CheckAuthorization(context.Background(), []string{"Bearer eu-alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Authenticator{}).Recheck(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Recheck of an Authenticator without a Client = %v; want ErrInvalidArgument", err)
	}
}

// A Recheck whose context has ended and whose verdict has expired starts no
// call.
func TestRecheckEndedContext(t *testing.T) {
	c, script := authnSetup(t, Config{}, map[string]httpmock.Responder{
		"Bearer eu-alice": jsonResponder(http.StatusOK, authnValid("u-alice", RoleAppUser)),
	})
	a := &Authenticator{Client: c, CacheTTL: -1}
	parent, cancel := context.WithCancel(context.Background())
	ctx, _, err := a.CheckAuthorization(parent, []string{"Bearer eu-alice"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := a.Recheck(ctx); !errors.Is(err, context.Canceled) || script.callsFor("") != 1 {
		t.Errorf("Recheck = %v after %d calls; want context.Canceled after 1", err, script.callsFor(""))
	}
}

// TestRecheckAllocs: a Recheck that reads a cached verdict allocates
// nothing, with an Observer that watches flights too, so that a busy
// stream's every message costs no garbage.
func TestRecheckAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector; .ci/run runs this test without it")
	}
	rec := &obsRecorder{}
	obs := rec.observer()
	obs.FlightJoined = func(context.Context, context.Context) {}
	c, _ := authnSetup(t, Config{Observer: obs}, authnAnswers())
	a := &Authenticator{Client: c, CacheTTL: time.Hour}
	ctx, _, err := a.CheckAuthorization(context.Background(), []string{"Bearer eu-alice"})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := a.Recheck(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Recheck allocates %v times; want 0", n)
	}
}

// BenchmarkRecheck is what a stream pays per message: a Recheck of a cached
// verdict.
func BenchmarkRecheck(b *testing.B) {
	c, _ := authnSetup(b, Config{}, map[string]httpmock.Responder{
		authnBenchRequest().Header.Get("Authorization"): jsonResponder(200, authnValid("u-1", RoleAppUser)),
	})
	a := &Authenticator{Client: c, CacheTTL: time.Hour}
	ctx, _, err := a.CheckAuthorization(context.Background(), authnBenchRequest().Header["Authorization"])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Recheck(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
