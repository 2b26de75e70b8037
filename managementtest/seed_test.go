package managementtest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// mtPanics runs f and returns its panic message ("" when it did not panic).
func mtPanics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "panic"
			}
		}
	}()
	f()
	return ""
}

func TestSeedingMisusePanics(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"empty user id", func() { srv.AddUser(management.UserDetails{}) }, `AddUser(""): the User id is empty`},
		{"duplicate user", func() { srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}}) }, "already added"},
		{"anonymous with email", func() {
			srv.AddUser(management.UserDetails{User: management.User{ID: "a", Email: management.Ptr("x@y")}, IsAnonymous: true})
		}, "anonymous"},
		{"unknown thing", func() {
			srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}, AssociatedThings: []management.AssociatedThing{{PhysicalID: "nope"}}})
		}, `associated Thing "nope" was not added`},
		{"repeated thing", func() {
			srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}, AssociatedThings: []management.AssociatedThing{{PhysicalID: "t-1"}, {PhysicalID: "t-1"}}})
		}, "listed twice"},
		{"unencodable user settings", func() {
			srv.AddUser(management.UserDetails{User: management.User{ID: "u-2"}, CustomSettings: map[string]any{"f": func() {}}})
		}, "cannot be encoded"},
		{"Unset in seed", func() {
			srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-2"}, CustomSettings: map[string]any{"k": management.Unset}})
		}, "cannot be encoded"},
		{"empty physical id", func() { srv.AddThing(management.ThingDetails{}) }, "physical id is empty"},
		{"duplicate thing", func() { srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}}) }, "already added"},
		{"unknown user", func() {
			srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-2"}, AssociatedUsers: []management.AssociatedUser{{ID: "nope"}}})
		}, `associated User "nope" was not added`},
		{"repeated status", func() {
			srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-2"}, Statuses: []management.ThingStatus{{Name: "a"}, {Name: "a"}}})
		}, `status "a" is listed twice`},
		{"token of unknown user", func() { srv.IssueEndUserToken("nope") }, "no such User"},
		{"revoke unknown token", func() { srv.RevokeEndUserToken("nope") }, "not issued"},
		{"FailNext unknown route", func() { srv.FailNext("GET /nope", 1, 500, 0) }, "unknown route"},
		{"FailNext n", func() { srv.FailNext(managementtest.RouteGetUser, 0, 500, 0) }, "want n >= 1"},
		{"FailNext status", func() { srv.FailNext(managementtest.RouteGetUser, 1, 200, 0) }, "status from 400 to 599"},
		{"DelayNext d", func() { srv.DelayNext(managementtest.RouteGetUser, 1, 0) }, "d > 0"},
		{"Requests unknown route", func() { srv.Requests("users") }, "unknown route"},
		{"page size", func() { managementtest.WithPageSize(0) }, "at least 1"},
		{"token lifetime", func() { managementtest.WithTokenLifetime(time.Millisecond) }, "at least a second"},
		{"credentials", func() { managementtest.WithCredentials("", "x") }, "must not be empty"},
		{"credentials colon", func() { managementtest.WithCredentials("a:b", "x") }, "colon"},
		{"prefix", func() { managementtest.WithPathPrefix("v2") }, "starting with /"},
		{"marker", func() { managementtest.WithUnsetMarker("") }, "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := mtPanics(tt.f)
			if !strings.HasPrefix(msg, "managementtest: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("panic %q, want one starting managementtest: and holding %q", msg, tt.want)
			}
		})
	}
	// A refused seed leaves nothing behind.
	if _, ok := srv.User("u-2"); ok {
		t.Error("a refused AddUser added the User")
	}
	if _, ok := srv.Thing("t-2"); ok {
		t.Error("a refused AddThing added the Thing")
	}
}

