package otel_test

// The snippets of declarations of the READMEs (the SDK's and this
// module's), exactly as they show them (the SDK's
// TestReadmeSnippetsAreExamples checks that), and the tests that run them.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// newTracedClient returns a Client whose operations are traced and measured
// through your OpenTelemetry providers (mgmtotel.New() alone uses the
// global ones).
func newTracedClient(cfg management.Config, tp trace.TracerProvider, mp metric.MeterProvider) (*management.Client, error) {
	cfg.Observer = mgmtotel.New(mgmtotel.WithTracerProvider(tp), mgmtotel.WithMeterProvider(mp))
	return management.NewClient(cfg)
}

// newClient returns a Client configured from the environment, traced and
// measured through the global TracerProvider and MeterProvider; pass yours
// with mgmtotel.WithTracerProvider(tp) and mgmtotel.WithMeterProvider(mp).
func newClient() (*management.Client, error) {
	cfg, err := management.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	cfg.Observer = mgmtotel.New()
	return management.NewClient(cfg)
}

// newClientWithTracing returns a Client whose spans go to w (os.Stdout, a
// file) through the OpenTelemetry SDK: batched, under your service's
// resource, each request carrying the W3C trace context of its span. Call
// shutdown before the program exits: it sends the spans still batched.
func newClientWithTracing(cfg management.Config, w io.Writer) (client *management.Client, shutdown func(context.Context) error, err error) {
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("device-admin"))),
	)
	cfg.Observer = mgmtotel.New(
		mgmtotel.WithTracerProvider(tp),
		mgmtotel.WithPropagators(propagation.TraceContext{}),
	)
	client, err = management.NewClient(cfg)
	if err != nil {
		_ = tp.Shutdown(context.Background())
		return nil, nil, err
	}
	return client, tp.Shutdown, nil
}

// readmeServer is the fake with one User, u-ada.
func readmeServer(t *testing.T) *managementtest.Server {
	srv := managementtest.NewServer()
	t.Cleanup(srv.Close)
	srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
	return srv
}

func spanNames(spans *tracetest.SpanRecorder) []string {
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	return names
}

var wantReadmeSpans = []string{"POST /auth/token", "POST /auth/token", "GET /users/{user_id}", "GET /users/{user_id}"}

func TestReadmeNewTracedClient(t *testing.T) {
	srv := readmeServer(t)
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	client, err := newTracedClient(srv.Config(),
		sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantReadmeSpans, spanNames(spans)); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found = found || m.Name == "http.client.request.duration"
		}
	}
	if !found {
		t.Errorf("the MeterProvider passed got no http.client.request.duration: %+v", rm.ScopeMetrics)
	}
}

func TestReadmeNewClient(t *testing.T) {
	srv := readmeServer(t)
	t.Setenv(management.EnvBaseURL, srv.URL)
	t.Setenv(management.EnvClientID, srv.ClientID)
	t.Setenv(management.EnvClientSecret, srv.ClientSecret)
	spans := tracetest.NewSpanRecorder()
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	t.Cleanup(func() { otel.SetTracerProvider(previous) })

	client, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantReadmeSpans, spanNames(spans)); diff != "" {
		t.Errorf("spans through the global TracerProvider (-want +got):\n%s", diff)
	}
}

// The wiring example writes every span, with the resource, once shut down;
// the requests carried the trace context.
func TestReadmeNewClientWithTracing(t *testing.T) {
	srv := readmeServer(t)
	var out bytes.Buffer
	client, shutdown, err := newClientWithTracing(srv.Config(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Users.Get(t.Context(), "u-ada"); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("spans written before shutdown: the batcher should hold them")
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	dec := json.NewDecoder(&out)
	for dec.More() {
		var span struct {
			Name     string
			Resource []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := dec.Decode(&span); err != nil {
			t.Fatal(err)
		}
		names = append(names, span.Name)
		service := ""
		for _, kv := range span.Resource {
			if kv.Key == "service.name" {
				service, _ = kv.Value.Value.(string)
			}
		}
		if service != "device-admin" {
			t.Errorf("span %q: service.name %q, want device-admin", span.Name, service)
		}
	}
	if diff := cmp.Diff(wantReadmeSpans, names); diff != "" {
		t.Errorf("spans written (-want +got):\n%s", diff)
	}
	for _, req := range srv.Log() {
		if req.Header.Get("Traceparent") == "" {
			t.Errorf("%s %s carried no traceparent", req.Method, req.Path)
		}
	}
}
