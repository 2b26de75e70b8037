package management

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jarcoal/httpmock"
)

// attemptEvent is one call of an attempt hook, as attemptRecorder writes
// it down.
type attemptEvent struct {
	Hook    string
	Route   string // of the Operation
	Attempt Attempt
	Result  AttemptResult // Err replaced by ErrText
	ErrText string
}

type attemptRecorder struct {
	mu     sync.Mutex
	events []attemptEvent
	// header, when set, fills the carrier of each AttemptStart.
	header func(h http.Header)
}

func (r *attemptRecorder) add(e attemptEvent) {
	if e.Result.Err != nil {
		e.ErrText, e.Result.Err = e.Result.Err.Error(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// attemptKey marks the context an AttemptStart returned.
type attemptKey struct{}

func (r *attemptRecorder) observer() *Observer {
	return &Observer{
		AttemptStart: func(ctx context.Context, op Operation, a Attempt) context.Context {
			if len(a.Header) != 0 {
				panic("the carrier is not empty")
			}
			if r.header != nil {
				r.header(a.Header)
			}
			hdr := a.Header
			a.Header = nil
			r.add(attemptEvent{Hook: "start", Route: op.Route, Attempt: a})
			a.Header = hdr
			return context.WithValue(ctx, attemptKey{}, a.ResendCount)
		},
		AttemptDone: func(ctx context.Context, op Operation, a Attempt, res AttemptResult) {
			if _, ok := ctx.Value(attemptKey{}).(int); !ok {
				panic("AttemptDone without the context of AttemptStart")
			}
			a.Header = nil
			r.add(attemptEvent{Hook: "done", Route: op.Route, Attempt: a, Result: res})
		},
	}
}

func (r *attemptRecorder) recorded() []attemptEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attemptEvent(nil), r.events...)
}

// Every HTTP request is an attempt between AttemptStart and AttemptDone:
// the token request, the first send, its retry and the replay after a 401,
// each with its route, server, URL without ids, resend count and reason;
// the answer's status, protocol and request id come back, and the request
// carries the context AttemptStart returned.
func TestObserverAttempts(t *testing.T) {
	rec := &attemptRecorder{}
	c, mt := setup(t, Config{Observer: rec.observer()})
	calls := 0
	mt.RegisterResponder(http.MethodGet, mockPrefix+"/users/u-1", func(r *http.Request) (*http.Response, error) {
		if n, ok := r.Context().Value(attemptKey{}).(int); !ok || n != calls {
			t.Errorf("request %d carries the context of attempt %v, want %d", calls+1, r.Context().Value(attemptKey{}), calls)
		}
		calls++
		var resp *http.Response
		switch calls {
		case 1:
			resp = httpmock.NewStringResponse(http.StatusServiceUnavailable, "")
		case 2:
			resp = httpmock.NewStringResponse(http.StatusUnauthorized, "")
		default:
			resp = httpmock.NewStringResponse(http.StatusOK, `{"id":"u-1"}`)
			resp.ProtoMajor, resp.ProtoMinor = 1, 1
		}
		resp.Header.Set("X-Request-Id", "req-"+strings.Repeat("1", calls))
		return resp, nil
	})
	if _, err := c.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
	get := Attempt{Method: "GET", Route: "/users/{user_id}", ServerAddress: "api.example.test", ServerPort: 443,
		URL: mockPrefix + "/users/REDACTED"}
	tok := Attempt{Method: "POST", Route: "/auth/token", ServerAddress: "api.example.test", ServerPort: 443, URL: tokenURL}
	retry, replay := get, get
	retry.ResendCount, retry.Resend = 1, ResendRetry
	replay.ResendCount, replay.Resend = 2, ResendReplay
	tok2 := tok
	want := []attemptEvent{
		{Hook: "start", Route: "/auth/token", Attempt: tok},
		{Hook: "done", Route: "/auth/token", Attempt: tok, Result: AttemptResult{Status: 200}},
		{Hook: "start", Route: "/users/{user_id}", Attempt: get},
		{Hook: "done", Route: "/users/{user_id}", Attempt: get, Result: AttemptResult{Status: 503, RequestID: "req-1", RequestIDHeader: "X-Request-Id"}},
		{Hook: "start", Route: "/users/{user_id}", Attempt: retry},
		{Hook: "done", Route: "/users/{user_id}", Attempt: retry, Result: AttemptResult{Status: 401, RequestID: "req-11", RequestIDHeader: "X-Request-Id"}},
		{Hook: "start", Route: "/auth/token", Attempt: tok2},
		{Hook: "done", Route: "/auth/token", Attempt: tok2, Result: AttemptResult{Status: 200}},
		{Hook: "start", Route: "/users/{user_id}", Attempt: replay},
		{Hook: "done", Route: "/users/{user_id}", Attempt: replay, Result: AttemptResult{Status: 200, Protocol: "1.1", RequestID: "req-111", RequestIDHeader: "X-Request-Id"}},
	}
	if diff := cmp.Diff(want, rec.recorded()); diff != "" {
		t.Errorf("attempt hooks (-want +got):\n%s", diff)
	}
}

// An attempt that got no answer ends with its redacted error and no
// status; the URL names the port of a base URL that has one.
func TestObserverAttemptFailed(t *testing.T) {
	rec := &attemptRecorder{}
	c, err := NewClient(Config{BaseURL: "https://api.example.test:8443", TokenSource: staticSource(mockSecret), MaxRetries: -1, Observer: rec.observer(),
		HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("dial failed near " + mockSecret)
		})}})
	must(t, err)
	if _, err := c.Users.Get(t.Context(), "u-1"); err == nil {
		t.Fatal("Get succeeded")
	}
	got := rec.recorded()
	if len(got) != 2 || got[1].Hook != "done" {
		t.Fatalf("hooks %+v, want a start and a done", got)
	}
	d := got[1]
	if d.Attempt.URL != "https://api.example.test:8443"+defaultPathPrefix+"/users/REDACTED" || d.Attempt.ServerPort != 8443 {
		t.Errorf("attempt %+v", d.Attempt)
	}
	if d.Result != (AttemptResult{}) || !strings.Contains(d.ErrText, "dial failed") || strings.Contains(d.ErrText, mockSecret) {
		t.Errorf("result %+v, error %q: want no status and the redacted error", d.Result, d.ErrText)
	}
}