func TestSeedDefaultsAndCopies(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	before := management.NewTimestamp(time.Now())
	email := "ada@example.com"
	settings := map[string]any{"n": 1, "list": []any{"a"}}
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1", Email: &email, CreatedAt: mtTS(0)}, CustomSettings: settings,
		Consents: []management.Consent{{Key: "k", Value: management.ConsentReject}}})
	// Changing what was passed changes nothing in the server.
	email = "changed"
	settings["n"] = 2
	settings["list"].([]any)[0] = "changed"

	u, ok := srv.User("u-1")
	if !ok {
		t.Fatal("User not found")
	}
	if *u.Email != "ada@example.com" || u.CustomSettings["n"] != any(json.Number("1")) || u.CustomSettings["list"].([]any)[0] != "a" {
		t.Errorf("the server shares the caller's memory: %+v", u)
	}
	if !u.UpdatedAt.Equal(mtTS(0)) {
		t.Errorf("UpdatedAt = %v, want CreatedAt", u.UpdatedAt)
	}
	if u.EmailVerificationStatus != management.EmailUnset {
		t.Errorf("EmailVerificationStatus = %q, want Unset", u.EmailVerificationStatus)
	}
	if u.Consents[0].UpdatedAt.Before(before.Time) {
		t.Errorf("consent UpdatedAt = %v, want now", u.Consents[0].UpdatedAt)
	}
	if u.AssociatedThings == nil || len(u.AssociatedThings) != 0 {
		t.Errorf("AssociatedThings = %#v, want empty", u.AssociatedThings)
	}
	// Changing what User returned changes nothing either.
	*u.Email = "x"
	u.CustomSettings["n"] = "x"
	if again, _ := srv.User("u-1"); *again.Email != "ada@example.com" || again.CustomSettings["n"] != any(json.Number("1")) {
		t.Errorf("User returned shared memory: %+v", again)
	}

	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "t-1"}})
	th, _ := srv.Thing("t-1")
	if th.CreatedAt.Before(before.Time) || !th.UpdatedAt.Equal(th.CreatedAt) || th.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("Thing timestamps = %v, %v: want now, truncated to the millisecond", th.CreatedAt, th.UpdatedAt)
	}
	if _, ok := srv.Thing("nope"); ok {
		t.Error("Thing(nope) found")
	}
	if _, ok := srv.User("nope"); ok {
		t.Error("User(nope) found")
	}
}

func TestServerConfig(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithCredentials("id", "secret"), managementtest.WithPathPrefix("/v2/api/management/acme/"))
	defer srv.Close()
	cfg := srv.Config()
	if cfg.BaseURL != srv.URL || !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || cfg.ClientID != "id" || cfg.ClientSecret != "secret" ||
		cfg.PathPrefix != "/v2/api/management/acme" || cfg.HTTPClient == nil || cfg.UnsetMarker != "$ServiceUnset$" {
		t.Errorf("Config() = %+v (URL %s)", cfg, srv.URL)
	}
	if c1, c2 := srv.Client(), srv.Client(); c1 != c2 {
		t.Error("Client() returned two clients")
	}
	if strings.Contains(srv.String(), "secret") {
		t.Errorf("String() = %q shows the secret", srv.String())
	}
	// The prefix option moves every endpoint.
	c := &mtConn{t: t, srv: srv, hc: cfg.HTTPClient}
	r := c.send("POST", "/v2/api/management/acme/auth/token", map[string]string{"Authorization": mtBasic("id", "secret")}, `{"grant_type":"client_credentials"}`)
	if r.status != 200 {
		t.Errorf("token under the custom prefix: %d %s", r.status, r.body)
	}
	if r := c.send("POST", mtPrefix+"/auth/token", nil, ""); r.status != 404 {
		t.Errorf("token under the default prefix: %d, want 404", r.status)
	}

	// Generated credentials differ per server.
	a, b := managementtest.NewInMemoryServer(), managementtest.NewInMemoryServer()
	if a.ClientID == "" || a.ClientSecret == "" || a.ClientID == b.ClientID || a.ClientSecret == b.ClientSecret {
		t.Errorf("generated credentials %q/%q and %q/%q", a.ClientID, a.ClientSecret, b.ClientID, b.ClientSecret)
	}
	if a.URL != managementtest.InMemoryURL {
		t.Errorf("in-memory URL = %q", a.URL)
	}
	a.Close() // optional, harmless
}

// Transport serves the same fake without the listener.
func TestTransport(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	c := &mtConn{t: t, srv: srv, hc: &http.Client{Transport: srv.Transport()}}
	if r := c.api("GET", "/users/u-1", ""); r.status != 200 {
		t.Errorf("through Transport: %d", r.status)
	}
}

// Handler is the whole fake, usable with any server or recorder.
func TestHandler(t *testing.T) {
	srv := managementtest.NewInMemoryServer(managementtest.WithCredentials("id", "secret"))
	req := httptest.NewRequest("POST", mtPrefix+"/auth/token", strings.NewReader(`{"grant_type":"client_credentials"}`))
	req.SetBasicAuth("id", "secret")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("token through Handler: %d %s", rec.Code, rec.Body)
	}
	if got := srv.Requests(managementtest.RouteToken); got != 1 {
		t.Errorf("Requests(RouteToken) = %d", got)
	}
}
