package otel_test

// The snippets of declarations of the READMEs (the SDK's and this
// module's), exactly as they show them (the SDK's
// TestReadmeSnippetsAreExamples checks that), and the tests that run them.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
