package otel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ids are the identifiers the tests use: none may be recorded by default.
var ids = []string{"u-ada", "u-anon-19", "thermo-0042", "plug-7", "lamp-demo-1", "no-such-user"}

// one returns the only root of spans, failing unless there is one.
func one(t *testing.T, spans []sdktrace.ReadOnlySpan) *node {
	t.Helper()
	roots := tree(spans)
	if len(roots) != 1 {
		t.Fatalf("%d root spans, want 1:\n%s", len(roots), render(roots))
	}
	return roots[0]
}

// checkShape compares the tree's names and kinds.
func checkShape(t *testing.T, root *node, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, shape([]*node{root})); diff != "" {
		t.Errorf("span tree (-want +got):\n%s\n%s", diff, render([]*node{root}))
	}
}

// checkSpan compares a span's attributes, all of them, and its status.
func checkSpan(t *testing.T, n *node, want map[string]any, status codes.Code) {
	t.Helper()
	s := n.span
	if diff := cmp.Diff(want, attrs(s.Attributes())); diff != "" {
		t.Errorf("span %q %s attributes (-want +got):\n%s", s.Name(), s.SpanKind(), diff)
	}
	if s.Status().Code != status || s.Status().Description != "" {
		t.Errorf("span %q %s status %v %q, want %v without a description", s.Name(), s.SpanKind(), s.Status().Code, s.Status().Description, status)
	}
}

// opAttrs are the attributes of an operation's INTERNAL span.
func opAttrs(method, route string, status, attempts int, extra ...attribute.KeyValue) map[string]any {
	m := map[string]any{
		"http.request.method":       method,
		"url.template":              route,
		"management.attempts":       int64(attempts),
		"management.retry_wait":     float64(0),
		"http.response.status_code": int64(status),
	}
	if status >= 400 {
		m["error.type"] = strconv.Itoa(status)
	}
	for k, v := range attrs(extra) {
		m[k] = v
	}
	return m
}

// A cold Users.Get: the operation, the token fetch it needed (an operation
// of its own with its request), then its request.
func TestPlainCall(t *testing.T) {
	r := newRig(t, nil)
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{
		"GET /users/{user_id} internal",
		"  POST /auth/token internal",
		"    POST /auth/token client",
		"  GET /users/{user_id} client",
	})
	checkSpan(t, root, opAttrs("GET", "/users/{user_id}", 200, 1), codes.Unset)
	tokenOp, tokenReq, get := root.children[0], root.children[0].children[0], root.children[1]
	checkSpan(t, tokenOp, opAttrs("POST", "/auth/token", 200, 1), codes.Unset)
	checkSpan(t, tokenReq, r.clientAttrs("POST", "/auth/token", "/auth/token", 200), codes.Unset)
	checkSpan(t, get, r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 200), codes.Unset)

	rm := r.metrics(t)
	wantDurations := map[string]map[string]any{
		"POST /auth/token":     r.metricAttrs("POST", "/auth/token", 200),
		"GET /users/{user_id}": r.metricAttrs("GET", "/users/{user_id}", 200),
	}
	checkHistogram(t, rm, "http.client.request.duration", wantDurations, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10})
	checkHistogram(t, rm, "management.client.operation.duration", map[string]map[string]any{
		"POST /auth/token":     {"http.request.method": "POST", "url.template": "/auth/token", "http.response.status_code": int64(200)},
		"GET /users/{user_id}": {"http.request.method": "GET", "url.template": "/users/{user_id}", "http.response.status_code": int64(200)},
	}, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60})
	checkSum(t, rm, "management.client.token.refreshes", []map[string]any{{"http.response.status_code": int64(200)}}, 1)
	checkSum(t, rm, "management.client.retries", nil, 0)
}

