package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

func TestProtectedRoute(t *testing.T) {
	fake := managementtest.NewServer()
	defer fake.Close()
	fake.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}, IsAnonymous: true})
	token := fake.IssueEndUserToken("u-ada")

	app := httptest.NewServer(newMux(&management.Authenticator{Client: fake.Client()}))
	defer app.Close()

	tests := []struct {
		name, auth string
		status     int
		body       string
	}{
		{"End User", "Bearer " + token, 200, `{"role":"APPUSER","stale":false,"user_id":"u-ada"}`},
		{"no token", "", 401, ""},
		{"made-up token", "Bearer nope", 401, "auth.unauthorized"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, app.URL+"/me", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.body) {
			t.Errorf("%s: %d %s; want %d containing %q", tt.name, resp.StatusCode, body, tt.status, tt.body)
		}
	}
}

// The -outage demo, on synctest's clock: during an outage of 20s the
// confirmed token passes on /me, Stale, and is refused on /account; the
// token never confirmed gets 503, with Retry-After once the breaker holds
// the calls; after the outage both pass fresh again within one cool-down.
// With the Client's default retries, the onset shows: the first row's
// checks wait for their calls' retries (a second or more), and from the
// third row, the breaker open, every check answers at once.
func TestOutageDemo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := demoOutage(&out, managementtest.NewInMemoryServer(), 20*time.Second); err != nil {
			t.Fatalf("demoOutage: %v\n%s", err, out.String())
		}
		if testing.Verbose() {
			t.Log(out.String())
		}
		var down, back []string
		for line := range strings.Lines(out.String()) {
			switch {
			case strings.Contains(line, " down "):
				down = append(down, line)
			case strings.Contains(line, " back "):
				back = append(back, line)
			}
		}
		// A row a second, the first two slower (each check of the onset
		// waits for its call's retries, 1 to 3.75 s). The cool-down in
		// force when the service comes back is at most 16s plus its jitter
		// (20%): a probe that failed at the last moment of the outage is
		// followed by the next one up to 19.2s later, so up to 20 rows
		// still pass stale, then one passes fresh (21; one more for a probe
		// that lands on a row's second).
		if len(down) < 13 || len(down) > 20 || len(back) == 0 || len(back) > 22 {
			t.Fatalf("%d rows down, %d back; want 13 to 20, then fresh passes within the longest cool-down:\n%s", len(down), len(back), out.String())
		}
		if !regexp.MustCompile(`confirmed /me: 200 Stale in [1-9][0-9.]*s`).MatchString(down[0]) {
			t.Errorf("the first row does not show the onset, a check waiting a second or more:\n%s", down[0])
		}
		confirmed := regexp.MustCompile(`confirmed /me: 200( Stale)?( in [0-9.]+s)? +never`)
		for i, line := range down {
			if !confirmed.MatchString(line) {
				t.Errorf("the confirmed token refused on /me during the outage:\n%s", line)
			}
			if !strings.Contains(line, "never confirmed /me: 503") {
				t.Errorf("the token never confirmed not refused during the outage:\n%s", line)
			}
			if i > 1 && (!strings.Contains(line, "confirmed /me: 200 Stale") || !strings.Contains(line, "/account: 503") ||
				!regexp.MustCompile(`never confirmed /me: 503 Retry-After [1-9]`).MatchString(line) || strings.Contains(line, " in ")) {
				t.Errorf("once the breaker is open: want a stale pass on /me, 503 on /account and Retry-After for the token never confirmed, at once:\n%s", line)
			}
		}
		if last := back[len(back)-1]; !regexp.MustCompile(`confirmed /me: 200 +never confirmed /me: 200 +confirmed /account: 200\n`).MatchString(last) {
			t.Errorf("after the outage: %s; want fresh passes", last)
		}
		for _, want := range []string{"letting through, marked Stale", "stale_passes="} {
			if strings.Count(out.String(), want) != 1 {
				t.Errorf("the log says %q %d times; want once:\n%s", want, strings.Count(out.String(), want), out.String())
			}
		}
	})
}
