package otel_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A Client.Do is named by its method alone: its spans ("GET", no route
// template), and its measurements, which have no url.template; url.full
// has its path redacted whole and no query. With WithPathValues too, no
// path value is recorded: the SDK cannot tell one from a name.
func TestDoNamedByMethod(t *testing.T) {
	for _, opts := range [][]mgmtotel.Option{nil, {mgmtotel.WithPathValues()}} {
		r := newRig(t, nil, opts...)
		warm(t, r)
		before := r.metrics(t)
		r.srv.FailNext(managementtest.RouteGetUser, 1, http.StatusServiceUnavailable, 0)
		var user struct{ ID string }
		if err := r.client.Do(t.Context(), http.MethodGet, "/users/u-ada?expand=q-secret", nil, &user); err != nil || user.ID != "u-ada" {
			t.Fatalf("Do: %v, %+v", err, user)
		}
		root := one(t, r.spans.Ended())
		checkShape(t, root, []string{
			"GET internal",
			"  GET client",
			"  GET client",
		})
		op := attrs(root.span.Attributes())
		if wait, _ := op["management.retry_wait"].(float64); wait <= 0 {
			t.Errorf("retry_wait %v, want > 0", op["management.retry_wait"])
		}
		delete(op, "management.retry_wait")
		if diff := cmp.Diff(map[string]any{"http.request.method": "GET", "http.response.status_code": int64(200), "management.attempts": int64(2)}, op); diff != "" {
			t.Errorf("the operation's span (-want +got):\n%s", diff)
		}
		first := r.clientAttrs("GET", "", "/REDACTED", 503)
		delete(first, "url.template")
		checkSpan(t, root.children[0], first, codes.Error)
		text := render([]*node{root})
		for _, leak := range []string{"u-ada", "q-secret", "/users", "url.template"} {
			if strings.Contains(text, leak) {
				t.Errorf("the spans of a Do hold %q:\n%s", leak, text)
			}
		}

		// The measurements: by method and status, no route.
		rm := r.metrics(t)
		got := map[string][]map[string]any{}
		for _, name := range []string{"http.client.request.duration", "management.client.operation.duration", "management.client.retries"} {
			for _, m := range find(rm, name) {
				for _, a := range points(m, find(before, name)) {
					if a["http.request.method"] == "GET" {
						got[name] = append(got[name], a)
					}
				}
			}
		}
		want := map[string][]map[string]any{
			"http.client.request.duration": {
				r.metricAttrs("GET", "", 200), r.metricAttrs("GET", "", 503),
			},
			"management.client.operation.duration": {{"http.request.method": "GET", "http.response.status_code": int64(200)}},
			"management.client.retries":            {{"http.request.method": "GET", "management.resend.reason": "retry", "http.response.status_code": int64(503)}},
		}
		for _, m := range want["http.client.request.duration"] {
			delete(m, "url.template")
		}
		sortPoints := cmp.Transformer("sort", func(ps []map[string]any) map[any]map[string]any {
			out := map[any]map[string]any{}
			for _, p := range ps {
				out[p["http.response.status_code"]] = p
			}
			return out
		})
		if diff := cmp.Diff(want, got, sortPoints); diff != "" {
			t.Errorf("the measurements of a Do (-want +got):\n%s", diff)
		}
	}
}

// A POST and a PATCH of Do are named "POST" and "PATCH".
func TestDoNamedByMethodWrites(t *testing.T) {
	r := newRig(t, nil)
	warm(t, r)
	if err := r.client.Do(t.Context(), http.MethodPost, "/users/u-ada/associated_things", map[string]string{"physical_id": "lamp-demo-1", "model": "LA-1", "firmware_version": "1.0"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.client.Do(t.Context(), http.MethodPatch, "/things/plug-7", map[string]string{"name": "Desk"}, nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range tree(r.spans.Ended()) {
		names = append(names, shape([]*node{n})...)
	}
	want := []string{"POST internal", "  POST client", "PATCH internal", "  PATCH client"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// points returns the attributes of m's points that measured something
// since before (the reader is cumulative).
func points(m metricdata.Metrics, before []metricdata.Metrics) []map[string]any {
	seen := map[attribute.Distinct]uint64{}
	for _, b := range before {
		if h, ok := b.Data.(metricdata.Histogram[float64]); ok {
			for _, p := range h.DataPoints {
				seen[p.Attributes.Equivalent()] = p.Count
			}
		}
		if s, ok := b.Data.(metricdata.Sum[int64]); ok {
			for _, p := range s.DataPoints {
				seen[p.Attributes.Equivalent()] = uint64(p.Value)
			}
		}
	}
	var out []map[string]any
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if p.Count > seen[p.Attributes.Equivalent()] {
				out = append(out, attrs(p.Attributes.ToSlice()))
			}
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if uint64(p.Value) > seen[p.Attributes.Equivalent()] {
				out = append(out, attrs(p.Attributes.ToSlice()))
			}
		}
	}
	return out
}
