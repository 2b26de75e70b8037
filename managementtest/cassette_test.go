package managementtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
)

// The fake stands in for the service: a recording is made against it over
// loopback, and replayed with the fake stopped.

// seedSandbox seeds a fake as a sandbox with synthetic data.
func seedSandbox(srv *managementtest.Server) {
	for _, id := range []string{"t-1", "t-2", "t-3"} {
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: id, Name: "Thing " + id, Model: "m1", FirmwareVersion: "1.0"}})
	}
	srv.AddUser(management.UserDetails{
		User:             management.User{ID: "u-1", Email: management.Ptr("ada@example.com"), FirstName: management.Ptr("Ada")},
		AssociatedThings: []management.AssociatedThing{{PhysicalID: "t-1"}, {PhysicalID: "t-2"}},
	})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-2", Email: management.Ptr("bob@example.com")}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-3"}, IsAnonymous: true})
}

// scenario calls every endpoint, and returns what it saw: the same for
// the recording and for its replay. tokens are two End User tokens, the
// first valid, the second not.
func scenario(ctx context.Context, client *management.Client, tokens [2]string) string {
	var b strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	for u, err := range client.Users.List(ctx, nil) {
		if err != nil {
			say("list users: %v", err)
			break
		}
		say("user %s", u.ID)
	}
	for th, err := range client.Things.List(ctx, &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}) {
		if err != nil {
			say("list things: %v", err)
			break
		}
		say("thing %s %s", th.PhysicalID, th.Name)
	}
	if u, err := client.Users.Get(ctx, "u-1"); err != nil {
		say("get u-1: %v", err)
	} else {
		say("u-1 %s, %d things", *u.Email, len(u.AssociatedThings))
	}
	_, err := client.Users.Get(ctx, "u-404")
	say("get u-404: %v", err)
	_, err = client.Things.Get(ctx, "t-404")
	say("get t-404: %v", err)
	if th, err := client.Things.Update(ctx, "t-1", management.ThingUpdate{Name: management.Ptr("Hall sensor")}); err != nil {
		say("update: %v", err)
	} else {
		say("updated %s", th.Name)
	}
	_, created, err := client.Users.AssociateThing(ctx, "u-2", management.NewAssociation{PhysicalID: "t-new", Model: "m2", FirmwareVersion: "2.0"})
	say("associate: created %t, %v", created, err)
	say("disassociate: %v", client.Users.DisassociateThing(ctx, "u-1", "t-2"))
	for _, tok := range []string{tokens[0], tokens[1], tokens[0]} {
		a, err := client.Authenticate(ctx, "Bearer "+tok)
		if err != nil {
			say("authenticate: %v", err)
			continue
		}
		say("authenticate: valid %t, user %q, role %q", a.Valid, a.UserID, a.Role)
	}
	return b.String()
}

