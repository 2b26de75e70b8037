package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/internal/benchmark/peers/peerapi"
)

// A probe puts the three clients in one situation where they may differ,
// and records what each did, in a few words. The words are asserted: if
// a library, the SDK or the server changes what a client does, the probe
// fails, and the table of "How it compares" in docs/performance.md is due
// an update (TestReadmeComparesAsProbed holds the table to the probes).

// observed is one probe's outcome for the three columns.
type observed struct{ sdk, generated, raw string }

// probes is every probe, by the row it fills in that table.
var probes = []struct {
	row   string
	probe func(t *testing.T) observed
	want  observed
}{
	{"a 404", probeNotFound, observed{
		sdk:       "error matching `ErrNotFound`",
		generated: "no error: `JSON200` nil, status 404 to check",
		raw:       "error (the hand-written status check)",
	}},
	{"a token revoked early (401)", probeRevoked, observed{
		sdk:       "new token, call replayed once, succeeds",
		generated: "no error: status 401; the cached token is kept until it expires",
		raw:       "error; the cached token is kept until it expires",
	}},
	{"a 503 once", probeUnavailable, observed{
		sdk:       "retried after a backoff, succeeds (2 requests)",
		generated: "no error: status 503 (1 request)",
		raw:       "error (1 request)",
	}},
	{"a 307 to another port", probeRedirect, observed{
		sdk:       "error naming the redirect; nothing sent there",
		generated: "followed: the bearer token sent to the other port",
		raw:       "followed: the bearer token sent to the other port",
	}},
	{"a `null` 200 body", probeNull, observed{
		sdk:       "`*DecodeError`",
		generated: "no error: an empty User",
		raw:       "no error: an empty User",
	}},
	{"custom setting 9007199254740993", probeLargeInt, observed{
		sdk:       "9007199254740993 (`json.Number`)",
		generated: "9007199254740992 (`float64`)",
		raw:       "9007199254740993 (`json.Number`, with `UseNumber`)",
	}},
	{"a timestamp sent (`last_seen`)", probeTimestamp, observed{
		sdk:       "`2024-03-18T09:21:45.123Z` (the spec's format)",
		generated: "`2024-03-18T10:21:45.123456789+01:00` (RFC 3339, as given)",
		raw:       "`2024-03-18T10:21:45.123456789+01:00` (RFC 3339, as given)",
	}},
	{"the client printed with `%+v`", probePrinted, observed{
		sdk:       "no secret, no token",
		generated: "the client secret (`clientcredentials.Config`)",
		raw:       "the client secret and the token",
	}},
	{"the token endpoint, as the libraries come", probeFormGrant, observed{
		sdk:       "JSON grant, token issued",
		generated: "form grant refused (`unsupported_grant_type`); a shim sends it as JSON",
		raw:       "JSON grant (hand-written), token issued",
	}},
}

func TestProbes(t *testing.T) {
	for _, p := range probes {
		t.Run(p.row, func(t *testing.T) {
			if got := p.probe(t); got != p.want {
				t.Errorf("observed\n\tsdk:       %s\n\tgenerated: %s\n\traw:       %s\nwant\n\tsdk:       %s\n\tgenerated: %s\n\traw:       %s",
					got.sdk, got.generated, got.raw, p.want.sdk, p.want.generated, p.want.raw)
			}
		})
	}
}

// clients is one client of each column, each with its token and a
// connection, on s.
type clients struct {
	sdk *management.Client
	gen *generated
	raw *rawClient
}