// metricAttrs are the attributes of http.client.request.duration.
func (r *rig) metricAttrs(method, route string, status int, extra ...attribute.KeyValue) map[string]any {
	m := map[string]any{
		"http.request.method":      method,
		"server.address":           r.host,
		"server.port":              int64(r.port),
		"url.scheme":               "http",
		"url.template":             route,
		"network.protocol.version": "1.1",
	}
	if status != 0 {
		m["http.response.status_code"] = int64(status)
	} else {
		delete(m, "network.protocol.version")
	}
	if status >= 400 {
		m["error.type"] = strconv.Itoa(status)
	}
	for k, v := range attrs(extra) {
		m[k] = v
	}
	return m
}

// checkHistogram checks that metric name has one point per key of want
// ("METHOD route", with the attributes given), each counting one
// measurement, with the bucket boundaries bounds.
func checkHistogram(t *testing.T, rm metricdata.ResourceMetrics, name string, want map[string]map[string]any, bounds []float64) {
	t.Helper()
	got := map[string]map[string]any{}
	for _, m := range find(rm, name) {
		h, ok := m.Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
		}
		for _, p := range h.DataPoints {
			a := attrs(p.Attributes.ToSlice())
			key := a["http.request.method"].(string) + " " + a["url.template"].(string)
			if _, dup := got[key]; dup {
				key += " (again)"
			}
			got[key] = a
			if p.Count != 1 {
				t.Errorf("%s %s: count %d, want 1", name, key, p.Count)
			}
			if !cmp.Equal(p.Bounds, bounds) {
				t.Errorf("%s: bounds %v, want %v", name, p.Bounds, bounds)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s points (-want +got):\n%s", name, diff)
	}
}

// checkSum checks the points of a counter: their attributes, and the sum.
func checkSum(t *testing.T, rm metricdata.ResourceMetrics, name string, want []map[string]any, total int64) {
	t.Helper()
	var got []map[string]any
	var sum int64
	for _, m := range find(rm, name) {
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			if p.Value != 0 || total == 0 {
				got = append(got, attrs(p.Attributes.ToSlice()))
			}
			sum += p.Value
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s points (-want +got):\n%s", name, diff)
	}
	if sum != total {
		t.Errorf("%s = %d, want %d", name, sum, total)
	}
}

// find returns the metrics named name.
func find(rm metricdata.ResourceMetrics, name string) []metricdata.Metrics {
	var found []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				found = append(found, m)
			}
		}
	}
	return found
}

// warm fetches the token, then forgets the spans and metrics so far.
func warm(t *testing.T, r *rig) {
	t.Helper()
	if _, err := r.client.Users.Get(t.Context(), "u-anon-19"); err != nil {
		t.Fatal(err)
	}
	r.spans.Reset()
	r.metrics(t) // a manual reader is cumulative: tests compare after-before where it matters
}

// A retry after a 503 that carried a request id: two CLIENT spans under
// the operation, the second with resend_count, the wait as an event.
func TestRetriedCall(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	r.srv.FailNextWith(managementtest.RouteGetUser, 1, managementtest.Response{Status: 503,
		Header: http.Header{"X-Request-Id": {"req-503-abc"}}})
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{
		"GET /users/{user_id} internal",
		"  GET /users/{user_id} client",
		"  GET /users/{user_id} client",
	})
	first, second := root.children[0], root.children[1]
	checkSpan(t, first, r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 503,
		attribute.StringSlice("http.response.header.x-request-id", []string{"req-503-abc"})), codes.Error)
	checkSpan(t, second, r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 200,
		attribute.Int("http.request.resend_count", 1)), codes.Unset)
	ops := attrs(root.span.Attributes())
	if ops["management.attempts"] != int64(2) || ops["management.retry_wait"].(float64) <= 0 {
		t.Errorf("operation span: attempts %v, retry_wait %v; want 2 and > 0", ops["management.attempts"], ops["management.retry_wait"])
	}
	ev := root.span.Events()
	if len(ev) != 1 || ev[0].Name != "retry" || attrs(ev[0].Attributes)["http.response.status_code"] != int64(503) {
		t.Errorf("operation span events %+v, want one retry after a 503", ev)
	}
	rm := r.metrics(t)
	checkSum(t, rm, "management.client.retries", []map[string]any{{
		"http.request.method": "GET", "url.template": "/users/{user_id}",
		"management.resend.reason": "retry", "http.response.status_code": int64(503),
	}}, 1)
}

