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
// answer to the confirmed token and to one never confirmed, until the two
// pass fresh (at most a minute after the outage), with the SDK's log lines
// in between. CacheTTL is 1s, so that checks need the service during even
// a short outage, and the Client does not retry, so that the log shows one
// line per failed call.
func demoOutage(out io.Writer, fake *managementtest.Server, d time.Duration) error {
	w := &lockedWriter{w: out} // the rows, and the log of calls that run on their own (a probe)
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	cfg := fake.Config()
	cfg.MaxRetries = -1 // one line per failed call, rather than five
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
		me, st := answer(mux, "/me", confirmed)
		first, _ := answer(mux, "/me", never)
		account, _ := answer(mux, "/account", confirmed)
		fmt.Fprintf(w, "+%-4v %-8s confirmed /me: %-12s never confirmed /me: %-20s confirmed /account: %s\n",
			time.Since(start).Round(time.Second), state, me, first, account)
		return me == "200" && !st && first == "200"
	}
	fmt.Fprintf(w, "StaleIfError %v, CacheTTL %v, no retries; the service answers every token check 503 for %v.\n", auth.StaleIfError, auth.CacheTTL, d)
	answer(mux, "/me", confirmed) // the service confirms it
	fake.FailNext(managementtest.RouteAuthenticate, math.MaxInt, http.StatusServiceUnavailable, 0)
	for time.Since(start) < d {
		row("down")
		time.Sleep(time.Second) // the demo's pace
	}
	fake.ClearFaults()
	for back := time.Now(); time.Since(back) < time.Minute; time.Sleep(time.Second) {
		if row("back") {
			return nil
		}
	}
	return fmt.Errorf("the checks did not pass fresh within a minute of the outage")
}

// answer returns what the route at path answers to token: the status,
// "Stale" for an End User let through stale, and Retry-After when set;
// stale reports the second.
func answer(mux http.Handler, path, token string) (summary string, stale bool) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, r)
	summary = fmt.Sprint(rec.Code)
	var body struct{ Stale bool }
	if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &body) == nil && body.Stale {
		summary, stale = summary+" Stale", true
	}
	if ra := rec.Header().Get("Retry-After"); ra != "" {
		summary += " Retry-After " + ra
	}
	return summary, stale
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