func newClients(t *testing.T, s *server) clients {
	t.Helper()
	c := clients{
		sdk: newSDK(t, s, &http.Client{Transport: newTransport(t, 4)}),
		gen: newGenerated(t, s, newTransport(t, 4), true, 0),
		raw: newRaw(s, newTransport(t, 4)),
	}
	ctx := context.Background()
	if _, err := c.sdk.Users.Get(ctx, userID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.gen.getUser(ctx, userID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.raw.getUser(ctx, userID); err != nil {
		t.Fatal(err)
	}
	return c
}

func probeNotFound(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	var o observed
	if _, err := c.sdk.Users.Get(ctx, "usr-missing"); errors.Is(err, management.ErrNotFound) {
		o.sdk = "error matching `ErrNotFound`"
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v", err)
	}
	if resp, err := c.gen.GetUserWithResponse(ctx, "usr-missing"); err == nil && resp.JSON200 == nil {
		o.generated = fmt.Sprintf("no error: `JSON200` nil, status %d to check", resp.StatusCode())
	} else {
		o.generated = fmt.Sprintf("unexpected: %v", err)
	}
	if _, err := c.raw.getUser(ctx, "usr-missing"); err != nil && strings.Contains(err.Error(), "status 404") {
		o.raw = "error (the hand-written status check)"
	} else {
		o.raw = fmt.Sprintf("unexpected: %v", err)
	}
	return o
}

func probeRevoked(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	s.rotate() // every token the clients hold is now refused
	var o observed
	before := s.tokenRequests.Load()
	if _, err := c.sdk.Users.Get(ctx, userID); err == nil && s.tokenRequests.Load()-before == 1 {
		o.sdk = "new token, call replayed once, succeeds"
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v, %d token requests", err, s.tokenRequests.Load()-before)
	}
	s.rotate()
	before = s.tokenRequests.Load()
	for range 2 {
		resp, err := c.gen.GetUserWithResponse(ctx, userID)
		switch {
		case err != nil:
			o.generated = fmt.Sprintf("unexpected: %v", err)
		case s.tokenRequests.Load() != before:
			o.generated = "a new token fetched"
		default:
			o.generated = fmt.Sprintf("no error: status %d; the cached token is kept until it expires", resp.StatusCode())
		}
	}
	for range 2 {
		_, err := c.raw.getUser(ctx, userID)
		switch {
		case err == nil || s.tokenRequests.Load() != before:
			o.raw = fmt.Sprintf("unexpected: %v, %d token requests", err, s.tokenRequests.Load()-before)
		default:
			o.raw = "error; the cached token is kept until it expires"
		}
	}
	return o
}

func probeUnavailable(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	var failNext atomic.Bool
	s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != prefix+"/users/"+userID || !failNext.CompareAndSwap(true, false) {
			return false
		}
		s.apiCalls.Add(1)
		reply(w, newResponse(http.StatusServiceUnavailable, `{"reason":"COMMON.UNAVAILABLE","error_message":"try again"}`))
		return true
	})
	var o observed
	calls := func() int64 { return s.apiCalls.Swap(0) }

	failNext.Store(true)
	calls()
	if _, err := c.sdk.Users.Get(ctx, userID); err == nil {
		o.sdk = fmt.Sprintf("retried after a backoff, succeeds (%d requests)", calls())
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v", err)
	}
	failNext.Store(true)
	calls()
	if resp, err := c.gen.GetUserWithResponse(ctx, userID); err == nil {
		o.generated = fmt.Sprintf("no error: status %d (%d request)", resp.StatusCode(), calls())
	} else {
		o.generated = fmt.Sprintf("unexpected: %v", err)
	}
	failNext.Store(true)
	calls()
	if _, err := c.raw.getUser(ctx, userID); err != nil {
		o.raw = fmt.Sprintf("error (%d request)", calls())
	} else {
		o.raw = "unexpected: no error"
	}
	return o
}

