package otel_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// prefix is where the rig's fake mounts the API: url.full carries it,
// url.template does not.
const prefix = "/api/v1"

// rig is a Client against managementtest, observed into the OpenTelemetry
// SDK's in-memory span recorder and manual reader.
type rig struct {
	srv    *managementtest.Server
	cfg    management.Config
	client *management.Client
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	host   string
	port   int
}

// newRig starts the fake (pages of one entry, two Users, two Things) and a
// Client observed by mgmtotel.New(opts...) with the rig's providers; wrap,
// when not nil, wraps the Client's RoundTripper.
func newRig(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper, opts ...mgmtotel.Option) *rig {
	t.Helper()
	srv := managementtest.NewServer(managementtest.WithPageSize(1), managementtest.WithPathPrefix(prefix))
	t.Cleanup(srv.Close)
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "thermo-0042", Name: "Hall thermostat", Model: "TH-2", FirmwareVersion: "1.4.0"}})
	srv.AddThing(management.ThingDetails{Thing: management.Thing{PhysicalID: "plug-7", Name: "Desk plug", Model: "PL-1", FirmwareVersion: "0.9.2"}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}, AssociatedThings: []management.AssociatedThing{{PhysicalID: "thermo-0042"}}})
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-anon-19"}, IsAnonymous: true})

	r := &rig{srv: srv, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r.host = u.Hostname()
	r.port, _ = strconv.Atoi(u.Port())
	opts = append([]mgmtotel.Option{
		mgmtotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))),
		mgmtotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))),
	}, opts...)
	r.cfg = srv.Config()
	r.cfg.RetryWaitMin, r.cfg.RetryWaitMax = 1e6, 2e6 // 1-2 ms
	if wrap != nil {
		hc := *r.cfg.HTTPClient
		hc.Transport = wrap(hc.Transport)
		r.cfg.HTTPClient = &hc
	}
	r.cfg.Observer = mgmtotel.New(opts...)
	if r.client, err = management.NewClient(r.cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

// url is url.full of path below the prefix.
func (r *rig) url(path string) string {
	return fmt.Sprintf("http://%s:%d%s%s", r.host, r.port, prefix, path)
}

// client returns the attributes of a CLIENT span of method and route that
// was sent to path (below the prefix) and answered status, plus extra.
func (r *rig) clientAttrs(method, route, path string, status int, extra ...attribute.KeyValue) map[string]any {
	m := map[string]any{
		"http.request.method":      method,
		"server.address":           r.host,
		"server.port":              int64(r.port),
		"url.template":             route,
		"url.full":                 r.url(path),
		"network.protocol.version": "1.1",
	}
	if status != 0 {
		m["http.response.status_code"] = int64(status)
	}
	if status >= 400 {
		m["error.type"] = strconv.Itoa(status)
	}
	for k, v := range attrs(extra) {
		m[k] = v
	}
	return m
}

// metrics collects the rig's metrics.
func (r *rig) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// attrs makes a map of attributes, for cmp.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// node is a span in a tree of spans, for assertions and printing.
type node struct {
	span     sdktrace.ReadOnlySpan
	children []*node
}

// tree arranges spans by parent, each level in start order.
func tree(spans []sdktrace.ReadOnlySpan) []*node {
	byID := map[trace.SpanID]*node{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = &node{span: s}
	}
	var roots []*node
	for _, s := range spans {
		n := byID[s.SpanContext().SpanID()]
		if p, ok := byID[s.Parent().SpanID()]; ok {
			p.children = append(p.children, n)
		} else {
			roots = append(roots, n)
		}
	}
	var order func([]*node)
	order = func(ns []*node) {
		slices.SortStableFunc(ns, func(a, b *node) int { return a.span.StartTime().Compare(b.span.StartTime()) })
		for _, n := range ns {
			order(n.children)
		}
	}
	order(roots)
	return roots
}

// shape is a tree as "name kind" lines indented by depth.
func shape(ns []*node) []string {
	var lines []string
	var walk func([]*node, string)
	walk = func(ns []*node, indent string) {
		for _, n := range ns {
			lines = append(lines, indent+n.span.Name()+" "+n.span.SpanKind().String())
			walk(n.children, indent+"  ")
		}
	}
	walk(ns, "")
	return lines
}

// render is a tree with every attribute, event and link, for the note.
func render(ns []*node) string {
	var b strings.Builder
	var walk func([]*node, string)
	walk = func(ns []*node, indent string) {
		for _, n := range ns {
			s := n.span
			fmt.Fprintf(&b, "%s%s [%s] %s", indent, s.Name(), s.SpanKind(), s.EndTime().Sub(s.StartTime()).Round(1e4))
			if s.Status().Code != 0 {
				fmt.Fprintf(&b, " status=%s", s.Status().Code)
			}
			b.WriteString("\n")
			for _, kv := range s.Attributes() {
				fmt.Fprintf(&b, "%s    %s=%s\n", indent, kv.Key, kv.Value.String())
			}
			for _, e := range s.Events() {
				fmt.Fprintf(&b, "%s    event %s %v\n", indent, e.Name, attrs(e.Attributes))
			}
			for _, l := range s.Links() {
				fmt.Fprintf(&b, "%s    link to span %s %v\n", indent, l.SpanContext.SpanID(), attrs(l.Attributes))
			}
			walk(n.children, indent+"  ")
		}
	}
	walk(ns, "")
	return b.String()
}

// refuseFirst is a RoundTripper that fails the first request whose path
// ends with suffix as a refused connection would, and sends the others.
type refuseFirst struct {
	base   http.RoundTripper
	suffix string
	mu     sync.Mutex
	done   bool
}

func (rt *refuseFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	refuse := !rt.done && strings.HasSuffix(req.URL.Path, rt.suffix)
	rt.done = rt.done || refuse
	rt.mu.Unlock()
	if refuse {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errConnRefused}
	}
	return rt.base.RoundTrip(req)
}

// errConnRefused is the error of a refused connection.
var errConnRefused = os.NewSyscallError("connect", syscall.ECONNREFUSED)
