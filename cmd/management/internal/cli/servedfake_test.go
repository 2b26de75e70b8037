package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// newServed returns the fake of fake serve with the data of --fake,
// served in memory, and a client of its API.
func newServed(t *testing.T, debug *slog.Logger) (*servedFake, *management.Client) {
	t.Helper()
	d, err := startingData(dataFlags{users: -1, things: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := managementtest.NewInMemoryServer(managementtest.WithCredentials(fakeClientID, "s3cr3t-of-the-test"))
	d.seed(srv)
	s := newServedFake(srv, d, debug)
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: handlerTransport{s}}
	cfg.MaxRetries = -1 // a fault is felt once, not retried away
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// handlerTransport serves requests with a handler, in memory.
type handlerTransport struct{ h http.Handler }

func (tr handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	tr.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// controlCall sends a control request with the fake's credentials (or
// those given) and returns the status and body.
func controlCall(t *testing.T, s *servedFake, method, path, body string, creds ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	id, secret := s.srv.ClientID, s.srv.ClientSecret
	if len(creds) == 2 {
		id, secret = creds[0], creds[1]
	}
	if len(creds) != 1 { // one: no credentials at all
		r.SetBasicAuth(id, secret)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// TestControlRefusals: each mistake is answered with its status and a
// message that says what is wrong; nothing is staged.
func TestControlRefusals(t *testing.T) {
	s, client := newServed(t, nil)
	for _, c := range []struct {
		name, method, path, body string
		creds                    []string
		status                   int
		want                     string
	}{
		{"no credentials", "POST", "/_fake/reset", "", []string{"none"}, 401, "the Basic credentials of the client fake serve printed"},
		{"a wrong secret", "POST", "/_fake/reset", "", []string{fakeClientID, "guess"}, 401, "Basic credentials"},
		{"a wrong id", "GET", "/_fake/requests", "", []string{"someone", "s3cr3t-of-the-test"}, 401, "Basic credentials"},
		{"unknown endpoint", "GET", "/_fake/faults", "", nil, 400, "no control endpoint GET /_fake/faults; the control endpoints are DELETE /_fake/faults, GET /_fake/requests, POST /_fake/end-user-tokens,"},
		{"the prefix alone", "GET", "/_fake", "", nil, 400, "no control endpoint GET /_fake;"},
		{"too large", "POST", "/_fake/faults", `{"route":"` + strings.Repeat("x", maxControlBody) + `"}`, nil, 413, "larger than 1048576 bytes (1 MiB)"},
		{"malformed JSON", "POST", "/_fake/faults", `{"route":`, nil, 400, "the body is not {"},
		{"not an object", "POST", "/_fake/end-user-tokens", `"u-ada"`, nil, 400, "the body is not a JSON object; want {\"user_id\": \"...\"}"},
		{"empty body", "POST", "/_fake/end-user-tokens", ``, nil, 400, "the body is empty"},
		{"a misspelt member", "POST", "/_fake/end-user-tokens", `{"userid":"u-ada"}`, nil, 400, `unknown field "userid"`},
		{"two values", "POST", "/_fake/end-user-tokens", `{"user_id":"u-ada"} {}`, nil, 400, "more than one JSON value"},
		{"no user_id", "POST", "/_fake/end-user-tokens", `{}`, nil, 400, "user_id is missing or empty"},
		{"unknown user", "POST", "/_fake/end-user-tokens", `{"user_id":"u-nobody"}`, nil, 404, `no User "u-nobody"`},
		{"unknown token", "POST", "/_fake/end-user-tokens/revoke", `{"access_token":"eu-never"}`, nil, 404, "not a live token of this fake"},
		{"no token", "POST", "/_fake/end-user-tokens/revoke", `{"access_token":"Bearer "}`, nil, 400, "access_token is missing or empty"},
		{"unknown route", "POST", "/_fake/faults", `{"route":"GET /user","status":503}`, nil, 400, `unknown route "GET /user"; the routes are POST /auth/token, GET /users, GET /users/{user_id},`},
		{"count 0", "POST", "/_fake/faults", `{"route":"GET /users","count":0,"status":503}`, nil, 400, "count is 0; it must be at least 1"},
		{"count -2", "POST", "/_fake/faults", `{"route":"GET /users","count":-2,"status":503}`, nil, 400, "count is -2"},
		{"count a string", "POST", "/_fake/faults", `{"route":"GET /users","count":"3","status":503}`, nil, 400, "count"},
		{"status 600", "POST", "/_fake/faults", `{"route":"GET /users","status":600}`, nil, 400, "status 600 is outside 100 to 599"},
		{"status 99", "POST", "/_fake/faults", `{"route":"GET /users","status":99}`, nil, 400, "status 99 is outside 100 to 599"},
		{"status 101", "POST", "/_fake/faults", `{"route":"GET /users","status":101}`, nil, 400, "status 101 is informational"},
		{"retry_after unparsable", "POST", "/_fake/faults", `{"route":"GET /users","status":503,"retry_after":"2 seconds"}`, nil, 400, `retry_after "2 seconds" is not a Go duration`},
		{"retry_after negative", "POST", "/_fake/faults", `{"route":"GET /users","status":503,"retry_after":"-1s"}`, nil, 400, `retry_after "-1s" is negative`},
		{"retry_after alone", "POST", "/_fake/faults", `{"route":"GET /users","retry_after":"1s","delay":"1s"}`, nil, 400, "retry_after comes with a status"},
		{"delay unparsable", "POST", "/_fake/faults", `{"route":"GET /users","delay":"5"}`, nil, 400, `delay "5" is not a Go duration`},
		{"delay zero", "POST", "/_fake/faults", `{"route":"GET /users","delay":"0s"}`, nil, 400, `delay "0s" is zero`},
		{"delay a number", "POST", "/_fake/faults", `{"route":"GET /users","delay":5}`, nil, 400, "delay"},
		{"no status nor delay", "POST", "/_fake/faults", `{"route":"GET /users","count":2}`, nil, 400, "neither a status nor a delay"},
		{"a User twice", "POST", "/_fake/users", `{"id":"u-ada"}`, nil, 409, `User "u-ada" exists already`},
		{"a User without id", "POST", "/_fake/users", `{"email":"x@example.com"}`, nil, 400, "id is missing or empty"},
		{"a User with a Thing not there", "POST", "/_fake/users", `{"id":"u-new","associated_things":[{"physical_id":"nope"}]}`, nil, 400, `no Thing "nope"`},
		{"an anonymous User with an email", "POST", "/_fake/users", `{"id":"u-new","is_anonymous":true,"email":"x@example.com"}`, nil, 400, "an anonymous User has no email"},
		{"a Thing twice", "POST", "/_fake/things", `{"physical_id":"lamp-7"}`, nil, 409, `Thing "lamp-7" exists already`},
		{"a Thing without id", "POST", "/_fake/things", `{"name":"x"}`, nil, 400, "physical_id is missing or empty"},
		{"a status twice", "POST", "/_fake/things", `{"physical_id":"t-new","statuses":[{"name":"a","status_value":"1"},{"name":"a","status_value":"2"}]}`, nil, 400, `status "a" is listed twice`},
		{"a Thing with a User not there", "POST", "/_fake/things", `{"physical_id":"t-new","associated_users":[{"id":"u-nope"}]}`, nil, 400, `no User "u-nope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := controlCall(t, s, c.method, c.path, c.body, c.creds...)
			var e controlError
			if err := json.Unmarshal([]byte(body), &e); status != c.status || err != nil || !strings.Contains(e.Error, c.want) {
				t.Errorf("%s %s: %d %s\nwant %d and a JSON error with %q", c.method, c.path, status, body, c.status, c.want)
			}
			if strings.Contains(body, "s3cr3t") {
				t.Errorf("the answer quotes the secret: %s", body)
			}
		})
	}
	// Nothing was staged or added: the API answers as before.
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Errorf("after the refusals, Users.Get: %v", err)
	}
	for _, id := range []string{"u-new", "t-new"} {
		_, u := s.srv.User(id)
		_, th := s.srv.Thing(id)
		if u || th {
			t.Errorf("%s was added by a refused request", id)
		}
	}
}

// TestControlEndpoints: each endpoint does what it says through the API,
// and reset restores the starting data.
func TestControlEndpoints(t *testing.T) {
	s, client := newServed(t, nil)
	ctx := t.Context()
	call := func(method, path, body string, want int) string {
		t.Helper()
		status, got := controlCall(t, s, method, path, body)
		if status != want {
			t.Fatalf("%s %s %s: %d %s; want %d", method, path, body, status, got, want)
		}
		return got
	}

	var issued struct {
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal([]byte(call("POST", "/_fake/end-user-tokens", `{"user_id":"u-grace"}`, 201)), &issued)
	if auth, err := client.Authenticate(ctx, "Bearer "+issued.AccessToken); err != nil || !auth.Valid || auth.UserID != "u-grace" {
		t.Fatalf("Authenticate the issued token: %+v, %v", auth, err)
	}
	call("POST", "/_fake/end-user-tokens/revoke", `{"access_token":"Bearer `+issued.AccessToken+`"}`, 204)
	if auth, err := client.Authenticate(ctx, "Bearer "+issued.AccessToken); err != nil || auth.Valid {
		t.Errorf("Authenticate the revoked token: %+v, %v; want invalid", auth, err)
	}

	// A success status is answered as injected, in the error shape.
	call("POST", "/_fake/faults", `{"route":"GET /things/{thing_physical_id}","count":2,"status":202,"retry_after":"1500ms"}`, 204)
	for range 2 {
		if _, err := client.Things.Get(ctx, "lamp-7"); err == nil {
			t.Error("Things.Get during a fault of 202: no error")
		}
	}
	if _, err := client.Things.Get(ctx, "lamp-7"); err != nil {
		t.Errorf("Things.Get after two faults of count 2: %v", err)
	}

	// A delay and a status together: a slow failure.
	call("POST", "/_fake/faults", `{"route":"GET /users/{user_id}","status":503,"delay":"30ms"}`, 204)
	start := time.Now()
	if _, err := client.Users.Get(ctx, "u-ada"); err == nil || time.Since(start) < 30*time.Millisecond {
		t.Errorf("Users.Get during a slow 503: %v after %v; want an error after 30ms", err, time.Since(start))
	}

	call("POST", "/_fake/faults", `{"route":"POST /authenticate","count":5,"status":500}`, 204)
	call("DELETE", "/_fake/faults", "", 204)
	if _, err := client.Authenticate(ctx, "Bearer x"); err != nil {
		t.Errorf("Authenticate after the faults were cleared: %v", err)
	}

	before := len(s.log.entries())
	call("POST", "/_fake/expire-tokens", "", 204)
	if _, err := client.Users.Get(ctx, "u-ada"); err != nil {
		t.Fatal(err)
	}
	if got := s.log.entries()[before:]; len(got) != 3 || got[0].Status != 401 || got[1].Route != string(managementtest.RouteToken) || got[2].Status != 200 {
		t.Errorf("after expire-tokens, the requests were %+v; want a 401, a token request and the replay", got)
	}

	added := call("POST", "/_fake/things", `{"physical_id":"t-new","name":"Porch light","custom_settings":{"lux":350}}`, 201)
	if th, err := client.Things.Get(ctx, "t-new"); err != nil || th.Name != "Porch light" || th.CustomSettings["lux"] != json.Number("350") || !strings.Contains(added, `"lux":350`) {
		t.Errorf("the added Thing: %+v, %v (answer %s)", th, err, added)
	}
	call("POST", "/_fake/users", `{"id":"u-new","email":"new@example.com","associated_things":[{"physical_id":"t-new"}]}`, 201)
	if u, err := client.Users.Get(ctx, "u-new"); err != nil || len(u.AssociatedThings) != 1 || u.AssociatedThings[0].Name != "Porch light" {
		t.Errorf("the added User: %+v, %v", u, err)
	}
	if _, err := client.Things.Update(ctx, "thermo-42", management.ThingUpdate{Name: management.Ptr("Renamed")}); err != nil {
		t.Fatal(err)
	}
	call("POST", "/_fake/faults", `{"route":"GET /users","status":500}`, 204)

	call("POST", "/_fake/reset", "", 204)
	if got := call("GET", "/_fake/requests", "", 200); got != "[]\n" {
		t.Errorf("the log after reset: %s; want []", got)
	}
	if th, err := client.Things.Get(ctx, "thermo-42"); err != nil || th.Name != "Hall thermostat" {
		t.Errorf("thermo-42 after reset: %+v, %v; want its starting name", th, err)
	}
	if _, err := client.Users.Get(ctx, "u-new"); err == nil {
		t.Error("the added User is still there after reset")
	}
	for _, err := range client.Users.List(ctx, nil) {
		if err != nil {
			t.Errorf("listing after reset: %v; want the fault gone", err)
		}
	}
}

// TestRequestLog: the log of GET /_fake/requests names each API request
// by method, route, path, status and time, holds no credential, and
// leaves out the control requests.
func TestRequestLog(t *testing.T) {
	var debug bytes.Buffer
	s, client := newServed(t, slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := t.Context()
	_, tok := controlCall(t, s, "POST", "/_fake/end-user-tokens", `{"user_id":"u-ada"}`)
	var issued struct {
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal([]byte(tok), &issued)
	if _, err := client.Authenticate(ctx, "Bearer "+issued.AccessToken); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(ctx, "u/x"); err == nil {
		t.Fatal("Users.Get of an unknown User: no error")
	}
	for _, path := range []string{"/v2/api/management/service_connect/nowhere", "/elsewhere"} {
		req := httptest.NewRequest("GET", path, nil)
		s.ServeHTTP(httptest.NewRecorder(), req)
	}
	status, body := controlCall(t, s, "GET", "/_fake/requests", "")
	var got []map[string]any
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil {
		t.Fatalf("GET /_fake/requests: %d %s (%v)", status, body, err)
	}
	prefix := managementtest.DefaultPathPrefix
	want := []map[string]any{
		{"method": "POST", "route": "POST /auth/token", "path": prefix + "/auth/token", "status": 200.0},
		{"method": "POST", "route": "POST /authenticate", "path": prefix + "/authenticate", "status": 200.0},
		{"method": "GET", "route": "GET /users/{user_id}", "path": prefix + "/users/u%2Fx", "status": 404.0},
		{"method": "GET", "route": "", "path": prefix + "/nowhere", "status": 404.0},
		{"method": "GET", "route": "", "path": "/elsewhere", "status": 404.0},
	}
	if len(got) != len(want) {
		t.Fatalf("the log holds %d requests, want %d: %s", len(got), len(want), body)
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for i, w := range want {
		ts, _ := got[i]["time"].(string)
		if !stamp.MatchString(ts) || len(got[i]) != 5 {
			t.Errorf("entry %d: %v; want five members, the time RFC 3339 with milliseconds", i, got[i])
		}
		delete(got[i], "time")
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("entry %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
	}
	for _, secret := range []string{s.srv.ClientSecret, issued.AccessToken, "Bearer", "Basic"} {
		if strings.Contains(body, secret) || strings.Contains(debug.String(), secret) {
			t.Errorf("the log or the debug output holds %q:\n%s\n%s", secret, body, debug.String())
		}
	}
	if n := strings.Count(debug.String(), "level=DEBUG msg=request"); n != len(want) {
		t.Errorf("--debug logged %d requests, want %d:\n%s", n, len(want), debug.String())
	}
}

// TestRouteOf: a request's route is the one managementtest routes it to:
// the method exactly, path values one segment each, escaped or not.
func TestRouteOf(t *testing.T) {
	s, _ := newServed(t, nil)
	p := managementtest.DefaultPathPrefix
	for _, c := range []struct{ method, path, want string }{
		{"GET", p + "/users", "GET /users"},
		{"GET", p + "/users?page=x", "GET /users"},
		{"HEAD", p + "/users", ""},
		{"GET", p + "/users/u%2F1", "GET /users/{user_id}"},
		{"GET", p + "/users/", ""},
		{"GET", p + "/users//x", ""},
		{"DELETE", p + "/users/u-1/associated_things/t-1", "DELETE /users/{user_id}/associated_things/{physical_id}"},
		{"PATCH", p + "/things/t-1", "PATCH /things/{thing_physical_id}"},
		{"PUT", p + "/things/t-1", ""},
		{"POST", p + "/auth/token", "POST /auth/token"},
		{"POST", "/auth/token", ""},
		{"GET", p + "x/users", ""},
	} {
		if got := s.routeOf(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("%s %s: route %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// TestFaultOfAnyStatus: a status below 400 is answered as FailNext
// answers an error: the route's error shape, no body for 204, the
// Retry-After in whole seconds.
func TestFaultOfAnyStatus(t *testing.T) {
	s, _ := newServed(t, nil)
	p := managementtest.DefaultPathPrefix
	for _, c := range []struct {
		fault, method, path string
		status              int
		body, retryAfter    string
	}{
		{`{"route":"POST /auth/token","status":200,"retry_after":"1500ms"}`, "POST", p + "/auth/token", 200,
			`{"error":"temporarily_unavailable","error_description":"managementtest: injected answer"}`, "2"},
		{`{"route":"GET /users","status":302}`, "GET", p + "/users", 302,
			`{"reason":"MANAGEMENTTEST.INJECTED_FAULT","error_message":"managementtest: injected answer"}`, ""},
		{`{"route":"GET /things","status":204,"retry_after":"1s"}`, "GET", p + "/things", 204, "", "1"},
	} {
		if status, body := controlCall(t, s, "POST", "/_fake/faults", c.fault); status != 204 {
			t.Fatalf("%s: %d %s", c.fault, status, body)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(c.method, c.path, strings.NewReader(`{"grant_type":"client_credentials"}`)))
		if w.Code != c.status || w.Body.String() != c.body || w.Header().Get("Retry-After") != c.retryAfter {
			t.Errorf("%s: answered %d %q, Retry-After %q; want %d %q, %q", c.fault, w.Code, w.Body, w.Header().Get("Retry-After"), c.status, c.body, c.retryAfter)
		}
	}
}