// record runs scenario against a fake through a Recorder, and returns what
// it saw, the fake (closed) and the path of the cassette.
func record(t *testing.T, opts ...managementtest.Option) (string, *managementtest.Server, string) {
	t.Helper()
	srv := managementtest.NewServer(append([]managementtest.Option{managementtest.WithPageSize(2)}, opts...)...)
	defer srv.Close()
	seedSandbox(srv)
	path := filepath.Join(t.TempDir(), "testdata", "scenario.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{AllowWrites: true})
	saw := scenario(t.Context(), client, [2]string{srv.IssueEndUserToken("u-2"), "never-issued-token"})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return saw, srv, path
}

// replayConfig is a Config whose requests the cassette at path answers.
func replayConfig(t *testing.T, path string) (management.Config, *managementtest.Replayer) {
	t.Helper()
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	rp := managementtest.NewReplayer(c)
	return management.Config{
		BaseURL: c.BaseURL, ClientID: "replay-id", ClientSecret: "replay-secret",
		HTTPClient: &http.Client{Transport: rp}, RetryWaitMin: 1, RetryWaitMax: 1,
	}, rp
}

func TestRecordThenReplay(t *testing.T) {
	saw, srv, path := record(t)
	for _, want := range []string{"user u-3", "thing t-3", "u-1 ada@example.com, 2 things", "404 COMMON.ENTITY_NOT_FOUND", "updated Hall sensor",
		"associate: created true", "disassociate: <nil>", `valid true, user "u-2"`, "valid false"} {
		if !strings.Contains(saw, want) {
			t.Fatalf("the recording saw:\n%s\nwant %q in it", saw, want)
		}
	}
	srv.Close() // the replay needs no service
	cfg, _ := replayConfig(t, path)
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Other End User tokens than the recording's: they take its
	// placeholders in the order met.
	if got := scenario(t.Context(), client, [2]string{"replay-token-a", "replay-token-b"}); got != saw {
		t.Errorf("the replay saw (-recording +replay):\n%s", cmp.Diff(saw, got))
	}
}

// A request the cassette does not hold gets a final 501 that names it and
// the nearest recorded request: one attempt, no retry.
func TestReplayMissIsFinal(t *testing.T) {
	_, _, path := record(t)
	cfg, _ := replayConfig(t, path)
	var attempts atomic.Int64
	cfg.Observer = &management.Observer{OperationDone: func(_ context.Context, _ management.Operation, r management.OperationResult) {
		attempts.Add(int64(r.Attempts))
	}}
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Users.Get(t.Context(), "u-2")
	var apiErr *management.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented || apiErr.Reason != "MANAGEMENTTEST.NOT_RECORDED" {
		t.Fatalf("Get of a request not recorded = %v; want a 501 MANAGEMENTTEST.NOT_RECORDED", err)
	}
	for _, want := range []string{"GET " + managementtest.DefaultPathPrefix + "/users/u-2", "nearest it holds is #", "/users/u-1"} {
		if !strings.Contains(apiErr.Message, want) {
			t.Errorf("the message %q does not name %q", apiErr.Message, want)
		}
	}
	// The token request and the read: one attempt each.
	if n := attempts.Load(); n != 2 {
		t.Errorf("%d attempts, want 2 (the token and one read): a 501 is not retried", n)
	}
	// A recorded request replays once: the second time, it is a miss.
	if _, err := client.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
	_, err = client.Users.Get(t.Context(), "u-1")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented || !strings.Contains(apiErr.Message, "(replayed already)") {
		t.Errorf("a second read of u-1 = %v; want a 501 that says its recording was replayed already", err)
	}
}

func TestLoadCassetteRefusesWhatItCannotReplay(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"not JSON":       "interactions:",
		"other version":  `{"cassette": 2, "base_url": "https://x.example", "interactions": []}`,
		"no base URL":    `{"cassette": 1, "interactions": []}`,
		"user info":      `{"cassette": 1, "base_url": "https://u:pw@x.example", "interactions": []}`,
		"query":          `{"cassette": 1, "base_url": "https://x.example/?k=v", "interactions": []}`,
		"unknown member": `{"cassette": 1, "base_url": "https://x.example", "interactions": [], "extra": 1}`,
		"no status":      `{"cassette": 1, "base_url": "https://x.example", "interactions": [{"request": {"method": "GET", "path": "/"}, "response": {}}]}`,
		"no path":        `{"cassette": 1, "base_url": "https://x.example", "interactions": [{"request": {"method": "GET"}, "response": {"status": 200}}]}`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := managementtest.LoadCassette(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: LoadCassette = %v; want an error that names the file", name, err)
		}
	}
	// Text after the object is refused, with its offset; white space is not.
	one := `{"cassette": 1, "base_url": "https://x.example", "interactions": []}`
	for _, tc := range []struct{ name, text, want string }{
		{"second cassette", one + "\n" + one, fmt.Sprintf("at offset %d", len(one)+1)},
		{"merge tail", one + "\n>>>>>>> theirs\n", fmt.Sprintf("at offset %d", len(one)+1)},
		{"a stray bracket", one + "}", fmt.Sprintf("at offset %d", len(one))},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := managementtest.LoadCassette(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadCassette = %v; want an error that names the file and says %q", tc.name, err, tc.want)
		}
	}
	spaced := filepath.Join(dir, "spaced.json")
	if err := os.WriteFile(spaced, []byte(one+" \r\n\t\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := managementtest.LoadCassette(spaced); err != nil {
		t.Errorf("LoadCassette of a cassette followed by white space = %v", err)
	}
	if _, err := managementtest.LoadCassette(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadCassette of a missing file = %v; want one matching os.ErrNotExist", err)
	}
}

// A Replayer of no cassette answers every request as not recorded; it
// does not panic.
func TestNewReplayerNil(t *testing.T) {
	rep := managementtest.NewReplayer(nil)
	req, err := http.NewRequest(http.MethodGet, "https://sandbox.example/v2/users", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rep.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip = %v; want the not-recorded answer", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), "NOT_RECORDED") {
		t.Errorf("RoundTrip = %d %s; want 501 NOT_RECORDED", resp.StatusCode, body)
	}
}

// A miss names the nearest request to its own endpoint, and none when the
// cassette holds no request to it: however near another endpoint's is.
func TestReplayMissNamesItsEndpointOnly(t *testing.T) {
	p := managementtest.DefaultPathPrefix
	c := &managementtest.Cassette{BaseURL: "https://sandbox.example/base", Interactions: []managementtest.Interaction{
		{Request: managementtest.RecordedRequest{Method: "GET", Path: "/base" + p + "/things/t-1"}, Response: managementtest.RecordedResponse{Status: 200}},
		{Request: managementtest.RecordedRequest{Method: "GET", Path: "/base" + p + "/users/a-long-id-far-from-t-1"}, Response: managementtest.RecordedResponse{Status: 200}},
	}}
	rp := managementtest.NewReplayer(c)
	miss := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, "https://sandbox.example/base"+p+path, nil)
		resp, err := rp.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented {
			t.Fatalf("GET %s = %d, want a miss", path, resp.StatusCode)
		}
		return string(body)
	}
	if got := miss("/users/t-1"); !strings.Contains(got, "nearest it holds is #2 GET /base"+p+"/users/a-long-id-far-from-t-1") {
		t.Errorf("a miss of GET /users/t-1 says %s; want the nearest read of a User, #2, not the nearer read of a Thing", got)
	}
	if got := miss("/users/u-1/associated_things"); !strings.Contains(got, "it holds no request to GET /base"+p+"/users/u-1/associated_things") {
		t.Errorf("a miss of a path that is no endpoint says %s", got)
	}
	rp = managementtest.NewReplayer(&managementtest.Cassette{BaseURL: c.BaseURL, Interactions: c.Interactions[1:]})
	if got := miss("/things/t-1"); !strings.Contains(got, "it holds no request to GET /things/{thing_physical_id}") {
		t.Errorf("a miss of an endpoint the cassette holds no request to says %s", got)
	}
}
