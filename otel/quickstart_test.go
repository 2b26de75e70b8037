package otel_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestQuickstartTrace runs the calls of examples/quickstart against the
// fake and, with -v, prints the span trees and the metrics they left (the
// figures of the module's note). It checks that every request the fake saw
// has its CLIENT span under an INTERNAL one.
func TestQuickstartTrace(t *testing.T) {
	r := newRig(t, nil)
	tour(t, r)
	roots := tree(r.spans.Ended())
	clients := 0
	var walk func([]*node, bool)
	walk = func(ns []*node, underOperation bool) {
		for _, n := range ns {
			if n.span.SpanKind().String() == "client" {
				clients++
				if !underOperation || len(n.children) != 0 {
					t.Errorf("CLIENT span %q outside an operation, or with children", n.span.Name())
				}
			}
			walk(n.children, n.span.SpanKind().String() == "internal")
		}
	}
	walk(roots, false)
	if clients != len(r.srv.Log()) {
		t.Errorf("%d CLIENT spans, %d requests", clients, len(r.srv.Log()))
	}
	if testing.Verbose() {
		t.Logf("span trees:\n%s", render(roots))
		t.Logf("metrics:\n%s", renderMetrics(r.metrics(t)))
	}
}

// renderMetrics lists every point: name, attributes, and the value (sum)
// or count and sum (histogram).
func renderMetrics(rm metricdata.ResourceMetrics) string {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s %v = %d", m.Name, attrs(p.Attributes.ToSlice()), p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s %v count=%d sum=%.4fs", m.Name, attrs(p.Attributes.ToSlice()), p.Count, p.Sum))
				}
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