// What AttemptStart sets in the carrier travels with the request, but a
// hook can neither read the credentials (the carrier starts empty: the
// recorder panics otherwise) nor replace or add a field that carries,
// steers or frames them, nor one that the SDK sets (read, as the block
// list reads names, with underscores as hyphens), nor one that changes
// how the answer comes (its encoding, a range of it, a condition), nor
// send a field net/http would refuse.
func TestObserverAttemptHeaderCarrier(t *testing.T) {
	rec := &attemptRecorder{header: func(h http.Header) {
		h.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		h.Set("tracestate", "k=v")
		for _, name := range []string{"Authorization", "Cookie", "Host", "Content-Type", "Content-Length", "Proxy-Authorization",
			"Accept", "User-Agent", "Connection", "Transfer-Encoding", "Bad Name",
			"Proxy_Authorization", "content_length", "Transfer_Encoding", "User_Agent", "accept",
			"Accept-Encoding", "Accept_Encoding", "Range", "If-None-Match", "If_Modified_Since"} {
			h[name] = []string{"hook"}
		}
		h.Set("X-Split", "a\r\nAuthorization: hook")
	}}
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == defaultPathPrefix+"/auth/token" {
			_, _ = w.Write([]byte(`{"access_token":"` + mockToken + `","token_type":"Bearer","expires_in":600}`))
			return
		}
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"id":"u-1"}`))
	}))
	defer srv.Close()
	c, err := NewClient(Config{BaseURL: srv.URL, AllowInsecureHTTP: true, ClientID: mockID, ClientSecret: mockSecret, Observer: rec.observer()})
	must(t, err)
	if _, err := c.Users.Get(t.Context(), "u-1"); err != nil {
		t.Fatal(err)
	}
	want := http.Header{
		"Accept-Encoding": {"gzip"}, // net/http's own, which it decodes
		"Authorization":   {"Bearer " + mockToken},
		"Accept":          {"application/json"},
		"Content-Type":    {"application/json"},
		"User-Agent":      {"management-go/" + Version},
		"Traceparent":     {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"Tracestate":      {"k=v"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers on the wire (-want +got):\n%s", diff)
	}
	for _, e := range rec.recorded() {
		if e.Hook == "done" && e.Attempt.URL != srv.URL+defaultPathPrefix+e.Attempt.Route && e.Attempt.Route != "/users/{user_id}" {
			t.Errorf("attempt URL %q", e.Attempt.URL)
		}
	}
	if diff := cmp.Diff([]string{"1.1", "1.1"}, protocols(rec.recorded()), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("protocols (-want +got):\n%s", diff)
	}
}

// A hook that asks for gzip itself would turn off net/http's transparent
// decompression, and a gzip answer would reach the decoder compressed: the
// carrier refuses Accept-Encoding, and a real server's gzip 200 decodes.
func TestObserverCarrierLeavesGzipToNetHTTP(t *testing.T) {
	obs := &Observer{AttemptStart: func(ctx context.Context, _ Operation, a Attempt) context.Context {
		a.Header.Set("Accept-Encoding", "gzip")
		return ctx
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := `{"id":"u-1"}`
		if r.URL.Path == defaultPathPrefix+"/auth/token" {
			body = `{"access_token":"` + mockToken + `","token_type":"Bearer","expires_in":600}`
		}
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = w.Write([]byte(body))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte(body))
		_ = zw.Close()
	}))
	defer srv.Close()
	c, err := NewClient(Config{BaseURL: srv.URL, AllowInsecureHTTP: true, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1, Observer: obs})
	must(t, err)
	if u, err := c.Users.Get(t.Context(), "u-1"); err != nil || u.ID != "u-1" {
		t.Errorf("Get with a hook asking for gzip = %v, %v; want u-1, decoded", u, err)
	}
}

func protocols(events []attemptEvent) (p []string) {
	for _, e := range events {
		if e.Hook == "done" {
			p = append(p, e.Result.Protocol)
		}
	}
	return p
}

// Without attempt hooks no Attempt is built; ResendReason names itself.
func TestResendReasonString(t *testing.T) {
	for r, want := range map[ResendReason]string{ResendNone: "none", ResendRetry: "retry", ResendReplay: "replay", 9: "unknown"} {
		if got := r.String(); got != want {
			t.Errorf("%d: %q, want %q", r, got, want)
		}
	}
}

// An attempt whose RoundTripper panics still ends with AttemptDone, so
// that a span the hook started is ended, before the panic goes on to the
// caller (whose goroutine it is).
func TestObserverAttemptDoneWhenRoundTripperPanics(t *testing.T) {
	rec := &attemptRecorder{}
	c, err := NewClient(Config{BaseURL: mockBaseURL, TokenSource: staticSource(mockSecret), MaxRetries: -1, Observer: rec.observer(),
		HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { panic("transport") })}})
	must(t, err)
	func() {
		defer func() {
			if p := recover(); p != "transport" {
				t.Errorf("recovered %v; want the RoundTripper's panic", p)
			}
		}()
		_, _ = c.Users.Get(t.Context(), "u-1")
	}()
	got := rec.recorded()
	if len(got) != 2 || got[0].Hook != "start" || got[1].Hook != "done" || !strings.Contains(got[1].ErrText, "panicked") {
		t.Errorf("hooks %+v; want a start, and a done with an error saying the request panicked", got)
	}
}

// An operation that ends in a panic is not reported to OperationDone as a
// success: the caller's own, and the token request's in its flight.
func TestObserverOperationDoneWhenPanicking(t *testing.T) {
	var mu sync.Mutex
	errs := map[string]error{}
	obs := &Observer{OperationDone: func(_ context.Context, op Operation, r OperationResult) {
		mu.Lock()
		defer mu.Unlock()
		errs[op.Route] = r.Err
	}}
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) { panic("transport") })
	c, err := NewClient(Config{BaseURL: mockBaseURL, TokenSource: staticSource(mockSecret), MaxRetries: -1, Observer: obs,
		HTTPClient: &http.Client{Transport: rt}})
	must(t, err)
	func() {
		defer func() { _ = recover() }()
		_, _ = c.Users.Get(t.Context(), "u-1")
	}()
	mu.Lock()
	if e, ok := errs["/users/{user_id}"]; !ok || e == nil {
		t.Errorf("OperationDone for the caller's operation: err %v (called: %v); want the panic reported as an error", e, ok)
	}
	clear(errs)
	mu.Unlock()
	c, err = NewClient(Config{BaseURL: mockBaseURL, ClientID: mockID, ClientSecret: mockSecret, MaxRetries: -1, Observer: obs,
		HTTPClient: &http.Client{Transport: rt}})
	must(t, err)
	if _, err := c.Users.Get(t.Context(), "u-1"); err == nil {
		t.Error("Get succeeded with a token request that panicked")
	}
	mu.Lock()
	defer mu.Unlock()
	if e, ok := errs["/auth/token"]; !ok || e == nil {
		t.Errorf("OperationDone for the token request: err %v (called: %v); want the panic reported as an error", e, ok)
	}
}