// A refused connection: a CLIENT span without a status code, error.type
// naming the failure, then the retry.
func TestConnectionFailure(t *testing.T) {
	r := newRig(t, func(base http.RoundTripper) http.RoundTripper {
		return &refuseFirst{base: base, suffix: "/users/u-ada"}
	})
	warm(t, r)
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{
		"GET /users/{user_id} internal",
		"  GET /users/{user_id} client",
		"  GET /users/{user_id} client",
	})
	failed := r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 0, attribute.String("error.type", "connection_refused"))
	delete(failed, "network.protocol.version") // no answer, no protocol
	checkSpan(t, root.children[0], failed, codes.Error)
	checkSpan(t, root.children[1], r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 200,
		attribute.Int("http.request.resend_count", 1)), codes.Unset)
	rm := r.metrics(t)
	checkSum(t, rm, "management.client.retries", []map[string]any{{
		"http.request.method": "GET", "url.template": "/users/{user_id}",
		"management.resend.reason": "retry", "error.type": "connection_refused",
	}}, 1)
	var points []map[string]any
	for _, m := range find(rm, "http.client.request.duration") {
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			if a := attrs(p.Attributes.ToSlice()); a["error.type"] != nil {
				points = append(points, a)
			}
		}
	}
	if diff := cmp.Diff([]map[string]any{r.metricAttrs("GET", "/users/{user_id}", 0, attribute.String("error.type", "connection_refused"))}, points); diff != "" {
		t.Errorf("failed attempt's duration point (-want +got):\n%s", diff)
	}
}

// The replay after a 401: the refused request, the token fetch, the
// replay with resend_count 1, counted as a retry.
func TestReplayAfter401(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	r.srv.ExpireTokens()
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{
		"GET /users/{user_id} internal",
		"  GET /users/{user_id} client",
		"  POST /auth/token internal",
		"    POST /auth/token client",
		"  GET /users/{user_id} client",
	})
	checkSpan(t, root.children[0], r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 401), codes.Error)
	checkSpan(t, root.children[1].children[0], r.clientAttrs("POST", "/auth/token", "/auth/token", 200), codes.Unset)
	checkSpan(t, root.children[2], r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 200,
		attribute.Int("http.request.resend_count", 1)), codes.Unset)
	checkSum(t, r.metrics(t), "management.client.retries", []map[string]any{{
		"http.request.method": "GET", "url.template": "/users/{user_id}",
		"management.resend.reason": "replay", "http.response.status_code": int64(401),
	}}, 1)
}