func probeRedirect(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	// other is another port of the same host: it records the Authorization
	// it receives and answers the User.
	var mu sync.Mutex
	var received []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("Authorization"))
		mu.Unlock()
		reply(w, s.user)
	}))
	defer other.Close()
	s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != prefix+"/users/"+userID {
			return false
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		return true
	})
	sent := func() string {
		mu.Lock()
		defer mu.Unlock()
		got := received
		received = nil
		switch {
		case len(got) == 0:
			return "nothing sent there"
		case got[0] == *s.current.Load():
			return "the bearer token sent to the other port"
		default:
			return fmt.Sprintf("sent there without the token (%q)", got[0])
		}
	}
	var o observed
	var apiErr *management.APIError
	if _, err := c.sdk.Users.Get(ctx, userID); errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTemporaryRedirect {
		o.sdk = "error naming the redirect; " + sent()
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v; %s", err, sent())
	}
	if _, err := c.gen.getUser(ctx, userID); err == nil {
		o.generated = "followed: " + sent()
	} else {
		o.generated = fmt.Sprintf("unexpected: %v; %s", err, sent())
	}
	if _, err := c.raw.getUser(ctx, userID); err == nil {
		o.raw = "followed: " + sent()
	} else {
		o.raw = fmt.Sprintf("unexpected: %v; %s", err, sent())
	}
	return o
}

func probeNull(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != prefix+"/users/"+userID {
			return false
		}
		reply(w, newResponse(http.StatusOK, "null"))
		return true
	})
	var o observed
	var decodeErr *management.DecodeError
	if _, err := c.sdk.Users.Get(ctx, userID); errors.As(err, &decodeErr) {
		o.sdk = "`*DecodeError`"
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v", err)
	}
	if u, err := c.gen.getUser(ctx, userID); err == nil && u.Id == "" {
		o.generated = "no error: an empty User"
	} else {
		o.generated = fmt.Sprintf("unexpected: %v", err)
	}
	if u, err := c.raw.getUser(ctx, userID); err == nil && u.ID == "" {
		o.raw = "no error: an empty User"
	} else {
		o.raw = fmt.Sprintf("unexpected: %v", err)
	}
	return o
}

func probeLargeInt(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	describe := func(v any) string {
		switch v := v.(type) {
		case json.Number:
			return v.String() + " (`json.Number`)"
		case float64:
			return fmt.Sprintf("%.0f (`float64`)", v)
		default:
			return fmt.Sprintf("%v (%T)", v, v)
		}
	}
	var o observed
	if u, err := c.sdk.Users.Get(ctx, userID); err == nil {
		o.sdk = describe(u.CustomSettings["device_order"])
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v", err)
	}
	if u, err := c.gen.getUser(ctx, userID); err == nil {
		o.generated = describe((*u.CustomSettings)["device_order"])
	} else {
		o.generated = fmt.Sprintf("unexpected: %v", err)
	}
	if u, err := c.raw.getUser(ctx, userID); err == nil {
		o.raw = strings.TrimSuffix(describe(u.CustomSettings["device_order"]), "`)") + "`, with `UseNumber`)"
	} else {
		o.raw = fmt.Sprintf("unexpected: %v", err)
	}
	return o
}

// updateThing is the raw column's PATCH /things/{id}: the hand-written
// model holds last_seen as a time.Time, as the spec's string type suggests.
func (c *rawClient) updateThing(ctx context.Context, id string, lastSeen time.Time) error {
	body, err := json.Marshal(struct {
		LastSeen *time.Time `json:"last_seen,omitempty"`
	}{&lastSeen})
	if err != nil {
		return err
	}
	var out json.RawMessage
	return c.do(ctx, http.MethodPatch, c.base+prefix+"/things/"+id, body, &out)
}

