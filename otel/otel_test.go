package otel_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// ids are the identifiers the tour uses: none may be recorded by default.
var ids = []string{"u-ada", "u-anon-19", "thermo-0042", "plug-7", "lamp-demo-1", "no-such-user"}

// recorded is what one tour left in the in-memory exporters.
type recorded struct {
	spans   []sdktrace.ReadOnlySpan
	metrics metricdata.ResourceMetrics
	srv     *managementtest.Server
	secrets []string // the client secret and the End User tokens
}

// tour runs the operations examples/quickstart runs (two pages of each
// listing, a read retried after a 503, a 404, an update, an association
// and its removal, two authenticate calls) and three Authenticator checks
// (miss, hit, refused), against managementtest, observed by opts.
func tour(t *testing.T, opts ...mgmtotel.Option) recorded {
	t.Helper()
	ctx := t.Context()
	srv := managementtest.NewServer(managementtest.WithPageSize(1))
	t.Cleanup(srv.Close)
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "thermo-0042", Name: "Hall thermostat", Model: "TH-2", FirmwareVersion: "1.4.0"}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "plug-7", Name: "Desk plug", Model: "PL-1", FirmwareVersion: "0.9.2"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}, AssociatedThings: []management.AssociatedThing{{PhysicalID: "thermo-0042"}}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-anon-19"}, IsAnonymous: true})
	endUser := "Bearer " + srv.IssueEndUserToken("u-ada")

	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	opts = append([]mgmtotel.Option{
		mgmtotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
		mgmtotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
	}, opts...)
	cfg := srv.Config()
	cfg.Observer = mgmtotel.New(opts...)
	c, err := management.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	for _, err := range c.Users.List(ctx, nil) {
		must(t, err)
	}
	for _, err := range c.Things.List(ctx, &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}) {
		must(t, err)
	}
	srv.FailNext(managementtest.RouteGetUser, 1, 503, 0)
	_, err = c.Users.Get(ctx, "u-ada")
	must(t, err)
	if _, err := c.Users.Get(ctx, "no-such-user"); err == nil {
		t.Fatal("Users.Get(no-such-user) succeeded")
	}
	_, err = c.Things.Update(ctx, "thermo-0042", management.ThingUpdate{Name: management.Ptr("renamed")})
	must(t, err)
	_, _, err = c.Users.AssociateThing(ctx, "u-ada", management.NewAssociation{PhysicalID: "lamp-demo-1", Model: "LM-3", FirmwareVersion: "2.0.1"})
	must(t, err)
	must(t, c.Users.DisassociateThing(ctx, "u-ada", "lamp-demo-1"))
	for _, tok := range []string{endUser, "Bearer not-a-real-token"} {
		_, err := c.Authenticate(ctx, tok)
		must(t, err)
	}
	a := &management.Authenticator{Client: c}
	for _, header := range []string{endUser, endUser, ""} {
		r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		_, _ = a.Check(r)
	}

	rec := recorded{spans: spans.Ended(), srv: srv, secrets: []string{cfg.ClientSecret, endUser, "not-a-real-token"}}
	must(t, reader.Collect(ctx, &rec.metrics))
	return rec
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTourSpans(t *testing.T) {
	rec := tour(t)
	got := map[string]int{}
	for _, s := range rec.spans {
		got[s.Name()]++
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %q: kind %v, want client", s.Name(), s.SpanKind())
		}
		if tmpl := attr(s.Attributes(), "url.template"); !strings.HasSuffix(s.Name(), " "+tmpl.AsString()) {
			t.Errorf("span %q: url.template %q", s.Name(), tmpl.AsString())
		}
	}
	want := map[string]int{
		"POST /auth/token":                        1,
		"GET /users":                              rec.srv.Requests(managementtest.RouteListUsers),
		"GET /things":                             rec.srv.Requests(managementtest.RouteListThings),
		"GET /users/{user_id}":                    2,
		"PATCH /things/{thing_physical_id}":       1,
		"POST /users/{user_id}/associated_things": 1,
		"DELETE /users/{user_id}/associated_things/{physical_id}": 1,
		"POST /authenticate": 3, // two Authenticate calls, one Authenticator call
	}
	if want["GET /users"] < 2 || want["GET /things"] < 2 {
		t.Fatalf("the listings took %d and %d pages, want further pages", want["GET /users"], want["GET /things"])
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%d spans %q, want %d (all: %v)", got[name], name, n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("span names %v, want %v", got, want)
	}
}

func TestTourTokenSpanIsAChild(t *testing.T) {
	rec := tour(t)
	tok := find(t, rec.spans, "POST /auth/token", 0)
	first := find(t, rec.spans, "GET /users", 0)
	if tok.Parent().SpanID() != first.SpanContext().SpanID() {
		t.Errorf("token span's parent %v, want the first GET /users %v", tok.Parent().SpanID(), first.SpanContext().SpanID())
	}
	if got := attr(tok.Attributes(), "http.response.status_code").AsInt64(); got != 200 {
		t.Errorf("token span status %d, want 200", got)
	}
}