// A listing of two pages: an operation per page, and the second page's
// url.full without the cursor of its next_page link, with or without
// WithPathValues.
func TestPaginatedList(t *testing.T) {
	for _, opts := range [][]mgmtotel.Option{nil, {mgmtotel.WithPathValues()}} {
		r := newRig(t, nil, opts...)
		warm(t, r)
		for _, err := range r.client.Users.List(t.Context(), &management.ListOptions{OrderBy: management.OrderByUpdatedAt}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		roots := tree(r.spans.Ended())
		if diff := cmp.Diff([]string{
			"GET /users internal", "  GET /users client",
			"GET /users internal", "  GET /users client",
		}, shape(roots)); diff != "" {
			t.Fatalf("span trees (-want +got):\n%s", diff)
		}
		for _, root := range roots {
			checkSpan(t, root.children[0], r.clientAttrs("GET", "/users", "/users", 200), codes.Unset)
		}
		cursors := logCursors(r)
		if len(cursors) != 1 {
			t.Fatalf("the fake saw cursors %q, want one (the second page's)", cursors)
		}
		noneOf(t, r.spans.Ended(), r.metrics(t), cursors)
	}
}

// A 404: the CLIENT span and the operation are errors without a
// description; the id is nowhere.
func TestNotFound(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	if _, err := r.client.Users.Get(t.Context(), "no-such-user"); err == nil {
		t.Fatal("Users.Get(no-such-user) succeeded")
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{"GET /users/{user_id} internal", "  GET /users/{user_id} client"})
	checkSpan(t, root, opAttrs("GET", "/users/{user_id}", 404, 1), codes.Error)
	checkSpan(t, root.children[0], r.clientAttrs("GET", "/users/{user_id}", "/users/REDACTED", 404), codes.Error)
	noneOf(t, r.spans.Ended(), r.metrics(t), ids)
}

// Authenticate: its operation and request, and no token anywhere.
func TestAuthenticate(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	tok := r.srv.IssueEndUserToken("u-ada")
	if _, err := r.client.Authenticate(t.Context(), "Bearer "+tok); err != nil {
		t.Fatal(err)
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{"POST /authenticate internal", "  POST /authenticate client"})
	checkSpan(t, root, opAttrs("POST", "/authenticate", 200, 1), codes.Unset)
	checkSpan(t, root.children[0], r.clientAttrs("POST", "/authenticate", "/authenticate", 200), codes.Unset)
	noneOf(t, r.spans.Ended(), r.metrics(t), []string{tok, r.cfg.ClientSecret})
}

// A token fetch that fails: its operation, its request, the counter by
// status; the caller's operation fails.
func TestTokenFetchRefused(t *testing.T) {
	r := newRig(t, nil)
	r.srv.FailNext(managementtest.RouteToken, 1, 400, 0)
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err == nil {
		t.Fatal("Users.Get succeeded without a token")
	}
	root := one(t, r.spans.Ended())
	checkShape(t, root, []string{
		"GET /users/{user_id} internal",
		"  POST /auth/token internal",
		"    POST /auth/token client",
	})
	checkSpan(t, root.children[0].children[0], r.clientAttrs("POST", "/auth/token", "/auth/token", 400), codes.Error)
	if root.children[0].span.Status().Code != codes.Error || root.span.Status().Code != codes.Error {
		t.Errorf("token operation status %v, caller's %v; want errors", root.children[0].span.Status().Code, root.span.Status().Code)
	}
	checkSum(t, r.metrics(t), "management.client.token.refreshes", []map[string]any{
		{"http.response.status_code": int64(400), "error.type": "400"},
	}, 1)
}

// The traceparent each request carries names the CLIENT span of its
// attempt, retries included.
func TestTraceparentNamesTheAttempt(t *testing.T) {
	r := newRig(t, nil, mgmtotel.WithPropagators(propagation.TraceContext{}))
	warm(t, r)
	r.srv.FailNext(managementtest.RouteGetUser, 1, 503, 0)
	if _, err := r.client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, req := range r.srv.Log() {
		if req.Route == managementtest.RouteGetUser && req.PathValues["user_id"] == "u-ada" {
			sent = append(sent, req.Header.Get("Traceparent"))
		}
	}
	root := one(t, r.spans.Ended())
	var want []string
	for _, c := range root.children {
		sc := c.span.SpanContext()
		want = append(want, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01")
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("traceparent of each request (-want: the attempts' spans, +got):\n%s", diff)
	}
}

// Without WithPropagators, the global propagator, a no-op until the
// program sets one, as with otelhttp.
func TestGlobalPropagatorByDefault(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	for _, req := range r.srv.Log() {
		if v := req.Header.Get("Traceparent"); v != "" {
			t.Errorf("%s %s carried traceparent %q with the no-op global propagator", req.Method, req.Path, v)
		}
	}
}

// A propagator can neither read nor replace the credentials: the calls
// succeed (the fake refuses "Bearer stolen"), and what it read is empty.
func TestPropagatorCannotTouchAuthorization(t *testing.T) {
	r := newRig(t, nil, mgmtotel.WithPropagators(hostile{}))
	warm(t, r) // fails unless the token request and the call kept their credentials
	for _, req := range r.srv.Log() {
		if req.Header.Get("Authorization") == "" {
			t.Errorf("%s %s: no Authorization", req.Method, req.Path)
		}
		if got := req.Header.Get("X-Seen"); got != "" {
			t.Errorf("%s %s: the propagator read %q", req.Method, req.Path, got)
		}
		if got := req.Header.Get("Baggage"); got != "kept" {
			t.Errorf("%s %s: baggage %q, want the propagator's field sent", req.Method, req.Path, got)
		}
	}
}

// hostile is a propagator that tries to read and replace Authorization.
type hostile struct{}

func (hostile) Inject(_ context.Context, c propagation.TextMapCarrier) {
	c.Set("X-Seen", c.Get("Authorization"))
	c.Set("Authorization", "Bearer stolen")
	c.Set("Baggage", "kept")
}
func (hostile) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context { return ctx }
func (hostile) Fields() []string                                                          { return []string{"Authorization", "Baggage"} }

// noneOf fails if any of bad is in a span's name, attribute, event, link
// or status, or in a metric's attributes.
func noneOf(t *testing.T, spans []sdktrace.ReadOnlySpan, rm metricdata.ResourceMetrics, bad []string) {
	t.Helper()
	check := func(where, text string) {
		for _, b := range bad {
			if b != "" && strings.Contains(text, b) {
				t.Errorf("%s records %q: %s", where, b, text)
			}
		}
	}
	for _, s := range spans {
		check("span name", s.Name())
		check("span "+s.Name()+" status", s.Status().Description)
		for _, kv := range s.Attributes() {
			check("span "+s.Name(), string(kv.Key)+"="+kv.Value.String())
		}
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				check("event of "+s.Name(), string(kv.Key)+"="+kv.Value.String())
			}
		}
		for _, l := range s.Links() {
			for _, kv := range l.Attributes {
				check("link of "+s.Name(), string(kv.Key)+"="+kv.Value.String())
			}
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			}
			for _, set := range sets {
				for _, kv := range set.ToSlice() {
					check("metric "+m.Name, string(kv.Key)+"="+kv.Value.String())
				}
			}
		}
	}
}