func probeTimestamp(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	ctx := context.Background()
	var mu sync.Mutex
	var sent string
	s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPatch {
			return false
		}
		var body struct {
			LastSeen string `json:"last_seen"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		sent = body.LastSeen
		mu.Unlock()
		reply(w, newResponse(http.StatusOK, `{"physical_id":"thing-1","name":"n","model":"m","firmware_version":"1",`+
			`"last_seen":null,"statuses":[],"custom_settings":null,"associated_users":[],`+
			`"created_at":"2024-01-01T00:00:00.000Z","updated_at":"2024-01-01T00:00:00.000Z"}`))
		return true
	})
	wire := func(err error) string {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			return fmt.Sprintf("unexpected: %v", err)
		}
		switch {
		case sent == "2024-03-18T09:21:45.123Z":
			return "`" + sent + "` (the spec's format)"
		case strings.HasPrefix(sent, "2024-03-18T10:21:45.123456789+01:00"):
			return "`" + sent + "` (RFC 3339, as given)"
		default:
			return "`" + sent + "`"
		}
	}
	// A time a program has at hand: local, finer than a millisecond.
	at := time.Date(2024, 3, 18, 10, 21, 45, 123456789, time.FixedZone("CET", 3600))
	ts := management.NewTimestamp(at)
	_, err := c.sdk.Things.Update(ctx, "thing-1", management.ThingUpdate{LastSeen: &ts})
	o := observed{sdk: wire(err)}
	_, err = c.gen.UpdateThingWithResponse(ctx, "thing-1", peerapi.ThingUpdate{LastSeen: &at})
	o.generated = wire(err)
	o.raw = wire(c.raw.updateThing(ctx, "thing-1", at))
	return o
}

func probePrinted(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	c := newClients(t, s)
	leaks := func(printed ...string) string {
		all := strings.Join(printed, "\n")
		secret := strings.Contains(all, clientSecret)
		token := strings.Contains(all, strings.TrimPrefix(*s.current.Load(), "Bearer "))
		switch {
		case secret && token:
			return "the client secret and the token"
		case secret:
			return "the client secret"
		case token:
			return "the token"
		default:
			return "no secret, no token"
		}
	}
	cfg := management.Config{BaseURL: s.URL, ClientID: clientID, ClientSecret: clientSecret}
	o := observed{
		sdk: leaks(fmt.Sprintf("%+v", c.sdk), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)),
		raw: leaks(fmt.Sprintf("%+v", c.raw)),
	}
	o.generated = leaks(fmt.Sprintf("%+v", c.gen.ClientWithResponses), fmt.Sprintf("%+v", c.gen.creds))
	if o.generated == "the client secret" && leaks(fmt.Sprintf("%+v", c.gen.creds)) == "the client secret" {
		o.generated += " (`clientcredentials.Config`)"
	}
	return o
}

func probeFormGrant(t *testing.T) observed {
	s := newServer(t, 0, time.Hour)
	ctx := context.Background()
	var o observed
	var grants []string
	s.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == tokenPath {
			body, _ := io.ReadAll(r.Body)
			grants = append(grants, r.Header.Get("Content-Type"))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		return false
	})
	grant := func() string {
		defer func() { grants = nil }()
		if len(grants) != 1 {
			return fmt.Sprintf("%d token requests", len(grants))
		}
		if grants[0] == "application/json" {
			return "JSON grant"
		}
		return "form grant"
	}
	if _, err := newSDK(t, s, &http.Client{Transport: newTransport(t, 4)}).Users.Get(ctx, userID); err == nil {
		o.sdk = grant() + ", token issued"
	} else {
		o.sdk = fmt.Sprintf("unexpected: %v", err)
	}
	plain := newGenerated(t, s, newTransport(t, 4), false, 0)
	_, err := plain.GetUserWithResponse(ctx, userID)
	sent := grant()
	if err != nil && strings.Contains(err.Error(), "unsupported_grant_type") {
		o.generated = sent + " refused (`unsupported_grant_type`)"
		if _, err := newGenerated(t, s, newTransport(t, 4), true, 0).getUser(ctx, userID); err == nil && grant() == "JSON grant" {
			o.generated += "; a shim sends it as JSON"
		}
	} else {
		o.generated = fmt.Sprintf("unexpected: %v", err)
	}
	if _, err := newRaw(s, newTransport(t, 4)).getUser(ctx, userID); err == nil {
		o.raw = grant() + " (hand-written), token issued"
	} else {
		o.raw = fmt.Sprintf("unexpected: %v", err)
	}
	return o
}
