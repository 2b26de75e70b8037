package managementtest_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/redact"
	"github.com/serviceconnect/management/internal/redact/echotest"
	"github.com/serviceconnect/management/managementtest"
)

// recorderFor returns a Client of srv whose requests rec records into path,
// sent through opts.Transport, or else the transport of srv.Config.
func recorderFor(t *testing.T, srv *managementtest.Server, path string, opts managementtest.RecordOptions) (*management.Client, *managementtest.Recorder) {
	t.Helper()
	cfg := srv.Config()
	if opts.AllowedBaseURLs == nil {
		opts.AllowedBaseURLs = []string{srv.URL}
	}
	if opts.Transport == nil {
		opts.Transport = cfg.HTTPClient.Transport
	}
	rec, err := managementtest.NewRecorder(path, srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPClient = &http.Client{Transport: rec}
	client, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, rec
}

// Credentials with characters that every escape changes.
const (
	echoID        = "echo-client"
	echoSecret    = `s3cr3t-Kq9+/=Zx7&<'"%\`
	echoMgmtToken = "mgmt-Tq4+/=Wz8&x%7E"
	echoEndUser   = "eu-Pq7+/=Lm2&y%41"
)

// A cassette written while the service echoes every credential, in every
// spelling an echo takes, in bodies and headers, holds none of them: not
// in any spelling either.
func TestCassetteHoldsNoCredential(t *testing.T) {
	srv := managementtest.NewServer(
		managementtest.WithCredentials(echoID, echoSecret),
		managementtest.WithManagementToken(echoMgmtToken),
		managementtest.WithEndUserTokens(echoEndUser))
	defer srv.Close()
	basic := base64.StdEncoding.EncodeToString([]byte(echoID + ":" + echoSecret))
	creds := []string{echoSecret, echoID + ":" + echoSecret, "Basic " + basic, basic,
		echoMgmtToken, "Bearer " + echoMgmtToken, echoEndUser, "Bearer " + echoEndUser}
	// A User whose fields echo them too: answers of 200.
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1", FirstName: management.Ptr(echoSecret), LastName: management.Ptr(echoMgmtToken)}})

	path := filepath.Join(t.TempDir(), "echo.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	ctx := t.Context()
	if tok := srv.IssueEndUserToken("u-1"); tok != echoEndUser {
		t.Fatalf("the fake issued %q", tok)
	}
	if a, err := client.Authenticate(ctx, "Bearer "+echoEndUser); err != nil || !a.Valid {
		t.Fatalf("Authenticate = %+v, %v", a, err)
	}
	if _, err := client.Users.Get(ctx, "u-1"); err != nil {
		t.Fatal(err)
	}
	encodings := append(append([]echotest.Encoding(nil), echotest.Encodings...), echotest.Twice...)
	requests := 3
	for _, cred := range creds {
		for _, enc := range encodings {
			echo := enc.Encode(cred)
			srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
				Status: http.StatusBadRequest,
				Header: http.Header{"Content-Type": {"application/json"}, "X-Echo": {"seen " + echo}, "X-Auth-Echo": {echo}},
				Body:   `{"reason":"COMMON.REQUEST_VALIDATION","error_message":"you sent ` + echo + `"}`,
			})
			if _, err := client.Users.Get(ctx, "u-1"); err == nil {
				t.Fatal("the echo was not served")
			}
			requests++
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, cred := range creds {
		for _, enc := range encodings {
			if echo := enc.Encode(cred); strings.Contains(text, echo) {
				t.Errorf("the cassette holds %q (%s of %q)", echo, enc.Name, cred)
			}
		}
	}
	if clean := redact.New(creds...).Text(text); clean != text {
		t.Error("the redactor still finds a credential in the cassette")
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interactions) != requests {
		t.Fatalf("the cassette holds %d interactions, want %d", len(c.Interactions), requests)
	}
	// Where they stood, the placeholders name them.
	for i, want := range map[int]string{0: "Basic {{client_credentials_1}}", 1: "Bearer {{management_token_1}}"} {
		if got := c.Interactions[i].Request.Header.Get("Authorization"); got != want {
			t.Errorf("interaction %d: Authorization %q, want %q", i+1, got, want)
		}
	}
	if got, want := c.Interactions[0].Response.Body, `"access_token":"{{management_token_1}}"`; !strings.Contains(got, want) {
		t.Errorf("the token answer is %s; want %s in it", got, want)
	}
	if got, want := c.Interactions[1].Request.Body, `{"access_token":"Bearer {{end_user_token_1}}"}`; got != want {
		t.Errorf("the authenticate body is %s, want %s", got, want)
	}
	if got, want := c.Interactions[2].Response.Body, `"first_name":"{{client_secret_1}}","last_name":"{{management_token_1}}"`; !strings.Contains(got, want) {
		t.Errorf("the User's answer is %s; want %s in it", got, want)
	}
	if got := c.Interactions[3].Response.Header.Get("X-Auth-Echo"); got != "{{redacted}}" {
		t.Errorf("a header named for a credential holds %q, want {{redacted}}", got)
	}
}

// The Recorder refuses to start against a base URL not named as allowed.
func TestNewRecorderRefusesAnotherBaseURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	for _, tc := range []struct {
		base    string
		allowed []string
		want    string
	}{
		{"https://prod.example.com", nil, "names no base URL"},
		{"https://prod.example.com", []string{"https://sandbox.example.com"}, "is not among"},
		{"https://sandbox.example.com/v", []string{"https://sandbox.example.com"}, "is not among"},
		{"http://sandbox.example.com", []string{"https://sandbox.example.com"}, "is not among"},
		{"https://sandbox.example.com:8443", []string{"https://sandbox.example.com"}, "is not among"},
		{"sandbox.example.com", []string{"https://sandbox.example.com"}, "not an absolute"},
		{"https://sandbox.example.com", []string{"sandbox"}, "not an absolute"},
		// What a cassette would hold in its base_url: never accepted, and
		// never quoted back.
		{"https://user:s3cretpw@sandbox.example.com", []string{"https://sandbox.example.com"}, "user info"},
		{"https://sandbox.example.com", []string{"https://user:s3cretpw@sandbox.example.com"}, "user info"},
		{"https://sandbox.example.com/?key=s3cretpw", []string{"https://sandbox.example.com"}, "query or fragment"},
		{"https://sandbox.example.com/#s3cretpw", []string{"https://sandbox.example.com"}, "query or fragment"},
		{"https://sandbox.example.com/?", []string{"https://sandbox.example.com"}, "query or fragment"},
	} {
		_, err := managementtest.NewRecorder(path, tc.base, managementtest.RecordOptions{AllowedBaseURLs: tc.allowed})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRecorder(%q, allowed %q) = %v; want an error that says %q", tc.base, tc.allowed, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("NewRecorder(%q, allowed %q) quotes what it refuses: %v", tc.base, tc.allowed, err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Recorder left a file: %v", err)
	}
	for base, allowed := range map[string]string{
		"https://sandbox.example.com":      "HTTPS://Sandbox.Example.com/",
		"https://sandbox.example.com:443/": "https://sandbox.example.com",
		"https://sandbox.example.com/api/": "https://sandbox.example.com/api",
	} {
		if _, err := managementtest.NewRecorder(path, base, managementtest.RecordOptions{AllowedBaseURLs: []string{"https://other.example.com", allowed}}); err != nil {
			t.Errorf("NewRecorder(%q, allowed %q) = %v", base, allowed, err)
		}
	}
	if _, err := managementtest.NewRecorder("", "https://a.example", managementtest.RecordOptions{AllowedBaseURLs: []string{"https://a.example"}}); err == nil {
		t.Error("NewRecorder with no path succeeded")
	}
}

// Without AllowWrites, a write is not sent: a final 501, which Close
// reports; reads, the token and authenticate go through.
func TestRecorderRefusesWrites(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	seedSandbox(srv)
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	ctx := t.Context()
	if _, err := client.Things.Get(ctx, "t-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Authenticate(ctx, "Bearer nobody"); err != nil {
		t.Fatal(err)
	}
	_, err := client.Things.Update(ctx, "t-1", management.ThingUpdate{Name: management.Ptr("x")})
	var apiErr *management.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented || apiErr.Reason != "MANAGEMENTTEST.RECORDING_REFUSED" ||
		!strings.Contains(apiErr.Message, "AllowWrites") {
		t.Fatalf("Update while recording = %v; want a 501 MANAGEMENTTEST.RECORDING_REFUSED that names AllowWrites", err)
	}
	if err := client.Users.DisassociateThing(ctx, "u-1", "t-1"); err == nil {
		t.Fatal("DisassociateThing went through")
	}
	// An id that ends the path as the authenticate route does is no read.
	if _, err := client.Things.Update(ctx, "authenticate", management.ThingUpdate{Name: management.Ptr("x")}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented {
		t.Fatalf("Update of Thing \"authenticate\" while recording = %v; want a 501", err)
	}
	if n := srv.Requests(managementtest.RouteUpdateThing) + srv.Requests(managementtest.RouteDisassociate); n != 0 {
		t.Errorf("the service got %d writes", n)
	}
	err = rec.Close()
	if err == nil || !strings.Contains(err.Error(), "PATCH "+managementtest.DefaultPathPrefix+"/things/t-1") || !strings.Contains(err.Error(), "not whole (3 problems)") {
		t.Errorf("Close = %v; want an error that names the 2 writes refused", err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interactions) != 3 {
		t.Errorf("the cassette holds %d interactions, want 3: the token, the read and authenticate", len(c.Interactions))
	}
	after, _ := http.NewRequest(http.MethodGet, srv.URL+c.Interactions[1].Request.Path, nil)
	if _, err := rec.RoundTrip(after); err == nil {
		t.Error("a request after Close went through")
	}
}

// A request that is not below the base URL is refused, not sent.
func TestRecorderRefusesOtherURLs(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	other := managementtest.NewServer()
	defer other.Close()
	rec, err := managementtest.NewRecorder(filepath.Join(t.TempDir(), "c.json"), srv.URL+"/api", managementtest.RecordOptions{
		AllowedBaseURLs: []string{srv.URL + "/api"}, Transport: srv.Config().HTTPClient.Transport,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{other.URL + "/api/users", srv.URL + "/apix/users", srv.URL + "/users"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := rec.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusNotImplemented {
			t.Errorf("GET %s = %v, %v; want a 501", u, resp, err)
		}
	}
	if n := len(srv.Log()) + len(other.Log()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
	if err := rec.Close(); err == nil || !strings.Contains(err.Error(), "not below the base URL") {
		t.Errorf("Close = %v; want the refusals", err)
	}
}

// Concurrent requests are all recorded, each with its answer, and replay
// concurrently.
func TestRecorderConcurrent(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	const n = 16
	for i := range n {
		srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: fmt.Sprintf("t-%d", i), Name: fmt.Sprintf("Thing %d", i)}})
	}
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	getAll := func(client *management.Client) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				th, err := client.Things.Get(t.Context(), fmt.Sprintf("t-%d", i))
				if err != nil || th.Name != fmt.Sprintf("Thing %d", i) {
					t.Errorf("Get t-%d = %+v, %v", i, th, err)
				}
			})
		}
		wg.Wait()
	}
	getAll(client)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	cfg, _ := replayConfig(t, path)
	replay, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	getAll(replay)
}

// A Recorder and a Replayer print no credential, whatever the verb.
func TestRecorderAndReplayerFormat(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithCredentials(echoID, echoSecret), managementtest.WithManagementToken(echoMgmtToken))
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	if _, err := client.Authenticate(t.Context(), "Bearer "+echoEndUser); err != nil {
		t.Fatal(err)
	}
	c := &managementtest.Cassette{BaseURL: srv.URL}
	rp := managementtest.NewReplayer(c)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/x", strings.NewReader(`{"access_token":"Bearer `+echoEndUser+`"}`))
	if _, err := rp.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{rec, rp} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%t"} {
			out := fmt.Sprintf(verb, v)
			for _, cred := range []string{echoSecret, echoMgmtToken, echoEndUser} {
				if strings.Contains(out, cred) {
					t.Errorf("%s of a %T prints %q", verb, v, out)
				}
			}
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

// An answer cut off is recorded as it came, and replayed so: a request
// that got no answer fails again (and the SDK's retry takes the next
// interaction), a body cut midway fails where it was cut.
func TestRecordAndReplayCutAnswers(t *testing.T) {
	srv := managementtest.NewInMemoryServer()
	seedSandbox(srv)
	srv.FailNextWith(managementtest.RouteGetThing, 1, managementtest.Response{Cut: true})
	srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{
		Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: `{"id":"u-1","email":"ada@example.com"}`, Cut: true, CutAfter: 12,
	})
	path := filepath.Join(t.TempDir(), "c.json")
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{})
	calls := func(client *management.Client) (string, error) {
		th, err := client.Things.Get(t.Context(), "t-1")
		if err != nil {
			return "", err
		}
		_, err = client.Users.Get(t.Context(), "u-1")
		return th.Name, err
	}
	name, recErr := calls(client)
	if name != "Thing t-1" || !errors.Is(recErr, io.ErrUnexpectedEOF) {
		t.Fatalf("recording: %q, %v; want the Thing after a retry, then a body cut off", name, recErr)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := managementtest.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Interactions[1]; in.Response.Status != 0 || !strings.Contains(in.Response.Error, "closed without an answer") {
		t.Errorf("the request cut off is recorded as %+v", in.Response)
	}
	if in := c.Interactions[3]; !in.Response.Cut || in.Response.Body != `{"id":"u-1",` {
		t.Errorf("the answer cut midway is recorded as %+v", in.Response)
	}

	cfg, _ := replayConfig(t, path)
	replay, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name, err = calls(replay)
	if name != "Thing t-1" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("replay: %q, %v; want what the recording saw: %q, %v", name, err, "Thing t-1", recErr)
	}
	if r := checkFidelity(t, c); len(r.Differences) != 0 || len(r.NotCompared) != 2 {
		t.Errorf("the cut answers are not compared:\n%s", r)
	}
}

// Scrub changes what the cassette holds of each interaction, after the
// credentials were replaced.
func TestRecorderScrub(t *testing.T) {
	srv := managementtest.NewServer(managementtest.WithManagementToken(echoMgmtToken))
	defer srv.Close()
	seedSandbox(srv)
	path := filepath.Join(t.TempDir(), "c.json")
	var seen []string
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{Scrub: func(in *managementtest.Interaction) {
		seen = append(seen, in.Request.Header.Get("Authorization"))
		in.Response.Body = strings.ReplaceAll(in.Response.Body, "ada@example.com", "person-1@example.invalid")
	}})
	if _, err := client.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "ada@") || !strings.Contains(string(data), "person-1@example.invalid") {
		t.Errorf("the cassette was not scrubbed:\n%s", data)
	}
	if len(seen) != 2 || seen[1] != "Bearer {{management_token_1}}" {
		t.Errorf("Scrub saw the Authorization values %q; want them replaced already", seen)
	}
}

// blockingTransport answers every request once release is closed, saying
// on entered that one arrived.
type blockingTransport struct {
	entered chan struct{}
	release chan struct{}
	next    http.RoundTripper
}

func (b *blockingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.next.RoundTrip(req)
}

// A request still under way when Close writes the cassette is left out
// of it, and Close says so: a recording that looks whole would fail only
// later, in replay, with NOT_RECORDED.
func TestRecorderCloseNamesRequestsUnderWay(t *testing.T) {
	srv := managementtest.NewServer()
	defer srv.Close()
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-1"}})
	path := filepath.Join(t.TempDir(), "c.json")
	block := &blockingTransport{entered: make(chan struct{}, 8), release: make(chan struct{}), next: srv.Config().HTTPClient.Transport}
	client, rec := recorderFor(t, srv, path, managementtest.RecordOptions{Transport: block})
	done := make(chan error, 1)
	go func() {
		_, err := client.Users.Get(t.Context(), "u-1")
		done <- err
	}()
	<-block.entered // the token request, held at the transport
	err := rec.Close()
	close(block.release)
	<-done
	if err == nil || !strings.Contains(err.Error(), "still under way at Close, left out") || !strings.Contains(err.Error(), "1 problems") {
		t.Fatalf("Close with a request under way = %v; want an error that names it", err)
	}
	c, lerr := managementtest.LoadCassette(path)
	if lerr != nil || len(c.Interactions) != 0 {
		t.Fatalf("the cassette: %v, %d interactions; want written, empty", lerr, len(c.Interactions))
	}
}

// A Recorder not made by NewRecorder refuses every request, sending none;
// it does not panic.
func TestZeroRecorderRefuses(t *testing.T) {
	var rec managementtest.Recorder
	req, err := http.NewRequest(http.MethodGet, "https://sandbox.example/v2/users", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := rec.RoundTrip(req); err == nil || resp != nil || !strings.Contains(err.Error(), "NewRecorder") {
		t.Errorf("RoundTrip of a zero Recorder = %v, %v; want an error that names NewRecorder", resp, err)
	}
	if err := rec.Close(); err == nil {
		t.Error("Close of a zero Recorder = nil; want an error (it has no file to write)")
	}
}