// The tour: every call of examples/quickstart, and Authenticator checks.
func tour(t *testing.T, r *rig) (secrets []string) {
	t.Helper()
	ctx := t.Context()
	endUser := "Bearer " + r.srv.IssueEndUserToken("u-ada")
	for _, err := range r.client.Users.List(ctx, nil) {
		must(t, err)
	}
	for _, err := range r.client.Things.List(ctx, &management.ListOptions{OrderBy: management.OrderByUpdatedAt, Direction: management.Ascending}) {
		must(t, err)
	}
	r.srv.FailNext(managementtest.RouteGetUser, 1, 503, 0)
	_, err := r.client.Users.Get(ctx, "u-ada")
	must(t, err)
	if _, err := r.client.Users.Get(ctx, "no-such-user"); err == nil {
		t.Fatal("Users.Get(no-such-user) succeeded")
	}
	_, err = r.client.Things.Update(ctx, "thermo-0042", management.ThingUpdate{Name: management.Ptr("renamed")})
	must(t, err)
	_, _, err = r.client.Users.AssociateThing(ctx, "u-ada", management.NewAssociation{PhysicalID: "lamp-demo-1", Model: "LM-3", FirmwareVersion: "2.0.1"})
	must(t, err)
	must(t, r.client.Users.DisassociateThing(ctx, "u-ada", "lamp-demo-1"))
	for _, tok := range []string{endUser, "Bearer not-a-real-token"} {
		_, err := r.client.Authenticate(ctx, tok)
		must(t, err)
	}
	a := &management.Authenticator{Client: r.client}
	for _, header := range []string{endUser, endUser, ""} {
		req := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		_, _ = a.Check(req)
	}
	return []string{r.cfg.ClientSecret, endUser, strings.TrimPrefix(endUser, "Bearer "), "not-a-real-token"}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// By default, no id, token, secret or cursor anywhere; every span is an
// operation (INTERNAL) or a request (CLIENT) named by its route template.
func TestTourRecordsNoIDsByDefault(t *testing.T) {
	r := newRig(t, nil)
	secrets := tour(t, r)
	spans := r.spans.Ended()
	noneOf(t, spans, r.metrics(t), append(append(secrets, ids...), logCursors(r)...))
	for _, s := range spans {
		if k := s.SpanKind(); k != trace.SpanKindInternal && k != trace.SpanKindClient {
			t.Errorf("span %q: kind %v", s.Name(), k)
		}
		tmpl, _ := attrs(s.Attributes())["url.template"].(string)
		if s.Name() != attrs(s.Attributes())["http.request.method"].(string)+" "+tmpl {
			t.Errorf("span %q is not named {method} {url.template} (%q)", s.Name(), tmpl)
		}
	}
}

// logCursors are the query values of the requests the fake saw: the page
// cursors among them.
func logCursors(r *rig) []string {
	var vs []string
	for _, req := range r.srv.Log() {
		for name, values := range req.Query {
			if name == "page" {
				vs = append(vs, values...)
			}
		}
	}
	return vs
}

// WithPathValues: the ids on the operations, url.full as sent, the error
// text as the description; still no secret and no cursor.
func TestTourWithPathValues(t *testing.T) {
	r := newRig(t, nil, mgmtotel.WithPathValues())
	secrets := tour(t, r)
	spans := r.spans.Ended()
	noneOf(t, spans, r.metrics(t), append(secrets, logCursors(r)...))
	var found bool
	for _, root := range tree(spans) {
		s := root.span
		a := attrs(s.Attributes())
		switch {
		case s.Name() == "DELETE /users/{user_id}/associated_things/{physical_id}":
			found = true
			if a["management.user_id"] != "u-ada" || a["management.physical_id"] != "lamp-demo-1" {
				t.Errorf("DELETE operation attributes %v, want the ids", a)
			}
			full := attrs(root.children[0].span.Attributes())["url.full"]
			if want := r.url("/users/u-ada/associated_things/lamp-demo-1"); full != want {
				t.Errorf("DELETE url.full %v, want %s", full, want)
			}
		case a["http.response.status_code"] == int64(404):
			if !strings.Contains(s.Status().Description, "no-such-user") {
				t.Errorf("404 operation's status description %q, want the error text", s.Status().Description)
			}
		}
	}
	if !found {
		t.Error("no DELETE operation recorded")
	}
	rm := r.metrics(t)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, p := range h.DataPoints {
					for _, kv := range p.Attributes.ToSlice() {
						for _, id := range ids {
							if strings.Contains(kv.Value.String(), id) {
								t.Errorf("metric %s records %q with WithPathValues", m.Name, id)
							}
						}
					}
				}
			}
		}
	}
}

// The Authenticator's counters, and one duration per request.
func TestTourMetrics(t *testing.T) {
	r := newRig(t, nil)
	tour(t, r)
	rm := r.metrics(t)
	sums := map[string]int64{}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sums[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Count
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
	if diff := cmp.Diff(want, sums); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	var requests, operations uint64
	for _, s := range r.spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			requests++
		case trace.SpanKindInternal:
			operations++
		}
	}
	if counts["http.client.request.duration"] != requests || counts["management.client.operation.duration"] != operations {
		t.Errorf("durations: %d requests, %d operations; spans: %d CLIENT, %d INTERNAL",
			counts["http.client.request.duration"], counts["management.client.operation.duration"], requests, operations)
	}
	if sent := uint64(len(r.srv.Log())); requests != sent {
		t.Errorf("%d CLIENT spans, the fake saw %d requests", requests, sent)
	}
}
