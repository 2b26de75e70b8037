package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// demoOutage runs the -outage demo against fake: it confirms one End User
// token, answers 503 to every authenticate call for d, then lets the fake
// answer again, and prints, each second, what GET /me and GET /account
// answer to the confirmed token and to one never confirmed, and how long
// each answer took, until the two pass fresh (at most a minute after the
// outage), with the SDK's log lines in between.
//
// The Client and the Authenticator have the SDK's defaults, the retries
// included (4 retries, waiting from 250 ms: the fake's Client waits a
// millisecond), so that the first rows show what the onset of an outage
// costs: each check whose call fails waits for the Client's retries, until
// three calls have failed and the breaker opens. One setting differs:
// CacheTTL is 1s (30s by default), so that the checks need the service
// during even a short outage; with the default, a verdict cached before
// the outage serves its token for up to 30 s of it.
func demoOutage(out io.Writer, fake *managementtest.Server, d time.Duration) error {
	w := &lockedWriter{w: out} // the rows, and the log of calls that run on their own (a probe)
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	cfg := fake.Config()
	cfg.RetryWaitMin, cfg.RetryWaitMax = 0, 0 // the SDK's defaults, not the fake's Client's
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // the rows say when
		}
		return a
	}}))
	client, err := management.NewClient(cfg)
	if err != nil {
		return err
	}
	auth := newAuthenticator(client)
	auth.CacheTTL = time.Second
	mux := newMux(auth)
	confirmed, never := fake.IssueEndUserToken("u-ada"), fake.IssueEndUserToken("u-ada")

	start := time.Now()
	row := func(state string) (fresh bool) {
		// The three requests at once, as clients send them.
		var me, first, account answered
		var wg sync.WaitGroup
		wg.Go(func() { me = answer(mux, "/me", confirmed) })
		wg.Go(func() { first = answer(mux, "/me", never) })
		wg.Go(func() { account = answer(mux, "/account", confirmed) })
		wg.Wait()
		fmt.Fprintf(w, "+%-4v %-5s confirmed /me: %-22s never confirmed /me: %-30s confirmed /account: %s\n",
			time.Since(start).Round(time.Second), state, me, first, account)
		return me.summary == "200" && first.summary == "200" && account.summary == "200"
	}
	fmt.Fprintf(w, "StaleIfError %v, CacheTTL %v (the default is 30s), the Client's retries as by default; the service answers every token check 503 for %v.\n",
		auth.StaleIfError, auth.CacheTTL, d)
	answer(mux, "/me", confirmed) // the service confirms it
	time.Sleep(auth.CacheTTL)     // its verdict has expired: the next check asks the service
	start = time.Now()
	fake.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
	for time.Since(start) < d {
		began := time.Now()
		row("down")
		time.Sleep(time.Until(began.Add(time.Second))) // the demo's pace: a row a second, or at once after a slow one
	}
	fake.ClearFaults()
	for back := time.Now(); time.Since(back) < time.Minute; time.Sleep(time.Second) {
		if row("back") {
			return nil
		}
	}
	return fmt.Errorf("the checks did not pass fresh within a minute of the outage")
}

// answered is what a route answered: its summary (see answer) and how
// long it took.
type answered struct {
	summary string
	took    time.Duration
}

// String is the summary, and the time taken when it is noticeable.
func (a answered) String() string {
	if a.took < 10*time.Millisecond {
		return a.summary
	}
	return fmt.Sprintf("%s in %.1fs", a.summary, a.took.Seconds())
}

// answer returns what the route at path answers to token: the status,
// "Stale" for an End User let through stale, and Retry-After when set.
func answer(mux http.Handler, path, token string) answered {
	start := time.Now()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, r)
	summary := fmt.Sprint(rec.Code)
	var body struct{ Stale bool }
	if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &body) == nil && body.Stale {
		summary += " Stale"
	}
	if ra := rec.Header().Get("Retry-After"); ra != "" {
		summary += " Retry-After " + ra
	}
	return answered{summary: summary, took: time.Since(start)}
}

// lockedWriter writes to w from any goroutine, a line at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write holds the lock for the whole of p, so that the demo's rows and
// the SDK's log records, written from other goroutines, never interleave.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
