package otel_test

import (
	"testing"

	"github.com/serviceconnect/management"
	"github.com/serviceconnect/management/managementtest"
	mgmtotel "github.com/serviceconnect/management/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkUsersGet measures a warm Users.Get against the fake over
// loopback, without an Observer and with this module's recording into the
// OpenTelemetry SDK (every span sampled, no exporter; metrics aggregated by
// a manual reader; the W3C propagator): the difference is the module's
// cost per call, two spans, three measurements and a traceparent.
func BenchmarkUsersGet(b *testing.B) {
	for _, bc := range []struct {
		name string
		obs  func() *management.Observer
	}{
		{"observer=none", func() *management.Observer { return nil }},
		{"observer=otel", func() *management.Observer {
			return mgmtotel.New(mgmtotel.WithTracerProvider(sdktrace.NewTracerProvider()),
				mgmtotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))),
				mgmtotel.WithPropagators(propagation.TraceContext{}))
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := managementtest.NewServer()
			defer srv.Close()
			srv.AddUser(management.UserDetails{User: management.User{ID: "u-ada"}})
			cfg := srv.Config()
			cfg.Observer = bc.obs()
			c, err := management.NewClient(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if _, err := c.Users.Get(ctx, "u-ada"); err != nil { // the token
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Users.Get(ctx, "u-ada"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