func TestTourRetryEvent(t *testing.T) {
	rec := tour(t)
	get := find(t, rec.spans, "GET /users/{user_id}", 200)
	if got := attr(get.Attributes(), "http.request.resend_count").AsInt64(); got != 1 {
		t.Errorf("resend_count %d, want 1", got)
	}
	if got := attr(get.Attributes(), "management.attempts").AsInt64(); got != 2 {
		t.Errorf("attempts %d, want 2", got)
	}
	ev := get.Events()
	if len(ev) != 1 || ev[0].Name != "retry" {
		t.Fatalf("events %+v, want one retry", ev)
	}
	if got := attr(ev[0].Attributes, "http.response.status_code").AsInt64(); got != 503 {
		t.Errorf("retry event status %d, want 503", got)
	}
	if got := attr(ev[0].Attributes, "management.retry_wait").AsFloat64(); got <= 0 {
		t.Errorf("retry event wait %v, want > 0", got)
	}
	missing := find(t, rec.spans, "GET /users/{user_id}", 404)
	if got := attr(missing.Attributes(), "error.type").AsString(); got != "404" {
		t.Errorf("404 span error.type %q, want \"404\"", got)
	}
	if missing.Status().Description != "" {
		t.Errorf("404 span status description %q, want none by default", missing.Status().Description)
	}
}

func TestTourMetrics(t *testing.T) {
	rec := tour(t)
	sums := map[string]int64{}
	var durations uint64
	var durationRoutes []string
	for _, sm := range rec.metrics.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sums[m.Name] += p.Value
					noIDs(t, m.Name, p.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					durations += p.Count
					v, _ := p.Attributes.Value("url.template")
					durationRoutes = append(durationRoutes, v.AsString())
					noIDs(t, m.Name, p.Attributes.ToSlice())
				}
			}
		}
	}
	want := map[string]int64{
		"management.client.retries":             1,
		"management.client.token.refreshes":     1,
		"management.authenticator.hits":         1,
		"management.authenticator.misses":       1,
		"management.authenticator.refusals":     1,
		"management.authenticator.calls.active": 0,
	}
	for name, n := range want {
		if v, ok := sums[name]; !ok || v != n {
			t.Errorf("%s = %d (recorded: %t), want %d", name, v, ok, n)
		}
	}
	if durations != uint64(len(rec.spans)) {
		t.Errorf("http.client.request.duration counts %d operations, want one per span (%d); routes %v", durations, len(rec.spans), durationRoutes)
	}
}

func TestTourRecordsNoIDsByDefault(t *testing.T) {
	rec := tour(t)
	for _, s := range rec.spans {
		texts := []string{s.Name(), s.Status().Description}
		for _, kv := range s.Attributes() {
			texts = append(texts, kv.Value.String())
		}
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.String())
			}
		}
		for _, text := range texts {
			for _, bad := range append(ids, rec.secrets...) {
				if strings.Contains(text, bad) {
					t.Errorf("span %q records %q", s.Name(), bad)
				}
			}
		}
	}
}

func TestTourWithPathValues(t *testing.T) {
	rec := tour(t, mgmtotel.WithPathValues())
	get := find(t, rec.spans, "GET /users/{user_id}", 200)
	if got := attr(get.Attributes(), "management.user_id").AsString(); got != "u-ada" {
		t.Errorf("management.user_id %q, want u-ada", got)
	}
	del := find(t, rec.spans, "DELETE /users/{user_id}/associated_things/{physical_id}", 0)
	if got := attr(del.Attributes(), "management.physical_id").AsString(); got != "lamp-demo-1" {
		t.Errorf("management.physical_id %q, want lamp-demo-1", got)
	}
	missing := find(t, rec.spans, "GET /users/{user_id}", 404)
	if !strings.Contains(missing.Status().Description, "no-such-user") {
		t.Errorf("404 span status description %q, want the error text", missing.Status().Description)
	}
	for _, s := range rec.spans {
		for _, kv := range s.Attributes() {
			for _, bad := range rec.secrets {
				if strings.Contains(kv.Value.String(), bad) {
					t.Errorf("span %q records a credential in %s", s.Name(), kv.Key)
				}
			}
		}
	}
}

// find returns the first span named name with the final status (any for 0).
func find(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, status int64) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name && (status == 0 || attr(s.Attributes(), "http.response.status_code").AsInt64() == status) {
			return s
		}
	}
	t.Fatalf("no span %q with status %d", name, status)
	return nil
}

// attr returns the value of key in attrs (the zero Value when absent).
func attr(attrs []attribute.KeyValue, key attribute.Key) attribute.Value {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func noIDs(t *testing.T, metric string, attrs []attribute.KeyValue) {
	t.Helper()
	for _, kv := range attrs {
		for _, bad := range ids {
			if strings.Contains(kv.Value.String(), bad) {
				t.Errorf("metric %s records %q in %s", metric, bad, kv.Key)
			}
		}
	}
}
